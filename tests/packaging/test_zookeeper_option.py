"""-Dzookeeper at configure time (docs/tls.md): the summary names the client
and what it can (TLS, SASL); `system` configures against Debian's
libzookeeper-mt, without TLS; `bundled` with nothing cached and no way to
fetch stops and says why and what to do instead. Configure only: the
builds themselves are build/ (auto, so bundled here) and the Debian
packages (system)."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOBIND = ["-Dtests=false", "-Dlua=disabled", "-Djava=disabled", "-Dgo=disabled",
          "-Dluajit=disabled", "-Dpython=disabled"]


def _setup(tmp_path, *options, env=None):
    try:
        proc = subprocess.run([shutil.which("meson"), "setup", str(tmp_path / "b"), str(REPO),
                               *NOBIND, *options], capture_output=True, text=True, timeout=300,
                              env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("meson setup did not finish in 300 s", pytrace=False)
    return proc, proc.stdout + proc.stderr


def _summary(out):
    m = re.search(r"ZooKeeper client \(-Dzookeeper=(\w+)\)\n\s*client\s*: (.*)\n"
                  r"\s*TLS \(zookeeper_init_ssl\)\s*: (\w+)\n\s*SASL \(zookeeper_init_sasl\)\s*: (\w+)",
                  out)
    assert m, out[-3000:]
    return m.groups()


def test_default_bundles_the_client_with_tls_and_sasl_on_debian_12(tmp_path):
    proc, out = _setup(tmp_path)
    assert proc.returncode == 0, out[-3000:]
    choice, client, tls, sasl = _summary(out)
    assert choice == "auto" and client.startswith("bundled 3.8.0"), out[-3000:]
    assert (tls, sasl) == ("True", "True")


def test_system_configures_against_debians_client_without_tls(tmp_path):
    proc, out = _setup(tmp_path, "-Dzookeeper=system")
    assert proc.returncode == 0, out[-3000:]
    choice, client, tls, sasl = _summary(out)
    assert (choice, client, tls, sasl) == ("system", "system libzookeeper-mt", "False", "False")


def test_bundled_without_source_or_deb_src_says_what_to_do(tmp_path):
    # An empty cache, and an apt that knows no deb-src line.
    apt = tmp_path / "apt"
    (apt / "parts").mkdir(parents=True)
    (apt / "lists").mkdir()
    (apt / "apt.conf").write_text(f'Dir::Etc::sourceparts "{apt}/parts";\n'
                                  'Dir::Etc::sourcelist "/dev/null";\n'
                                  f'Dir::State::lists "{apt}/lists";\n')
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), APT_CONFIG=str(apt / "apt.conf"))
    proc, out = _setup(tmp_path, "-Dzookeeper=bundled", env=env)
    assert proc.returncode != 0, out[-3000:]
    assert "deb-src" in out and "-Dzookeeper=system" in out, out[-3000:]

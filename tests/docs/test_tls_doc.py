"""docs/tls.md's commands that make a test keystore, truststore and PEM
certificate, run as written (bash -eu, an environment without PW) in an
empty folder."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run_block(tmp_path, marker):
    """Runs docs/tls.md's one sh block that contains marker, as written,
    in tmp_path (without $PW from the caller's environment)."""
    text = (ROOT / "docs" / "tls.md").read_text()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if marker in b]
    assert len(blocks) == 1, f"docs/tls.md: no single sh block with {marker}"
    env = {k: v for k, v in os.environ.items() if k != "PW"}
    r = subprocess.run(["bash", "-eu", "-c", blocks[0]], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}:\n{r.stdout}\n{r.stderr}"


def test_the_keystore_commands_run_as_written(tmp_path):
    if shutil.which("keytool") is None or shutil.which("openssl") is None:
        pytest.fail("keytool and openssl are needed (Debian: default-jdk-headless, openssl)",
                    pytrace=False)
    _run_block(tmp_path, "keytool -genkeypair")
    for f in ("server.p12", "server.pem", "trust.p12"):
        assert (tmp_path / f).stat().st_size > 0, f
    assert "BEGIN CERTIFICATE" in (tmp_path / "server.pem").read_text()


def test_the_native_tls_certificate_commands_run_as_written(tmp_path):
    """The CA, server keystore, truststore and client certificate of the
    native set-up: made as written, and the client's certificate verifies
    against the CA (what the servers' truststore will ask)."""
    _run_block(tmp_path, "openssl pkcs12 -export")
    for f in ("server.p12", "trust.p12", "client.pem", "client.key", "ca.pem"):
        assert (tmp_path / f).stat().st_size > 0, f
    # The server's certificate names the addresses clients connect by, so a
    # test host on 127.0.0.1 passes the name check.
    text = subprocess.run(["openssl", "x509", "-in", "zk1.pem", "-noout", "-ext",
                           "subjectAltName"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60).stdout
    assert "DNS:zk1.example" in text and "IP Address:127.0.0.1" in text, text
    for cert in ("client.pem", "zk1.pem"):
        v = subprocess.run(["openssl", "verify", "-CAfile", "ca.pem", cert], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
        assert v.returncode == 0, v.stdout + v.stderr

"""Fixtures shared by the fault scenarios (tests/fault/*.py).

kz, proxies         (tests/conftest.py) a kazoo client; fault proxies in front of the ensemble
spawn               spawn(hosts, path, first_id, timeout_ms, **kw) -> Candidate
                    (closed and killed at the end of the test)
paused_leader_bin   tests/fault/paused_leader.c built with cc + pkg-config
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from candidates import Candidate

HERE = Path(__file__).resolve().parent


@pytest.fixture
def spawn(zkelect_bin, test_env, tmp_path):
    made = []

    def make(hosts, path, first_id, timeout_ms, **kw):
        c = Candidate(zkelect_bin, hosts, path, first_id, timeout_ms, test_env,
                      log_dir=str(tmp_path), **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
        c.kill()


@pytest.fixture(scope="session")
def paused_leader_bin(build_dir, tmp_path_factory):
    """The in-process is_leader prober, built against the uninstalled library
    the way a user builds against an installed one (pkg-config)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc) to build tests/fault/paused_leader.c", pytrace=False)
    env = dict(os.environ)
    pc = str(build_dir / "meson-uninstalled")
    env["PKG_CONFIG_PATH"] = pc + (os.pathsep + env["PKG_CONFIG_PATH"]
                                   if env.get("PKG_CONFIG_PATH") else "")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libzkelect"], env=env,
                           capture_output=True, text=True)
    assert flags.returncode == 0, f"pkg-config libzkelect: {flags.stderr}"
    out = tmp_path_factory.mktemp("faultbin") / "paused_leader"
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-o", str(out),
                        str(HERE / "paused_leader.c"), *flags.stdout.split(), "-lpthread"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"building paused_leader.c failed:\n{r.stderr}"
    return out

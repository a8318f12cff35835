"""Shared pytest set-up: a real ZooKeeper ensemble and the build's paths.

Fixtures:
  zk              session-wide 3-server Ensemble (tests/bed/zkbed.py); a server
                  a test left stopped or paused is brought back before the
                  next test (tests that break the quorum: fresh_ensemble)
  fresh_ensemble  factory: fresh_ensemble(n=3, tick_ms=200) -> started Ensemble
                  of the test's own (stop its quorum at will); always stopped
  zk_path         a fresh, unique, not yet existing path: /t/<test name>-<n>
  build_dir       Path of the meson build (env ZKELECT_BUILD_DIR, else ./build)
  zkelect_bin     build_dir/tools/zkelect (the test fails when it is missing)
  test_env        os.environ plus ZKELECT_TEST_HOSTS, ZKELECT_BUILD_DIR,
                  PKG_CONFIG_PATH, LD_LIBRARY_PATH of the contract, and
                  ZKBED_DIR / ZKBED_CLI so a child process can restart servers:
                  python3 $ZKBED_CLI stop-server --dir $ZKBED_DIR --index 1
"""

import itertools
import os
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
BED = TESTS / "bed"

from bed.zkbed import Ensemble  # noqa: E402

_shared = None
_path_counter = itertools.count(1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Under ./dev test (ZKELECT_NO_SKIP=1) a skip is a failure: "all suites
    # passed" must not hide a suite that did not run.
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and not hasattr(rep, "wasxfail") and os.environ.get("ZKELECT_NO_SKIP") == "1":
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"skipped, and ZKELECT_NO_SKIP=1 (./dev test) forbids skips: {reason}"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
    config.addinivalue_line("markers", "fault: injects failures (kills servers, cuts connections)")


@pytest.fixture(scope="session")
def zk():
    global _shared
    ens = Ensemble(n=3, tick_ms=200)
    ens.start()
    _shared = ens
    try:
        yield ens
    finally:
        _shared = None
        ens.stop()


@pytest.fixture(autouse=True)
def _heal_shared_ensemble():
    # Only a check of /proc when nothing is wrong; does not start the
    # ensemble for tests that never asked for it.
    if _shared is not None:
        _shared.heal()
    yield


@pytest.fixture
def fresh_ensemble():
    made = []

    def make(n=3, tick_ms=200, **kw):
        ens = Ensemble(n=n, tick_ms=tick_ms, **kw)
        made.append(ens)
        ens.start()
        return ens

    try:
        yield make
    finally:
        for ens in made:
            ens.stop()


@pytest.fixture
def zk_path(request):
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_.")[:80] or "test"
    return f"/t/{name}-{next(_path_counter)}"


@pytest.fixture(scope="session")
def build_dir():
    d = os.environ.get("ZKELECT_BUILD_DIR")
    return Path(d).resolve() if d else REPO / "build"


@pytest.fixture(scope="session")
def zkelect_bin(build_dir):
    b = build_dir / "tools" / "zkelect"
    if not (b.is_file() and os.access(b, os.X_OK)):
        pytest.fail(f"{b} is missing: build it first (./dev build, or ninja -C {build_dir})",
                    pytrace=False)
    return b


def _prepend(value, old):
    return value + (os.pathsep + old if old else "")


@pytest.fixture
def test_env(zk, build_dir):
    env = dict(os.environ)
    env["ZKELECT_TEST_HOSTS"] = zk.connect_string
    env["ZKELECT_BUILD_DIR"] = str(build_dir)
    env["PKG_CONFIG_PATH"] = _prepend(str(build_dir / "meson-uninstalled"), env.get("PKG_CONFIG_PATH"))
    env["LD_LIBRARY_PATH"] = _prepend(str(build_dir / "capi"), env.get("LD_LIBRARY_PATH"))
    env["ZKBED_DIR"] = zk.base_dir
    env["ZKBED_CLI"] = str(BED / "zkbed.py")
    return env


@pytest.fixture
def kz(zk):
    """A kazoo client on the shared ensemble (direct, no proxy)."""
    from kazoo.client import KazooClient
    c = KazooClient(hosts=zk.connect_string, timeout=4.0)
    c.start(timeout=10)
    yield c
    c.stop()
    c.close()


@pytest.fixture
def proxies(zk):
    """A ProxiedEnsemble (tests/bed/faultproxy.py) in front of the shared ensemble."""
    from bed.faultproxy import ProxiedEnsemble
    pe = ProxiedEnsemble([zk.client_port(i) for i in range(zk.n)])
    yield pe
    pe.close()

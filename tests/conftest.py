"""Shared pytest set-up: a real ZooKeeper ensemble and the build's paths.

Fixtures:
  zk              session-wide 3-server Ensemble (tests/bed/zkbed.py) of the
                  test's server version (zk_version); a server a test left
                  stopped or paused is brought back before the next test
                  (tests that break the quorum: fresh_ensemble)
  fresh_ensemble  factory: fresh_ensemble(n=3, tick_ms=200) -> started Ensemble
                  of the test's own (stop its quorum at will), of the test's
                  server version; always stopped
  zk_version      the ZooKeeper server version of this test: the run's
                  ($ZKELECT_ZK_VERSION, default "debian", Debian's 3.8.0), or
                  one of the "also" versions for a test marked zk_versions
  zk_path         a fresh, unique, not yet existing path: /t/<test name>-<n>
  api, handles    the C API through ctypes (bed/zkc.py) and what a test made
                  with it, freed after the test
  build_dir       Path of the meson build (env ZKELECT_BUILD_DIR, else ./build)
  zkelect_bin     build_dir/tools/zkelect (the test fails when it is missing)
  test_env        os.environ plus ZKELECT_TEST_HOSTS, ZKELECT_BUILD_DIR,
                  PKG_CONFIG_PATH, LD_LIBRARY_PATH of the contract, and
                  ZKBED_DIR / ZKBED_CLI so a child process can restart servers:
                  python3 $ZKBED_CLI stop-server --dir $ZKBED_DIR --index 1
                  (and ZKELECT_ZK_VERSION: the version of zk)

Server versions. A test marked `@pytest.mark.zk_versions` runs once against
the run's version and once against each "also" version: by default, when
the run's version is Debian's, the newest 3.9 (bed/zkdist.py NEWEST);
$ZKELECT_ZK_ALSO="3.9.5,3.7.2" names others, "" none. Such a test must
take zk or fresh_ensemble (directly or through test_env, kz, proxies,
spawn...): its ensemble is where the version goes. The runs against an "also"
version come at the end of the session, one version after another, on their
own shared ensemble. `./dev test --zk-matrix` instead runs whole suites once
per version, each in a pytest process of its own with $ZKELECT_ZK_VERSION.
"""

import itertools
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
BED = TESTS / "bed"

from bed import workers, zkdist  # noqa: E402
from bed.zkbed import Ensemble  # noqa: E402

# The crash guard every client starts (crash.guard "auto" by default) is the
# build tree's, not an installed one; test programs inherit this.
os.environ.setdefault("ZKELECT_GUARD", str(
    Path(os.environ.get("ZKELECT_BUILD_DIR") or REPO / "build").resolve() / "guard" / "zkelect-guard"))

_shared = {}                 # server version -> the session's Ensemble of it
RUN_VERSION = zkdist.default_version()
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


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker("zk_versions") is None:
        return
    if "zk_version" not in metafunc.fixturenames:
        raise pytest.UsageError(f"{metafunc.definition.nodeid} is marked zk_versions but takes "
                                "no ensemble fixture (zk, fresh_ensemble)")
    versions = [RUN_VERSION] + zkdist.also_versions()
    if len(versions) > 1:
        metafunc.parametrize("zk_version", versions, indirect=True,
                             ids=[f"zk-{v}" for v in versions])


def _item_version(item):
    cs = getattr(item, "callspec", None)
    return cs.params.get("zk_version", RUN_VERSION) if cs is not None else RUN_VERSION


def pytest_collection_modifyitems(session, config, items):
    # The runs against another server version last, grouped by version, so
    # one shared ensemble runs at a time (_shared_ensemble). Before them,
    # the longest units of work first (bed/workers.py: under -n the last
    # unit a worker takes is a short one).
    # In one process (./dev test's default) the order is the files' own.
    order = {v: k for k, v in enumerate([RUN_VERSION] + zkdist.also_versions())}
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda it: (order.get(_item_version(it), len(order)),
                                   workers.rank(it.nodeid, RUN_VERSION)))    # stable
    else:
        items.sort(key=lambda it: order.get(_item_version(it), len(order)))    # stable


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    # Under -n (./dev test): whole modules and groups of them to a worker
    # (bed/workers.py says which and why), whatever --dist says.
    return workers.make_scheduler(config, log, RUN_VERSION)


@pytest.fixture
def zk_version(request):
    return getattr(request, "param", RUN_VERSION)


def _shared_ensemble(version):
    ens = _shared.get(version)
    if ens is None:
        # One shared ensemble at a time: the tests of a version come
        # together (pytest_collection_modifyitems), so the one of the
        # version before is done with.
        for v in list(_shared):
            _shared.pop(v).stop()
        ens = Ensemble(n=3, tick_ms=200, version=version)
        ens.start()
        _shared[version] = ens
    return ens


@pytest.fixture(scope="session")
def _shared_ensembles():
    try:
        yield _shared
    finally:
        for v in list(_shared):
            _shared.pop(v).stop()


@pytest.fixture
def zk(_shared_ensembles, zk_version):
    """The session's ensemble of the test's server version (started on
    first use, stopped at the end of the session)."""
    return _shared_ensemble(zk_version)


@pytest.fixture(autouse=True)
def _heal_shared_ensemble():
    # Only a check of /proc when nothing is wrong; does not start an
    # ensemble for tests that never asked for it.
    for ens in list(_shared.values()):
        ens.heal()
    yield


@pytest.fixture
def fresh_ensemble(zk_version):
    made = []

    def make(n=3, tick_ms=200, **kw):
        kw.setdefault("version", zk_version)
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
    env["ZKELECT_ZK_VERSION"] = zk.version
    return env


@pytest.fixture(scope="session")
def crosslang_built(build_dir, tmp_path_factory):
    """get(env, names=ORDER): the cross-language candidates (bed/crosslang.py),
    each language built once for the whole run: the plain-TCP election
    (tests/bindings) and the TLS + SASL one (tests/sasl) share them."""
    from bed import crosslang
    return crosslang.session_builds(build_dir, tmp_path_factory.mktemp("crosslang"))


@pytest.fixture(scope="module")
def api(build_dir):
    """zkc.Api (tests/bed/zkc.py) over the tested build's libzkelect: the C API
    through ctypes, one per module (a module may define its own)."""
    from bed import zkc
    return zkc.Api(build_dir)


@pytest.fixture
def handles(api):
    """{"e": [...], "o": [...], "c": [...]}: what a test made through api,
    freed after it (elections, observers, clients, in that order)."""
    from bed import zkc
    yield from zkc.handles_fixture(api)


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


@pytest.fixture(scope="session")
def paused_leader_bin(build_dir, tmp_path_factory):
    """The in-process is_leader prober (tests/fault/paused_leader.c; the
    fault suite and the TLS + SASL one in tests/sasl use it), built against
    the uninstalled library the way a user builds against an installed one
    (pkg-config)."""
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
                        str(TESTS / "fault" / "paused_leader.c"), *flags.stdout.split(), "-lpthread"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"building paused_leader.c failed:\n{r.stderr}"
    return out

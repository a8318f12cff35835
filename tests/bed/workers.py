"""How `./dev test` shares the tests among pytest-xdist workers (`-n N`).

Most tests wait on ZooKeeper sessions and timeouts rather than burn CPU, so
a few processes side by side nearly divide the run's time by their number
(issue 53). Each worker is a pytest of its own: its own shared ensemble
(tests/conftest.py `zk`), its own temporary folders; ports are reserved
machine-wide (bed/zkbed.py free_ports). What the workers share is handed
out whole, as one unit of work, to one worker, in collection order:

- a module (its module-scoped fixtures are made once);
- a GROUP below: modules that write the same files outside their
  temporary folders, or install system packages, or that burn CPU or time
  themselves and must not run against each other;
- a module's runs against an "also" server version (tests marked
  zk_versions), after every run against the run's own version, so a worker
  stops its shared ensemble of one version once (conftest `_shared_ensemble`).

`pytest_collection_modifyitems` (tests/conftest.py) sorts the groups first,
the longest units before the short ones, so the last to finish is short.
Without -n none of this applies and the order is the same.
"""

import re

# Each group: its name and the modules (paths under tests/) in it. Order
# here is the order of the groups in the run, first the longest.
GROUPS = [
    # CPU-bound or time-measuring: the simulator's seeds (one core for
    # tens of seconds), the real explorer and the soaks (many processes,
    # checked against wall-clock bounds), the cost and scale measurements.
    # One at a time on one worker, beside the waiting tests of the others.
    ("heavy", [
        "explore/test_explore.py",
        "fault/test_churn.py",
        "fault/test_churn_inproc.py",
        "fault/test_pause_soak.py",
        "sim/test_sim.py",
        "integration/test_scale_memory.py",
        "integration/test_join_line.py",
        "integration/test_idle_cost.py",
        "integration/test_idle_follower_cost.py",
        "hostile/test_many_children.py",
        # Four processes of a balanced group, each sampling every handle.
        "integration/test_balance.py",
    ]),
    # Java's and Lua's build.sh write <build>/script-bindings/{java,lua}
    # (rm -rf, then build) and the cross-language candidates run from
    # there: every module that builds or runs them, on one worker.
    ("script-bindings", [
        "bindings/test_crosslang.py",
        "sasl/test_secure_ensemble.py",
        "bindings/test_java.py",
        "bindings/test_lua.py",
    ]),
    # Installing the .debs machine-wide (test_installed_debs.py), `meson
    # install` of the build tree, cargo's package folder in the build tree.
    ("packaging", [
        "packaging/test_installed_debs.py",
        "packaging/test_source_install.py",
        "bindings/test_pkgconfig.py",
        "packaging/test_rust_crates.py",
        "packaging/test_lua_rock.py",
        "packaging/test_debian_symbols.py",
        "packaging/test_go_layer.py",
        "packaging/test_meson_options.py",
        "packaging/test_zookeeper_option.py",
        "packaging/test_python_package.py",
    ]),
]

_GROUP_OF = {module: name for name, modules in GROUPS for module in modules}
_RANK = {name: k for k, (name, _) in enumerate(GROUPS)}
# The server version in a zk_versions test's id: [zk-3.9.5], [zk-debian-curator-5.9.0].
_VERSION = re.compile(r"[\[-]zk-([^\]-]+)")


def unit(nodeid, run_version):
    """The unit of work a test belongs to (a worker runs a unit whole)."""
    path, _, name = nodeid.partition("::")
    module = path.removeprefix("tests/")
    m = _VERSION.search(name)
    if m and m.group(1) != run_version:
        return f"zk-{m.group(1)}:{module}"
    return _GROUP_OF.get(module, module)


def rank(nodeid, run_version):
    """Sort key among the run's own version's tests: the groups first (in
    GROUPS' order: the longest units), then the fault suite's modules (the
    longest of the rest), then the others."""
    u = unit(nodeid, run_version)
    if u in _RANK:
        return (0, _RANK[u])
    return (1, 0) if u.startswith("fault/") else (2, 0)


def make_scheduler(config, log, run_version):
    """A LoadScopeScheduling whose scopes are unit()'s."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return unit(nodeid, run_version)

    return UnitScheduling(config, log)

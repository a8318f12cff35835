"""The Lua suites' drivers (tests/bindings/test_lua.py, test_luajit.py):
both back ends run the one layer's tests (bindings/luajit/layer_tests.lua)
and add their own; each prints "ok NAME" per test and "passed N/M"."""

import re

# The layer's tests every back end must pass by name (layer_tests.lua).
LAYER_TESTS = [
    "errors carry code, name and message",
    "an unknown option is an error, dotted or not",
    "every configuration key the library knows has its option name",
    "is_error tells a zkelect error from any other value",
    "three electors elect exactly one",
    "resign fails over in queue order",
    "transfer hands over to the named candidate",
    "fenced writes commit only while leading",
    "a transfer asked from outside",
    "events come in order",
    "close releases the node",
    "gc resigns at once and frees at the next call",
    "a collected follower leaves the queue and the next in line leads",
    "observer reports the leader",
    "closing an elector's own client closes both, without an error",
    "timeouts accept any number and saturate",
    "stats of an elector and its client",
]


def passes(run, argv, env, own):
    """Run a suite; every test passed, the layer's and the back end's own."""
    proc = run(argv, env)
    out = proc.stdout + "\n" + proc.stderr
    assert proc.returncode == 0, f"{argv[0]} tests failed (exit {proc.returncode}):\n{out}"
    m = re.search(r"passed (\d+)/(\d+)", out)
    names = LAYER_TESTS + own
    assert m and m.group(1) == m.group(2) and int(m.group(2)) >= len(names), out
    for name in names:
        assert f"ok {name}\n" in proc.stdout, f"{name} did not pass:\n{out}"


def refuses_without_an_ensemble(run, argv, env):
    env = dict(env)
    env.pop("ZKELECT_TEST_HOSTS", None)
    proc = run(argv, env)
    assert proc.returncode != 0, proc.stdout
    assert "ZKELECT_TEST_HOSTS is not set" in proc.stderr, proc.stderr

"""Runs the C API GoogleTest programs (tests/capi) against the shared real
ensemble: from the normal build, and again from the AddressSanitizer+UBSan
(build-asan) and ThreadSanitizer (build-tsan) builds that ./dev test makes
(ZKELECT_ASAN_BUILD_DIR / ZKELECT_TSAN_BUILD_DIR, else beside the tested
build). A sanitizer report fails the test like a failed assertion, and so
does a case that did not run (tests/bed/gtestrun.py). A missing sanitizer build
is a skip when run by hand and a failure under ./dev test, which sets
ZKELECT_REQUIRE_SANITIZERS=1.

After every run, a separate ZooKeeper client (kazoo) checks what the program
left under its root: no node for a path the library was told to refuse
(those carry "never" in their name, and every one of them lies under the
root). A candidate node left by a destroyed handle cannot be seen from here:
the program's sessions closed when it exited, and ZooKeeper removed their
ephemeral nodes with them; only a check inside the program, while its client
lives, can see one.
"""

import os
import subprocess
import time
from pathlib import Path

import pytest

from bed import gtestrun

HERE = Path(__file__).resolve().parent

SUPPRESSIONS = HERE.parent / "capi" / "tsan.supp"

PROGRAMS = ["capi-election", "capi-safety", "capi-delivery", "capi-badinput"]
FLAVORS = ["plain", "asan", "tsan"]

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "WARNING: ThreadSanitizer", "ThreadSanitizer:", "UndefinedBehaviorSanitizer")


def _flavor_dir(build_dir, flavor):
    if flavor == "plain":
        return build_dir
    given = os.environ.get(f"ZKELECT_{flavor.upper()}_BUILD_DIR")
    return Path(given).resolve() if given else build_dir.parent / f"build-{flavor}"


def _env(test_env, build, flavor, root):
    env = dict(test_env)
    env["ZKELECT_TEST_ROOT"] = root
    env["ZKELECT_BUILD_DIR"] = str(build)
    # The sanitized program must load the sanitized library, not the plain one.
    rest = [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
            if p and not p.endswith("/capi")]
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(build / "capi")] + rest)
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    tsan = "halt_on_error=1:second_deadlock_stack=1"
    if SUPPRESSIONS.is_file():
        tsan += f":suppressions={SUPPRESSIONS}"
    env["TSAN_OPTIONS"] = tsan
    return env


def _leftovers(hosts, root):
    """(candidate nodes left, 'never' paths that exist) under root."""
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=15)
    try:
        zk.sync(root)
        if not zk.exists(root):
            return [], []
        nodes, never = [], []
        stack = [root]
        for _ in range(100000):
            if not stack:
                break
            p = stack.pop()
            for c in zk.get_children(p):
                full = f"{p}/{c}"
                if "never" in c:
                    never.append(full)
                _, st = zk.get(full)
                if st.ephemeralOwner:
                    nodes.append(full)
                else:
                    stack.append(full)
        return nodes, never
    finally:
        zk.stop()
        zk.close()


def run_program(prog, flavor, build_dir, test_env, root, timeout=150, subdir="capi"):
    build = _flavor_dir(build_dir, flavor)
    exe = build / "tests" / subdir / prog
    if flavor != "plain" and not (build / "build.ninja").is_file():
        if os.environ.get("ZKELECT_REQUIRE_SANITIZERS") == "1":
            pytest.fail(f"{build} is not configured, and ZKELECT_REQUIRE_SANITIZERS=1 "
                        "(./dev test) says the sanitizer runs must happen", pytrace=False)
        pytest.skip(f"{build} is not configured (./dev test builds it)")
    if not exe.is_file():
        pytest.fail(f"{exe} is missing: build it (ninja -C {build}); tests/meson.build must "
                    "have subdir('capi')", pytrace=False)
    env = _env(test_env, build, flavor, root)
    t0 = time.monotonic()
    try:
        r, not_run = gtestrun.run(exe, env, ["--gtest_brief=1"], timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"")[-6000:]
        pytest.fail(f"{prog} ({flavor}) did not finish within {timeout} s:\n{out}", pytrace=False)
    took = time.monotonic() - t0
    out = r.stdout + r.stderr
    reports = [m for m in SANITIZER_MARKERS if m in out]
    if r.returncode != 0 or reports:
        pytest.fail(f"{prog} ({flavor}) exited {r.returncode} after {took:.1f} s"
                    f"{'; sanitizer report: ' + ', '.join(reports) if reports else ''}\n"
                    f"{out[-12000:]}", pytrace=False)
    if not_run:
        pytest.fail(f"{prog} ({flavor}) exited 0, but not every case ran: {not_run}",
                    pytrace=False)
    print(f"{prog} ({flavor}): passed in {took:.1f} s")
    for line in out.splitlines():
        if line.startswith(("N=", "fencing tokens", "blocked next_event")):
            print("  " + line)
    return out


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("prog", PROGRAMS)
def test_capi_program(prog, flavor, build_dir, test_env, zk, zk_path):
    run_program(prog, flavor, build_dir, test_env, zk_path)
    _, never = _leftovers(zk.connect_string, zk_path)
    assert not never, f"{prog} ({flavor}) created paths it should have refused: {never}"


def test_capi_program_refuses_to_run_without_hosts(build_dir, test_env):
    exe = build_dir / "tests" / "capi" / "capi-election"
    if not exe.is_file():
        pytest.fail(f"{exe} is missing", pytrace=False)
    env = dict(test_env)
    env.pop("ZKELECT_TEST_HOSTS", None)
    r = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "ZKELECT_TEST_HOSTS" in r.stderr, r.stderr

#!/usr/bin/python3
"""Mutation runs: does the test suite notice when a safety rule is broken?

For each mutation the engine offers (meson option -Dmutation=NAME, test only;
meson_options.txt lists them), this builds a throwaway tree build-mut-NAME
beside the normal build, runs a chosen set of tests against it (the suites
find the build through ZKELECT_BUILD_DIR), and prints which tests failed
under which mutation. Every mutation must be caught by at least one test;
the exit status is 1 when one was not (or when the baseline, the unmutated
build, fails: a test that fails anyway proves nothing).

    tests/mutation/run.py [--mutation NAME ...] [--tests PYTEST_ARGS] [--no-baseline]
    ./dev mutate [same arguments]

It is not part of ./dev test: five more builds and five runs of the slow
fault tests take a long while. Results go to build-mut/results-<time>.json
and the table to stdout.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

def mutations():
    """The choices of meson_options.txt's `mutation` (the one list), less 'none'."""
    text = (REPO / "meson_options.txt").read_text()
    opt = re.search(r"option\('mutation'.*?choices\s*:\s*\[(.*?)\]", text, re.S)
    return [m for m in re.findall(r"'([a-z_]+)'", opt.group(1)) if m != "none"]


MUTATIONS = mutations()

# The tests that name the rules the mutations break; the sanitizer flavors of
# the C API programs test the build beside the mutated one, so they are left
# out.
DEFAULT_TESTS = [
    "tests/fault/test_partition.py",
    "tests/fault/test_lagging_server.py",
    "tests/fault/test_churn_inproc.py",
    "tests/fault/test_heir_faults.py",
    "tests/fault/test_lease_faults.py",
    "tests/fault/test_election_faults.py",
    "tests/fault/test_lost_watch.py",
    "tests/integration/test_capi.py",
    "tests/integration/test_engine.py",
    "tests/integration/test_claims.py",
    "tests/integration/test_ticktime.py",
    "tests/tools/test_leader_endpoint.py",
    "tests/integration/test_fenced_write.py",
    "tests/tools/test_fenced_cli.py",
    "-k", "not asan and not tsan",
]


def sh(cmd, **kw):
    return subprocess.run(cmd, **kw)


def build(tree, mutation, log):
    if not (tree / "build.ninja").is_file():
        args = ["meson", "setup", str(tree)]
        if mutation:
            args.append(f"-Dmutation={mutation}")
        r = sh(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        if r.returncode:
            return False
    r = sh(["nice", "ninja", "-C", str(tree)], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    return r.returncode == 0


def env_for(tree):
    env = dict(os.environ)
    env["ZKELECT_BUILD_DIR"] = str(tree)
    env["PKG_CONFIG_PATH"] = str(tree / "meson-uninstalled")
    env["LD_LIBRARY_PATH"] = str(tree / "capi")
    extra = [str(tree / "tools"), "/usr/local/go/bin", str(Path.home() / ".cargo/bin")]
    env["PATH"] = os.pathsep.join(extra + [env.get("PATH", "")])
    # A mutated build must not satisfy the sanitizer runs' demand.
    env.pop("ZKELECT_REQUIRE_SANITIZERS", None)
    # One server version (the run's, $ZKELECT_ZK_VERSION): the tests marked
    # zk_versions would otherwise run twice per build (tests/conftest.py).
    env.setdefault("ZKELECT_ZK_ALSO", "")
    # And Debian's Curator only beside it (bed/curatordist.py).
    env.setdefault("ZKELECT_CURATOR_ALSO", "")
    return env


def run_unit(tree, env, log):
    """{test name: passed?} of `meson test --suite unit` in tree."""
    sh(["meson", "test", "-C", str(tree), "--suite", "unit", "--no-rebuild"], env=env,
       stdout=log, stderr=subprocess.STDOUT)
    out = {}
    path = tree / "meson-logs" / "testlog.json"
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            out[f"unit: {d['name']}"] = d.get("result") == "OK"
    return out


def run_pytest(tree, env, tests, junit, log):
    """{test id: passed?} from a pytest run with a JUnit report."""
    sh([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
        f"--junitxml={junit}", *tests], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    out = {}
    if not Path(junit).is_file():
        return out
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '').replace('tests.', '')}::{case.get('name')}"
        bad = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        out[name] = None if skipped else not bad
    return out


def table(results, columns):
    names = sorted({n for r in results.values() for n in r})
    width = max([len(n) for n in names] + [10])
    head = f"{'test':<{width}} " + " ".join(f"{c[:18]:>18}" for c in columns)
    lines = [head, "-" * len(head)]

    def cell(v):
        return {True: "pass", False: "FAIL", None: "skip"}.get(v, "-")
    for n in names:
        row = [cell(results[c].get(n, "-")) for c in columns]
        if all(x == "pass" for x in row):
            continue
        lines.append(f"{n:<{width}} " + " ".join(f"{x:>18}" for x in row))
    caught = []
    for c in columns:
        if c == "baseline":
            continue
        k = sum(1 for v in results[c].values() if v is False)
        caught.append(f"{c}: {k} failing")
    lines.append("-" * len(head))
    lines.append("; ".join(caught))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutation", action="append", choices=MUTATIONS,
                    help="run only this one (repeatable); default: all")
    ap.add_argument("--tests", default=None,
                    help="pytest arguments, one string (default: the safety tests)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the run against the unmutated build")
    ap.add_argument("--baseline-build", default=str(REPO / "build"))
    a = ap.parse_args(argv)
    mutations = a.mutation or MUTATIONS
    tests = shlex.split(a.tests) if a.tests else DEFAULT_TESTS
    # a default file that does not exist (yet) is left out, not an error
    tests = [t for t in tests if not t.startswith("tests/") or (REPO / t.split("::")[0]).exists()]
    out_dir = REPO / "build-mut"
    out_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log_path = out_dir / f"run-{stamp}.log"
    results = {}
    columns = ([] if a.no_baseline else ["baseline"]) + mutations
    with open(log_path, "w") as log:
        for col in columns:
            tree = Path(a.baseline_build) if col == "baseline" else REPO / f"build-mut-{col}"
            t0 = time.monotonic()
            print(f"== {col}: building {tree}", flush=True)
            if not build(tree, None if col == "baseline" else col, log):
                print(f"== {col}: BUILD FAILED (see {log_path})", flush=True)
                results[col] = {"build": False}
                continue
            env = env_for(tree)
            print(f"== {col}: running tests", flush=True)
            res = run_unit(tree, env, log)
            res.update(run_pytest(tree, env, tests, out_dir / f"junit-{col}-{stamp}.xml", log))
            results[col] = res
            failed = sorted(n for n, v in res.items() if v is False)
            print(f"== {col}: {len(failed)} failing of {len(res)} in "
                  f"{time.monotonic() - t0:.0f} s: {failed}", flush=True)
    (out_dir / f"results-{stamp}.json").write_text(json.dumps(results, indent=1))
    print()
    print(table(results, columns))
    print(f"\nlog: {log_path}")
    rc = 0
    if "baseline" in results and any(v is False for v in results["baseline"].values()):
        print("the baseline fails: the table proves nothing until it passes")
        rc = 1
    for m in mutations:
        if not any(v is False for v in results.get(m, {}).values()):
            print(f"NOT CAUGHT: {m}")
            rc = 1
    return rc


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:  # for explore/sim/meson.build
        print("\n".join(MUTATIONS))
        sys.exit(0)
    sys.exit(main())

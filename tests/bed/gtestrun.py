"""Run a GoogleTest program and prove that every case it holds ran.

A GoogleTest program exits 0 when a filter (an inherited GTEST_FILTER) left
nothing to run, when a case was renamed DISABLED_, or when a case called
GTEST_SKIP(). So: the program's own --gtest_list_tests (with no GTEST_*
variable inherited) names the cases it holds, and its JSON report
(--gtest_output=json:) must show each of them run to completion.
"""

import json
import os
import subprocess
import tempfile


def clean_env(env):
    """env without the GTEST_* variables that choose or repeat cases."""
    return {k: v for k, v in env.items() if not k.startswith("GTEST_")}


def list_cases(exe, env, timeout=60):
    r = subprocess.run([str(exe), "--gtest_list_tests"], env=clean_env(env),
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"{exe} --gtest_list_tests exited {r.returncode}: {r.stderr[-2000:]}")
    cases = []
    suite = None
    for line in r.stdout.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        name = line.split("#", 1)[0].rstrip()
        if not line[0].isspace():
            suite = name.strip()
        elif suite is not None:
            cases.append(suite + name.strip())
    return cases


def ran_cases(report_path):
    """{suite.case: (status, result)} from a --gtest_output=json report."""
    with open(report_path) as f:
        doc = json.load(f)
    out = {}
    for suite in doc.get("testsuites", []):
        for case in suite.get("testsuite", []):
            out[f"{suite['name']}.{case['name']}"] = (case.get("status"), case.get("result"))
    return out


def missing_cases(expected, ran):
    """Cases of `expected` that did not run to completion, with why."""
    bad = []
    for name in expected:
        if name.split(".", 1)[-1].startswith("DISABLED_") or ".DISABLED_" in name \
                or name.startswith("DISABLED_"):
            bad.append((name, "disabled"))
            continue
        st = ran.get(name)
        if st is None:
            bad.append((name, "not run"))
        elif st != ("RUN", "COMPLETED"):
            bad.append((name, f"{st[0]}/{st[1]}"))
    return bad


def run(exe, env, args=(), timeout=150):
    """(CompletedProcess, problems): problems lists the cases that did not
    run to completion; an empty list with returncode 0 is a pass."""
    env = clean_env(env)
    expected = list_cases(exe, env)
    with tempfile.TemporaryDirectory(prefix="gtest-") as d:
        report = os.path.join(d, "report.json")
        r = subprocess.run([str(exe), f"--gtest_output=json:{report}", *args], env=env,
                           capture_output=True, text=True, timeout=timeout)
        if not expected:
            return r, [("*", "the program lists no test case")]
        if not os.path.exists(report):
            return r, [("*", "no JSON report (the program died before writing it)")]
        return r, missing_cases(expected, ran_cases(report))

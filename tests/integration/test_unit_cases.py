"""The engine's GoogleTest programs (tests/unit) once more, as `meson test`
runs them, but proving that every case they hold ran to completion: `meson
test` only sees the exit status, which is 0 when an inherited GTEST_FILTER
left nothing to run or a case was renamed DISABLED_ (tests/bed/gtestrun.py)."""

import os
from pathlib import Path

import pytest

from bed import gtestrun

HERE = Path(__file__).resolve().parent

PROGRAMS = ["unit-names", "unit-event-queue"]


@pytest.mark.parametrize("prog", PROGRAMS)
def test_every_unit_case_ran(prog, build_dir):
    exe = build_dir / "tests" / "unit" / prog
    if not exe.is_file():
        pytest.fail(f"{exe} is missing: build it (ninja -C {build_dir})", pytrace=False)
    r, not_run = gtestrun.run(exe, dict(os.environ), timeout=120)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    assert not not_run, f"{prog}: cases that did not run to completion: {not_run}"


def test_the_check_sees_a_filtered_run(build_dir, tmp_path):
    """What the wrapper exists for: a run that a filter emptied exits 0, and
    the comparison with --gtest_list_tests reports every case as not run."""
    exe = build_dir / "tests" / "unit" / "unit-names"
    if not exe.is_file():
        pytest.fail(f"{exe} is missing", pytrace=False)
    env = gtestrun.clean_env(dict(os.environ))
    expected = gtestrun.list_cases(exe, env)
    assert expected
    import subprocess
    report = tmp_path / "r.json"
    r = subprocess.run([str(exe), "--gtest_filter=NoSuchCase.*", f"--gtest_output=json:{report}"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    missing = gtestrun.missing_cases(expected, gtestrun.ran_cases(report))
    assert sorted(n for n, _ in missing) == sorted(expected)
    assert gtestrun.missing_cases(["S.DISABLED_x"], {"S.DISABLED_x": ("NOTRUN", "SUPPRESSED")}) \
        == [("S.DISABLED_x", "disabled")]

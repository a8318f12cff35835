"""The Rust crates (bindings/rust): `cargo test` against the shared test
ensemble, and the README's example run as written.

cargo builds into <build dir>/rust-target so the source tree stays clean;
the crates find libzkelect through pkg-config in the uninstalled build dir
(test_env's PKG_CONFIG_PATH and LD_LIBRARY_PATH).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUST = REPO / "bindings" / "rust"
CARGO_TIMEOUT = 900


def _cargo_env(test_env, build_dir):
    if shutil.which("cargo", path=test_env.get("PATH")) is None:
        pytest.fail("cargo is not installed (Debian: apt-get install cargo)", pytrace=False)
    lib = build_dir / "capi" / "libzkelect.so.1"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: build first (./dev build)", pytrace=False)
    env = dict(test_env)
    env["CARGO_TARGET_DIR"] = str(build_dir / "rust-target")
    env["CARGO_TERM_COLOR"] = "never"
    env.setdefault("RUST_BACKTRACE", "1")
    return env


def _run(cmd, env):
    try:
        return subprocess.run(cmd, cwd=RUST, env=env, capture_output=True, text=True,
                              timeout=CARGO_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not finish in {CARGO_TIMEOUT} s:\n"
                    f"{e.stdout or ''}\n{e.stderr or ''}", pytrace=False)


def _tail(text, lines=200):
    return "\n".join(text.splitlines()[-lines:])


def test_cargo_test(test_env, build_dir):
    env = _cargo_env(test_env, build_dir)
    proc = _run(["cargo", "test", "--locked", "--workspace"], env)
    out = proc.stdout + "\n" + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"cargo test failed (exit {proc.returncode}):\n{_tail(out)}", pytrace=False)
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", out))
    # The ensemble tests and the header check must actually have run.
    for name in ["three_electors_elect_exactly_one", "resign_fails_over_in_queue_order",
                 "events_come_in_order", "drop_releases_the_node",
                 "c_compiler_agrees_with_types_and_values", "participants_errors_carry_their_code",
                 "event_fd_is_an_error_when_no_descriptor_can_be_made",
                 "code_only_failures_carry_the_library_detail",
                 "tests::every_event_type_counter_and_code_of_the_library_is_known"]:
        assert re.search(rf"test {name} \.\.\. ok", out), f"{name} did not pass:\n{_tail(out)}"
    assert passed >= 10, f"only {passed} tests passed:\n{_tail(out)}"


def test_readme_example_runs_as_written(test_env, build_dir, zk):
    env = _cargo_env(test_env, build_dir)
    proc = _run(["cargo", "run", "--locked", "-q", "-p", "zkelect", "--example", "readme", "--",
                 zk.connect_string], env)
    assert proc.returncode == 0, f"example failed:\n{proc.stdout}\n{_tail(proc.stderr)}"
    m = re.fullmatch(r"leading with fencing token (\d+)\n", proc.stdout)
    assert m and int(m.group(1)) > 0, proc.stdout


def test_cargo_test_fails_without_an_ensemble(test_env, build_dir):
    env = _cargo_env(test_env, build_dir)
    env.pop("ZKELECT_TEST_HOSTS", None)
    proc = _run(["cargo", "test", "--locked", "-p", "zkelect", "--test", "ensemble",
                 "--", "events_come_in_order"], env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"cargo test passed without ZKELECT_TEST_HOSTS:\n{_tail(out)}"
    assert "ZKELECT_TEST_HOSTS is not set" in out, _tail(out)

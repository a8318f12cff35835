"""The Rust crates (bindings/rust): `cargo test` against the shared test
ensemble (the README's example runs in tests/docs/test_examples.py;
zkelect/tests/readme.rs keeps examples/readme.rs the same text).

cargo builds into <build dir>/rust-target so the source tree stays clean;
the crates find libzkelect through pkg-config in the uninstalled build dir
(test_env's PKG_CONFIG_PATH and LD_LIBRARY_PATH).
"""

import re
from pathlib import Path

import pytest

from bed import sh

REPO = Path(__file__).resolve().parents[2]
RUST = REPO / "bindings" / "rust"
CARGO_TIMEOUT = 900


def _cargo_env(test_env, build_dir):
    sh.need("cargo", path=test_env.get("PATH"))
    sh.need_library(build_dir)
    env = dict(test_env)
    env["CARGO_TARGET_DIR"] = str(build_dir / "rust-target")
    env["CARGO_TERM_COLOR"] = "never"
    env.setdefault("RUST_BACKTRACE", "1")
    return env


def _run(cmd, env, cwd=RUST, timeout=CARGO_TIMEOUT):
    return sh.run(cmd, timeout, cwd=cwd, env=env)


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
                 "code_only_failures_carry_the_library_detail", "fenced_commit_only_while_leading",
                 "tests::every_event_type_counter_and_code_of_the_library_is_known"]:
        assert re.search(rf"test {name} \.\.\. ok", out), f"{name} did not pass:\n{_tail(out)}"
    assert passed >= 10, f"only {passed} tests passed:\n{_tail(out)}"




def test_cargo_test_fails_without_an_ensemble(test_env, build_dir):
    env = _cargo_env(test_env, build_dir)
    env.pop("ZKELECT_TEST_HOSTS", None)
    proc = _run(["cargo", "test", "--locked", "-p", "zkelect", "--test", "ensemble",
                 "--", "events_come_in_order"], env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"cargo test passed without ZKELECT_TEST_HOSTS:\n{_tail(out)}"
    assert "ZKELECT_TEST_HOSTS is not set" in out, _tail(out)

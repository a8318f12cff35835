"""The Go module (bindings/go): `go test` against the shared test ensemble
(the README example runs in tests/docs/test_examples.py). No generation step: the SWIG layer is committed
(tests/packaging/test_go_layer.py fails when it is stale).

The module needs no network (no external modules). The SWIG layer finds libzkelect through test_env's
PKG_CONFIG_PATH (the build's meson-uninstalled directory).
"""

import re
from pathlib import Path

import pytest

from bed import sh

REPO = Path(__file__).resolve().parents[2]
GO = REPO / "bindings" / "go"
TIMEOUT = 600


def _env(test_env, build_dir):
    sh.need(("go", "golang-go"), "pkg-config", path=test_env.get("PATH"))
    sh.need_library(build_dir)
    env = dict(test_env)
    env["GOFLAGS"] = "-mod=mod"
    env["CGO_ENABLED"] = "1"
    env.setdefault("GOTOOLCHAIN", "local")
    # Go's build cache does not key on pkg-config's answer: a cache per
    # build dir keeps another build's -L path out of the binaries.
    env["GOCACHE"] = str(build_dir / "bindings" / "go" / "gocache")
    return env


def _run(cmd, env, cwd=GO, timeout=TIMEOUT):
    return sh.run(cmd, timeout, cwd=cwd, env=env)



def test_go_test(test_env, build_dir, foreign_long_leader):
    env = _env(test_env, build_dir)
    env.update(foreign_long_leader)
    proc = _run(["go", "test", "-count=1", "-v", "./..."], env)
    out = proc.stdout + "\n" + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"go test failed (exit {proc.returncode}):\n{out[-20000:]}", pytrace=False)
    for name in ["TestVersionAndErrors", "TestThreeElectorsElectExactlyOne",
                 "TestResignFailsOverInQueueOrder", "TestEventsComeInOrder",
                 "TestCloseReleasesTheNode", "TestObserverSeesTheLeader",
                 "TestAwaitLeaderHonoursTheContext", "TestNoGoroutineLeak",
                 "TestCloseReturnsWhileNextEventBlocks", "TestNextEventAfterCloseIsErrClosed",
                 "TestNextEventHugeTimeoutWaits", "TestForgottenElectorIsFreed",
                 "TestParticipantsErrorCodes", "TestParticipantsWithoutAServer",
                 "TestLeaderIDLongerThanIDMax", "TestEveryEventTypeHasItsConstant",
                 "TestCodeOnlyFailuresCarryTheLibraryDetail", "TestFencedCommitOnlyWhileLeading",
                 "TestClientFencedCommitWithTheLeadersNodeAndToken"]:
        assert re.search(rf"--- PASS: {name} ", out), f"{name} did not pass:\n{out[-20000:]}"


def test_go_test_fails_without_an_ensemble(test_env, build_dir):
    env = _env(test_env, build_dir)
    env.pop("ZKELECT_TEST_HOSTS", None)
    proc = _run(["go", "test", "-count=1", "./..."], env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"go test passed without ZKELECT_TEST_HOSTS:\n{out}"
    assert "ZKELECT_TEST_HOSTS is not set" in out, out




def test_readme_requires_this_version():
    # The example uses APIs of this release (Stats came in 1.2): a require
    # of an older tag would not build against the Go module proxy's copy.
    readme = (REPO / "bindings" / "README.md").read_text()
    version = re.search(r"version : '([^']+)'", (REPO / "meson.build").read_text()).group(1)
    tags = re.findall(r"require github\.com/libzkelect/libzkelect/bindings/go (v[\w.-]+)", readme)
    assert tags and all(t == f"v{version}" for t in tags), (tags, version)

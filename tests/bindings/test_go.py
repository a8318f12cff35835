"""The Go module (bindings/go): `go test` against the shared test ensemble,
and the README example. No generation step: the SWIG layer is committed
(tests/packaging/test_go_layer.py fails when it is stale).

The module needs no network (no external modules). The SWIG layer finds libzkelect through test_env's
PKG_CONFIG_PATH (the build's meson-uninstalled directory).
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GO = REPO / "bindings" / "go"
TIMEOUT = 600


def _env(test_env, build_dir):
    for tool, pkg in (("go", "golang-go"), ("pkg-config", "pkg-config")):
        if shutil.which(tool, path=test_env.get("PATH")) is None:
            pytest.fail(f"{tool} is not installed (Debian: apt-get install {pkg})", pytrace=False)
    lib = build_dir / "capi" / "libzkelect.so.1"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: build first (./dev build)", pytrace=False)
    env = dict(test_env)
    env["GOFLAGS"] = "-mod=mod"
    env["CGO_ENABLED"] = "1"
    env.setdefault("GOTOOLCHAIN", "local")
    # Go's build cache does not key on pkg-config's answer: a cache per
    # build dir keeps another build's -L path out of the binaries.
    env["GOCACHE"] = str(build_dir / "bindings" / "go" / "gocache")
    return env


def _run(cmd, env, cwd=GO, timeout=TIMEOUT):
    try:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(map(str, cmd))} did not finish in {timeout} s:\n"
                    f"{e.stdout or ''}\n{e.stderr or ''}", pytrace=False)



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
                 "TestCodeOnlyFailuresCarryTheLibraryDetail"]:
        assert re.search(rf"--- PASS: {name} ", out), f"{name} did not pass:\n{out[-20000:]}"


def test_go_test_fails_without_an_ensemble(test_env, build_dir):
    env = _env(test_env, build_dir)
    env.pop("ZKELECT_TEST_HOSTS", None)
    proc = _run(["go", "test", "-count=1", "./..."], env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"go test passed without ZKELECT_TEST_HOSTS:\n{out}"
    assert "ZKELECT_TEST_HOSTS is not set" in out, out


def test_readme_example_runs_as_written(test_env, build_dir, zk, zk_path, tmp_path):
    env = _env(test_env, build_dir)
    readme = (REPO / "bindings" / "README.md").read_text()
    m = re.search(r"<!-- go-example -->\s*```go\n(.*?)```", readme, re.S)
    assert m, "bindings/README.md has no Go example"
    example = tmp_path / "example"
    example.mkdir()
    (example / "main.go").write_text(m.group(1))
    (example / "go.mod").write_text(
        "module example\n\ngo 1.21\n\nrequire github.com/libzkelect/libzkelect/bindings/go v0.0.0\n\n"
        f"replace github.com/libzkelect/libzkelect/bindings/go => {GO}\n")
    env["ZK_HOSTS"] = zk.connect_string
    proc = _run(["go", "run", "."], env, cwd=example)
    assert proc.returncode == 0, f"example failed:\n{proc.stdout}\n{proc.stderr}"
    m = re.fullmatch(r"leading with fencing token (\d+)\n", proc.stdout)
    assert m and int(m.group(1)) > 0, proc.stdout


def test_readme_requires_this_version():
    # The example uses APIs of this release (Stats came in 1.2): a require
    # of an older tag would not build against the Go module proxy's copy.
    readme = (REPO / "bindings" / "README.md").read_text()
    version = re.search(r"version : '([^']+)'", (REPO / "meson.build").read_text()).group(1)
    tags = re.findall(r"require github\.com/libzkelect/libzkelect/bindings/go (v[\w.-]+)", readme)
    assert tags and all(t == f"v{version}" for t in tags), (tags, version)

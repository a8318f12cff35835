"""The Java binding (bindings/java): built by bindings/java/build.sh into
<build dir>/bindings/java (SWIG from bindings/swig/*.i, a JNI library, a jar,
the JUnit 4 tests from Debian's junit4), the JUnit tests run against the
shared ensemble, and the README example run as written.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JAVA = REPO / "bindings" / "java"
JUNIT = "/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar"
TIMEOUT = 300


def _run(cmd, env, cwd=JAVA, timeout=TIMEOUT):
    try:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(map(str, cmd))} did not finish in {timeout} s:\n"
                    f"{e.stdout or ''}\n{e.stderr or ''}", pytrace=False)


@pytest.fixture(scope="module")
def java_out(build_dir):
    for tool, pkg in (("javac", "default-jdk-headless"), ("swig", "swig"), ("pkg-config", "pkg-config")):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (Debian: apt-get install {pkg})", pytrace=False)
    if not Path(JUNIT.split(":")[0]).exists():
        pytest.fail("JUnit 4 is not installed (Debian: apt-get install junit4)", pytrace=False)
    if not (build_dir / "capi" / "libzkelect.so.1").exists():
        pytest.fail("libzkelect is not built: ./dev build", pytrace=False)
    env = dict(os.environ)
    env["ZKELECT_BUILD_DIR"] = str(build_dir)
    env["PKG_CONFIG_PATH"] = str(build_dir / "meson-uninstalled") + ":" + env.get("PKG_CONFIG_PATH", "")
    out = build_dir / "script-bindings" / "java"
    proc = _run(["sh", str(JAVA / "build.sh"), str(out)], env)
    if proc.returncode != 0:
        pytest.fail(f"bindings/java/build.sh failed:\n{proc.stdout}\n{proc.stderr}", pytrace=False)
    return out


def _junit(env, out):
    cp = f"{out}/zkelect.jar:{out}/test-classes:{JUNIT}"
    return _run(["java", f"-Djava.library.path={out}", "-cp", cp,
                 "org.junit.runner.JUnitCore", "org.zkelect.ElectorTest", "org.zkelect.LifecycleTest",
                 "org.zkelect.BoundaryTest"], env)


def test_junit(test_env, java_out, foreign_long_leader):
    proc = _junit(dict(test_env, **foreign_long_leader), java_out)
    out = proc.stdout + "\n" + proc.stderr
    assert proc.returncode == 0, f"JUnit failed (exit {proc.returncode}):\n{out}"
    m = re.search(r"OK \((\d+) tests\)", proc.stdout)
    assert m and int(m.group(1)) >= 18, out
    assert "ran leaderIdLongerThanIdMax with a 2000-byte id" in proc.stdout, out


def test_junit_fails_without_an_ensemble(test_env, java_out):
    env = dict(test_env)
    env.pop("ZKELECT_TEST_HOSTS", None)
    proc = _junit(env, java_out)
    assert proc.returncode != 0, proc.stdout
    assert "ZKELECT_TEST_HOSTS is not set" in proc.stdout + proc.stderr, proc.stdout


def test_readme_example_runs_as_written(test_env, java_out, zk, tmp_path):
    readme = (REPO / "bindings" / "README.md").read_text()
    m = re.search(r"<!-- java-example -->\s*```java\n(.*?)```", readme, re.S)
    assert m, "bindings/README.md has no Java example"
    src = tmp_path / "Example.java"
    src.write_text(m.group(1))
    env = dict(test_env, ZK_HOSTS=zk.connect_string)
    # Java 11+ runs a single source file directly.
    proc = _run(["java", f"-Djava.library.path={java_out}", "-cp", f"{java_out}/zkelect.jar",
                 str(src)], env, cwd=tmp_path)
    assert proc.returncode == 0, f"example failed:\n{proc.stdout}\n{proc.stderr}"
    m = re.fullmatch(r"leading with fencing token (\d+)\n", proc.stdout)
    assert m and int(m.group(1)) > 0, proc.stdout

"""The Java binding (bindings/java): built by bindings/java/build.sh into
<build dir>/bindings/java (SWIG from bindings/swig/*.i, a JNI library, a jar,
the JUnit 4 tests from Debian's junit4), the JUnit tests run against the
shared ensemble (the README example runs in tests/docs/test_examples.py).
"""

import re
from pathlib import Path

import pytest

from bed import sh

REPO = Path(__file__).resolve().parents[2]
JAVA = REPO / "bindings" / "java"
JUNIT = "/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar"
TIMEOUT = 300


def _run(cmd, env, cwd=JAVA, timeout=TIMEOUT):
    return sh.run(cmd, timeout, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def java_out(build_dir):
    sh.need(("javac", "default-jdk-headless"), "swig", "pkg-config")
    if not Path(JUNIT.split(":")[0]).exists():
        pytest.fail("JUnit 4 is not installed (Debian: apt-get install junit4)", pytrace=False)
    sh.need_library(build_dir)
    return sh.build_binding(JAVA / "build.sh", build_dir / "script-bindings" / "java", build_dir)


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

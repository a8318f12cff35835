"""A command run with a bound, its failure reported as a test failure
(the packaging suites and the docs' examples)."""

import subprocess

import pytest

TIMEOUT = 600


def run(cmd, timeout=TIMEOUT, **kw):
    """subprocess.run with output captured as text; a test failure when it
    does not finish within timeout seconds."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{cmd} did not finish in {timeout} s:\n{e.stdout or ''}\n{e.stderr or ''}",
                    pytrace=False)


def ok(proc, what):
    """proc when it exited 0; else a test failure with the tail of its output."""
    if proc.returncode != 0:
        pytest.fail(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}",
                    pytrace=False)
    return proc

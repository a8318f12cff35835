"""`zkelect run` never waits on its crash guard (issue 51, "never a
stall"): with run's guard stopped and its pipe full, the keeper killed,
run must still kill what is left of the command (its orphan sweep: the
command's grandchild) at once. Before, run sat in a write to the guard's
pipe (reap(): zkelect_client_crash_guard_wait(client, 0)) and the
grandchild lived on.

The pipe is filled from outside as root can (/proc/GUARD/fd/3): the guard
is not dumpable, so a process of run's own user could not (test_guard_door.py).
"""

import errno
import os
import signal
import time

import pytest

from bed.toolutil import Proc, pid_alive, wait_gone
from bed.guardprocs import guards_of

# The command and a grandchild of its own: the command dies with its keeper
# (PR_SET_PDEATHSIG), the grandchild is left to run's orphan sweep.
CHILD = r"""#!/bin/sh
sleep 600 &
echo "start $$ $PPID $!" >> "$1"
wait
"""


def _fill(guard):
    """Fills the guard's pipe through /proc: the bytes written."""
    fd = os.open(f"/proc/{guard}/fd/3", os.O_WRONLY | os.O_NONBLOCK)
    n = 0
    try:
        for _ in range(10000):
            try:
                n += os.write(fd, b"x" * 4096)
            except BlockingIOError:
                break
    finally:
        os.close(fd)
    return n


def test_run_kills_the_command_with_its_guard_stopped_and_its_pipe_full(zk, zk_path, zkelect_bin,
                                                                        test_env, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root, to fill the guard's pipe through /proc")
    guard_bin = os.environ["ZKELECT_GUARD"]
    child = tmp_path / "child.sh"
    child.write_text(CHILD)
    child.chmod(0o755)
    log = tmp_path / "log"
    log.write_text("")
    run = Proc([zkelect_bin, "run", "--connect", zk.connect_string, "--path", zk_path, "--id", "a",
                "--session-timeout-ms", 6000, "--", child, log], test_env, stdin=False)
    stopped, left = [], []
    try:
        deadline = time.monotonic() + 20
        while not log.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        _, cmd, keeper, grandchild = log.read_text().split()[:4]
        keeper, grandchild = int(keeper), int(grandchild)
        left.append(grandchild)
        deadline = time.monotonic() + 5
        g = []
        while not g and time.monotonic() < deadline:
            g = guards_of(guard_bin, run.pid)
            time.sleep(0.01)
        assert len(g) == 1, g
        os.kill(g[0], signal.SIGSTOP)
        stopped.append(g[0])
        assert _fill(g[0]) > 0
        # The keeper dies: the command's grandchild is run's orphan now, to
        # be killed.
        os.kill(keeper, signal.SIGKILL)
        assert wait_gone(grandchild, 3), \
            "the command's grandchild outlived its keeper by 3 s: run waited on its guard"
        assert pid_alive(run.pid) or run.proc.poll() is not None
    finally:
        for p in stopped:
            os.kill(p, signal.SIGKILL)
        run.kill()
        for p in left:
            if pid_alive(p):
                os.kill(p, signal.SIGKILL)


def _ppid(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def test_runs_orphan_sweep_leaves_a_restarted_guard_alone(zk, zk_path, zkelect_bin, test_env,
                                                          tmp_path):
    """A guard the library starts again once run is a subreaper is orphaned
    below run. Before, run's orphan sweep (the keeper died) SIGKILLed it with
    the command's leftovers, and the library started yet another."""
    guard_bin = os.environ["ZKELECT_GUARD"]
    child = tmp_path / "child.sh"
    child.write_text(CHILD)
    child.chmod(0o755)
    log = tmp_path / "log"
    log.write_text("")
    run = Proc([zkelect_bin, "run", "--connect", zk.connect_string, "--path", zk_path, "--id", "a",
                "--session-timeout-ms", 6000, "--", child, log], test_env, stdin=False)
    left = []
    try:
        deadline = time.monotonic() + 20
        while not log.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        _, cmd, keeper, grandchild = log.read_text().split()[:4]
        keeper, grandchild = int(keeper), int(grandchild)
        left.append(grandchild)
        deadline = time.monotonic() + 5
        first = []
        while not first and time.monotonic() < deadline:
            first = guards_of(guard_bin, run.pid)
            time.sleep(0.01)
        assert len(first) == 1, first
        os.kill(first[0], signal.SIGKILL)
        # The new guard proper (not the short-lived child that starts it):
        # the same one seen twice, 0.2 s apart.
        deadline = time.monotonic() + 5
        second, seen = [], None
        while time.monotonic() < deadline:
            second = [p for p in guards_of(guard_bin, run.pid) if p not in first]
            if second and second == seen:
                break
            seen = second
            time.sleep(0.2)
        assert len(second) == 1, second
        assert _ppid(second[0]) == run.pid, "the new guard is not below run (no subreaper?)"
        # Held stopped, the guard outlives run unless something kills it:
        # run exits once its keeper is gone, and a running guard would then
        # exit by itself.
        os.kill(second[0], signal.SIGSTOP)
        left.append(second[0])
        os.kill(keeper, signal.SIGKILL)
        assert wait_gone(grandchild, 3), "run's orphan sweep did not run"
        run.proc.wait(10)
        assert guards_of(guard_bin, run.pid) == second, \
            "run's orphan sweep killed its own crash guard"
    finally:
        run.kill()
        for p in left:
            if pid_alive(p):
                os.kill(p, signal.SIGKILL)

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
from guardprocs import guards_of

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

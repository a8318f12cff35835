"""The crash guard must never hurt its host (issue 51), tried from outside
as a user would: a host program of the library (guard_host.py, many
clients in one process) on the real ensemble, its guard stopped, crowded or
broken.

- Never a stall: with the guard SIGSTOPped, no library call, client
  creation or fork() waits on it (before: zkelect_client_crash_guard_wait
  blocked after 2,416 calls, once the pipe's 64 KiB were full, and a fork()
  from another thread with it); a guard that takes nothing for 2 s is
  declared lost and replaced, and the clients are guarded again.
- Never more privileged than its owner: a host that changes its user
  after its clients started (a server dropping root) gets a guard of its
  new user (before: the root guard stayed, and took the now unprivileged
  host's records).
- Never a storm: 1,030 clients (past the old table of 1,024) are all
  guarded by one guard, started once, with no warning; a guard that dies
  early, or refuses the protocol's version, is restarted with a growing
  pause (before: every second, and each start reset the pause).
"""

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bed.participant import Participant, candidate_argv
from bed.guardprocs import guards_of

HERE = Path(__file__).resolve().parent
STALL_S = 2.0        # kStallMs in cxx/session/crash_guard.cpp
T_MS = 6000


@pytest.fixture
def guard_bin():
    return os.environ["ZKELECT_GUARD"]


class Host:
    def __init__(self, build_dir, zk, env=None):
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "guard_host.py"),
             str(build_dir / "capi" / "libzkelect.so.1"), zk.connect_string],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.pid = self.proc.pid

    def ask(self, cmd, timeout):
        """The answer to cmd, or None when none came within timeout s."""
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            return None
        line = self.proc.stdout.readline()
        assert line, f"the host exited on {cmd!r}"
        return json.loads(line)

    def until_guarded(self, n, timeout):
        deadline = time.monotonic() + timeout
        s = None
        while time.monotonic() < deadline:
            s = self.ask("stats", 30)
            if s["guarded"] == n:
                return s
            time.sleep(0.05)
        pytest.fail(f"{n} clients not all guarded within {timeout} s: {s}")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def hosts(build_dir, zk):
    made = []

    def make(env=None):
        h = Host(build_dir, zk, env)
        made.append(h)
        return h
    yield make
    for h in made:
        h.close()


def _one_guard(guard_bin, pid, timeout=5, other_than=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        g = [p for p in guards_of(guard_bin, pid) if p not in other_than]
        if g:
            return g
        time.sleep(0.01)
    pytest.fail(f"no zkelect-guard for {pid} within {timeout} s")


def test_a_stopped_guard_stalls_no_call_no_fork_and_is_replaced(hosts, guard_bin):
    h = hosts()
    assert h.ask("clients 1", 60)
    h.until_guarded(1, 10)
    [stopped] = _one_guard(guard_bin, h.pid)
    os.kill(stopped, signal.SIGSTOP)
    try:
        # Each WAIT line is about 30 bytes: 5,000 are more than the pipe's
        # 64 KiB. None of these calls waits on the stopped guard.
        got = h.ask("waits 5000", 10)
        assert got is not None, "crash_guard_wait blocked on a stopped guard"
        got = h.ask("fork", 5)
        assert got is not None and got["ms"] < 1000, f"fork() waited on the guard: {got}"
        got = h.ask("clients 2", 30)
        assert got is not None, "a client's creation blocked on a stopped guard"
        # Lost after STALL_S without reading, and replaced: every client is
        # guarded again by a new guard, and was told once.
        new = _one_guard(guard_bin, h.pid, STALL_S + 5, other_than=(stopped,))
        assert len(new) == 1, new
        s = h.until_guarded(3, STALL_S + 5)
        assert 1 <= s["warnings"] <= 3 * 2, s
        got = h.ask("fork", 5)
        assert got is not None and got["ms"] < 1000, got
    finally:
        os.kill(stopped, signal.SIGCONT)
    # Resumed, the lost guard finds its pipe closed by a live owner: it
    # exits, closing nothing.
    deadline = time.monotonic() + 5
    while stopped in guards_of(guard_bin, h.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stopped not in guards_of(guard_bin, h.pid)


def test_1030_clients_in_one_process_are_all_guarded_by_one_guard(hosts, guard_bin):
    h = hosts()
    assert h.ask("clients 1", 60)
    h.until_guarded(1, 10)
    [first] = _one_guard(guard_bin, h.pid)
    n = 1030
    got = h.ask(f"clients {n - 1}", 600)
    assert got is not None
    s = h.until_guarded(n, 30)
    assert s["warnings"] == 0, s
    # One guard, the first one: never restarted.
    assert guards_of(guard_bin, h.pid) == [first]


def _flaky_guard(tmp_path, body):
    """A stand-in for zkelect-guard: a script that notes each start in a
    file and then does body (it gets no environment: absolute paths)."""
    starts = tmp_path / "starts"
    script = tmp_path / "guard.sh"
    script.write_text(f"#!/bin/sh\n/bin/echo start >> {starts}\n{body}\n")
    script.chmod(0o755)
    return script, starts


def test_a_guard_that_dies_early_is_restarted_with_a_growing_pause(hosts, build_dir, zk, tmp_path,
                                                                   test_env):
    # It starts as a guard should (the child exits 0, something holds the
    # pipe's read end) and dies 0.3 s later, as a guard fed garbage would.
    script, starts = _flaky_guard(tmp_path, "( /bin/sleep 0.3 ) &\nexit 0")
    h = hosts(dict(test_env, ZKELECT_GUARD=str(script)))
    assert h.ask("clients 3", 60)
    time.sleep(12)
    n = len(starts.read_text().split())
    # 0, then 1, 2, 4 s (+0.3 s each) after each death: 4 starts in 12 s
    # (before: every 1.3 s, 9 or 10).
    assert 2 <= n <= 5, f"{n} guard starts in 12 s"
    s = h.ask("stats", 30)
    # Two per client per start at most (down, then up again).
    assert s["warnings"] <= 3 * 2 * n, s


def test_a_guard_of_another_version_is_refused_with_the_reason(zk, zk_path, zkelect_bin, test_env,
                                                               tmp_path):
    # What the guard does on a hello of another version (exit status 5:
    # test_guard.py tests the real one).
    script, starts = _flaky_guard(tmp_path, "exit 5")
    env = dict(test_env, ZKELECT_GUARD=str(script))
    a = Participant(candidate_argv(zkelect_bin, zk.connect_string, zk_path, 1, 1, T_MS),
                    env, "auto", stderr="pipe")
    try:
        m = a.mark()
        a.send("join")
        # The WARNING can come before the join: the client tries its guard
        # as it starts, and the candidacy hears of it as it is made.
        _, words = a.wait_info("1", "WARNING", 10)
        assert "another version of the guard protocol" in " ".join(words), words
        a.wait_event(("LEADER",), "1", 10, since=m)
        time.sleep(4)
        n = len(starts.read_text().split())
        assert n <= 4, f"{n} starts of a refusing guard in about 4 s"
    finally:
        a.close()


def _uid(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])


def test_a_host_that_drops_root_gets_a_guard_of_its_new_user(hosts, guard_bin):
    if os.geteuid() != 0:
        pytest.skip("needs root, to drop it")
    h = hosts()
    assert h.ask("clients 1", 60)
    h.until_guarded(1, 10)
    [root_guard] = _one_guard(guard_bin, h.pid)
    assert _uid(root_guard) == 0
    assert h.ask("setuid 65534", 10) == {"uid": 65534}
    # The next line for the guard finds the user changed.
    assert h.ask("waits 1", 10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        g = guards_of(guard_bin, h.pid)
        if g and root_guard not in g:
            break
        time.sleep(0.02)
    g = guards_of(guard_bin, h.pid)
    assert root_guard not in g, "the root guard stayed after its host dropped root"
    assert len(g) == 1 and _uid(g[0]) == 65534, [(p, _uid(p)) for p in g]
    h.until_guarded(1, 5)


def test_commands_that_only_read_start_no_guard(zk, zk_path, zkelect_bin, test_env, tmp_path):
    # Before, each `zkelect status` started a guard for a process that never
    # holds a node (and under a non-reaping init left a zombie each).
    script, starts = _flaky_guard(tmp_path, "( /bin/sleep 30 ) >/dev/null 2>&1 &\nexit 0")
    starts.write_text("")
    env = dict(test_env, ZKELECT_GUARD=str(script))
    for argv in (["status", "--connect", zk.connect_string, "--path", zk_path],
                 ["observe", "--connect", zk.connect_string, "--path", zk_path, "--count", "1"],
                 ["observe", "--connect", zk.connect_string, "--path", zk_path, "--prometheus"]):
        r = subprocess.run([str(zkelect_bin), *argv], env=env, capture_output=True, text=True,
                           timeout=30)
        assert r.returncode in (0, 1), (argv, r.returncode, r.stderr)
    assert starts.read_text().split() == [], "a command that only reads started a guard"
    # The control: a candidate starts one.
    a = Participant(candidate_argv(zkelect_bin, zk.connect_string, zk_path, 1, 1, T_MS),
                    env, "candidate", stderr="pipe")
    try:
        a.wait_event(("CONNECTED",), "1", 20)
        assert starts.read_text().split() == ["start"]
    finally:
        a.close()


def test_a_client_that_joined_while_no_guard_could_start_is_guarded_once_one_runs(
        zk, zk_path, zkelect_bin, test_env, tmp_path, guard_bin):
    # The first start fails (as when the guard's binary is being upgraded),
    # the next ones run the real guard. Before, the client that joined
    # during the failure was never a member: never guarded, even after.
    once = tmp_path / "failed-once"
    script, starts = _flaky_guard(
        tmp_path, f"if [ ! -e {once} ]; then : > {once}; exit 1; fi\nexec {guard_bin} \"$@\"")
    env = dict(test_env, ZKELECT_GUARD=str(script))
    p = Participant(candidate_argv(zkelect_bin, zk.connect_string, zk_path, 1, 1, T_MS),
                    env, "late", stderr="pipe")
    try:
        p.wait_event(("CONNECTED",), "1", 20)
        m = p.mark()
        p.send("status 1")
        assert p.info("1", "crash_guarded", 10, since=m) == "0"
        # Tried again after the backoff's first pause (1 s).
        deadline = time.monotonic() + 8
        got = "0"
        while got != "1" and time.monotonic() < deadline:
            time.sleep(0.2)
            m = p.mark()
            p.send("status 1")
            got = p.info("1", "crash_guarded", 10, since=m)
        assert got == "1", "the client was not guarded once the guard could start"
        assert len(starts.read_text().split()) == 2
    finally:
        p.close()


def test_a_host_that_reuses_the_pipes_number_gets_no_line_and_keeps_its_file(hosts, guard_bin,
                                                                            tmp_path):
    # A daemon that closes every descriptor and opens its log at the freed
    # number. Before, the library wrote the next lines (passwords among
    # them, on a restart) into that file.
    h = hosts()
    assert h.ask("clients 1", 60)
    h.until_guarded(1, 10)
    [g] = _one_guard(guard_bin, h.pid)
    ino = os.readlink(f"/proc/{g}/fd/3").split("[")[1].rstrip("]")
    log = tmp_path / "host.log"
    fd = h.ask(f"steal {ino} {log}", 10)["fd"]
    assert h.ask("waits 10", 10)
    # The library saw the number is not its pipe: a new guard, every client
    # guarded again, nothing written into the host's file, which stays open.
    _one_guard(guard_bin, h.pid, 5, other_than=(g,))
    h.until_guarded(1, 5)
    assert log.read_bytes() == b"", "the library wrote its lines into the host's file"
    assert h.ask(f"fdino {fd}", 10)["ino"] == os.stat(log).st_ino, "the host's file was closed"


def _sessions(zk):
    """The ensemble's live sessions, as its leader's `dump` counts them."""
    from bed.zkbed import four_letter
    for hp in zk.connect_string.split(","):
        if "Mode: leader" in four_letter(hp, "srvr") or "Mode: standalone" in four_letter(hp, "srvr"):
            for line in four_letter(hp, "dump").splitlines():
                if line.startswith("Session Sets"):
                    return int(line.split("(")[-1].rstrip("):"))
    raise AssertionError("no leader answered srvr and dump")


def test_1030_sessions_of_a_killed_host_are_all_closed_at_once(hosts, zk):
    # The guard opens them a window at a time (its descriptor limit allows
    # fewer handles than sessions) and closes each: well before T = 6 s.
    h = hosts()
    n = 1030
    assert h.ask(f"clients {n}", 600)
    h.until_guarded(n, 30)
    before = _sessions(zk)
    t0 = time.monotonic()
    os.kill(h.pid, signal.SIGKILL)
    h.proc.wait(10)
    left = before
    while time.monotonic() - t0 < 4.5 and left > before - n:
        time.sleep(0.1)
        left = _sessions(zk)
    took = time.monotonic() - t0
    assert left <= before - n, f"{before - left} of {n} sessions closed in {took:.1f} s (T = 6 s)"
    print(f"\n{n} sessions closed {took:.2f} s after the host's SIGKILL")


def test_a_guard_that_gives_no_verdict_at_its_start_stalls_nothing(hosts, test_env, tmp_path):
    # A helper that neither exits nor forks (hung, or the wrong program):
    # before, the library waited for it under the lock fork() takes, here
    # for 60 s; now it is killed after 2 s and the client runs without a
    # guard for now (tried again with the backoff).
    script, starts = _flaky_guard(tmp_path, "exec /bin/sleep 60")
    h = hosts(dict(test_env, ZKELECT_GUARD=str(script)))
    got = h.ask("clients 1", 10)
    assert got is not None, "a client's creation waited on a guard that gave no verdict"
    got = h.ask("fork", 10)
    assert got is not None and got["ms"] < 3000, got
    s = h.ask("stats", 10)
    assert s["guarded"] == 0 and s["warnings"] >= 1, s


def test_an_owner_that_is_pid_1_is_told_why_it_has_no_guard(zk, zk_path, zkelect_bin, test_env,
                                                            guard_bin):
    """The app as PID 1 of a PID namespace (a container without an init):
    the kernel kills the whole namespace when it exits, a guard included, so
    the client says so, with the cause and what to set, rather than an exit
    status; and no guard process is left behind in the namespace."""
    argv = ["unshare", "--pid", "--fork", "--mount-proc",
            *candidate_argv(zkelect_bin, zk.connect_string, zk_path, 1, 1, T_MS)]
    a = Participant(argv, test_env, "pid1", stderr="pipe")
    try:
        m = a.mark()
        a.send("join")
        _, words = a.wait_info("1", "WARNING", 10)
        said = " ".join(words)
        assert "PID 1 of its PID namespace" in said and "crash.guard=off" in said, said
        a.wait_event(("LEADER",), "1", 10, since=m)
        a.send("status 1")
        assert a.info("1", "crash_guarded", 10, since=m) == "0"
    finally:
        a.close()

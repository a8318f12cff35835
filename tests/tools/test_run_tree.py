"""`zkelect run` as a singleton supervisor: no process started under one
leader's CMD is alive when another leader's CMD starts, whatever CMD does
(daemonizes a grandchild, ignores SIGTERM) and however the old leader goes
(SIGKILL of run, SIGTERM of run, a network partition, SIGSTOP of run).

Every process of every CMD records its start on CLOCK_MONOTONIC
(treechild.py); the test records each one's end from a pidfd the moment it is
announced. The check is on intervals: for processes of two different
participants, [start, end] never overlap (a process still alive counts as
ending never).
"""

import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from bed.faultproxy import ProxiedEnsemble
from bed.toolutil import CApi, Proc

SESSION_MS = 2000
# A margin larger than the default T/20 keeps the kill window (margin/2) clear
# of scheduling stalls on a loaded test machine; the arithmetic is the same.
MARGIN_MS = 400
CHILD = Path(__file__).resolve().parent / "treechild.py"


class Watcher:
    """Receives start records and follows each process's end with a pidfd."""

    def __init__(self):
        # A Unix socket path must fit in 108 bytes: not under a deep tmp_path.
        self.dir = tempfile.mkdtemp(prefix="zkrun-")
        self.path = os.path.join(self.dir, "rec.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.procs = {}  # pid -> dict(role, id, token, start, end)
        self.records = []
        self.cond = threading.Condition()
        self.stop = False
        self.fds = {}
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            r, _, _ = select.select([self.sock, *self.fds], [], [], 0.2)
            now = time.monotonic_ns()
            for fd in r:
                if fd is self.sock:
                    self._record(self.sock.recv(4096).decode(), now)
                else:
                    pid = self.fds.pop(fd)
                    os.close(fd)
                    with self.cond:
                        self.procs[pid]["end"] = now
                        self.cond.notify_all()

    def _record(self, msg, now):
        kind, pid, role, pid_, token, ns = msg.split()
        pid = int(pid)
        with self.cond:
            self.records.append((kind, pid, role, pid_, int(token), int(ns)))
            if kind == "start":
                p = {"pid": pid, "role": role, "id": pid_, "token": int(token),
                     "start": int(ns), "end": None}
                self.procs[pid] = p
                try:
                    self.fds[os.pidfd_open(pid)] = pid
                except ProcessLookupError:
                    p["end"] = now  # gone already: it ended by now
            self.cond.notify_all()

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                r = pred()
                if r:
                    return r
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out ({timeout} s) waiting for {what}; "
                                         f"records: {self.records}")
                self.cond.wait(left)

    def of(self, pid_):
        return [p for p in self.procs.values() if p["id"] == pid_]

    def started(self, pid_, role="child"):
        return [p for p in self.of(pid_) if p["role"] == role]

    def all_ended(self, pid_):
        return all(p["end"] is not None for p in self.of(pid_))

    def assert_no_overlap(self):
        with self.cond:
            ps = list(self.procs.values())
        inf = float("inf")
        for p in ps:
            for q in ps:
                if p["id"] == q["id"] or p["start"] > q["start"]:
                    continue
                p_end = p["end"] if p["end"] is not None else inf
                assert p_end <= q["start"], (
                    f"{p['id']}'s {p['role']} {p['pid']} (token {p['token']}) was alive "
                    f"{(p_end - q['start']) / 1e6:.1f} ms after {q['id']}'s {q['role']} "
                    f"{q['pid']} (token {q['token']}) started; all: {ps}")

    def close(self):
        self.stop = True
        self.thread.join(5)
        self.sock.close()
        for fd in self.fds:
            os.close(fd)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def watcher():
    w = Watcher()
    yield w
    w.close()
    # Nothing a test started may be left behind, whatever it asserted.
    for p in w.procs.values():
        try:
            os.kill(p["pid"], signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@pytest.fixture
def runs():
    made = []
    yield made
    for p in made:
        if p.proc.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        p.kill()


def run_argv(zkelect_bin, hosts, path, pid_, mode, *opts):
    return [zkelect_bin, "run", "--connect", hosts, "--path", path, "--id", pid_,
            "--session-timeout-ms", SESSION_MS, "--set", f"lease.margin.ms={MARGIN_MS}",
            *opts, "--", sys.executable, CHILD, mode]


def start_run(runs, zkelect_bin, env, hosts, path, pid_, mode, watcher, *opts, prefix=()):
    env = dict(env, TREECHILD_SOCK=watcher.path)
    p = Proc([*prefix, *run_argv(zkelect_bin, hosts, path, pid_, mode, *opts)], env,
             stdin=False)
    runs.append(p)
    return p


def wait_queue(capi, hosts, path, n, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        ps = capi.participants(hosts, path) or []
        if len(ps) == n:
            return ps
        assert time.monotonic() < deadline, f"queue never reached {n}: {ps}"
        time.sleep(0.05)


FAULTS = ["sigkill", "sigterm", "partition", "sigstop"]


@pytest.mark.fault
@pytest.mark.parametrize("mode", ["daemon", "ignore"])
@pytest.mark.parametrize("fault", FAULTS)
def test_no_process_of_the_old_leader_outlives_its_term(zk, zk_path, zkelect_bin, test_env,
                                                        build_dir, watcher, runs, fault, mode):
    capi = CApi(build_dir)
    # A grace far longer than the gap before a successor: run must cut it
    # short once it no longer leads. Only a stop asked by a signal, while run
    # still leads, grants it in full.
    grace = 1500 if fault == "sigterm" else 60000
    with ProxiedEnsemble([zk.client_port(i) for i in range(zk.n)]) as prox:
        a = start_run(runs, zkelect_bin, test_env, prox.connect_string, zk_path, "a", mode,
                      watcher, "--grace", grace)
        want = 2 if mode == "daemon" else 1
        watcher.wait(lambda: len(watcher.of("a")) >= want, 30, "a's processes")
        b = start_run(runs, zkelect_bin, test_env, zk.connect_string, zk_path, "b", mode,
                      watcher, "--grace", 1500)
        wait_queue(capi, zk.connect_string, zk_path, 2)
        assert not watcher.of("b")

        t_fault = time.monotonic_ns()
        if fault == "sigkill":
            os.kill(a.pid, signal.SIGKILL)
        elif fault == "sigterm":
            a.proc.send_signal(signal.SIGTERM)
        elif fault == "partition":
            prox.blackhole()
        elif fault == "sigstop":
            os.kill(a.pid, signal.SIGSTOP)
        try:
            # b leads only once a's session has expired (or a resigned).
            watcher.wait(lambda: watcher.started("b"), 4 * SESSION_MS / 1000 + 20,
                         "b's child")
            watcher.wait(lambda: watcher.all_ended("a"), 10, "the end of a's processes")
        finally:
            if fault == "sigstop":
                os.kill(a.pid, signal.SIGCONT)
            prox.set_pass()
        watcher.assert_no_overlap()
        with watcher.cond:
            gap = (min(p["start"] for p in watcher.of("b")) -
                   max(p["end"] for p in watcher.of("a"))) / 1e6
        # A figure for the record (pytest -s), not an assertion.
            took = (max(p["end"] for p in watcher.of("a")) - t_fault) / 1e6
        print(f"\n{fault}/{mode}: a's processes all ended {took:.0f} ms after the fault, "
              f"{gap:.0f} ms before b's first began")
        if fault == "sigterm":
            assert a.wait(15) == 128 + signal.SIGTERM, a.err
        if fault in ("partition", "sigstop"):
            # a comes back as a follower: nothing of it may start while b leads.
            wait_queue(capi, zk.connect_string, zk_path, 2, timeout=20)
            assert a.proc.poll() is None, a.err
        b.proc.send_signal(signal.SIGTERM)
        assert b.wait(15) == 128 + signal.SIGTERM, b.err
        watcher.wait(lambda: watcher.all_ended("b"), 10, "the end of b's processes")
        watcher.assert_no_overlap()


def test_daemon_left_by_a_finished_command_dies_before_the_next_leader(
        zk, zk_path, zkelect_bin, test_env, build_dir, watcher, runs):
    """`CMD --daemon` style: CMD exits 0 right after daemonizing. run kills the
    daemon, resigns and exits 0; the next leader starts only afterwards."""
    a = start_run(runs, zkelect_bin, test_env, zk.connect_string, zk_path, "a",
                  "daemon-exit", watcher)
    watcher.wait(lambda: len(watcher.of("a")) >= 2, 30, "a's processes")
    assert a.wait(20) == 0, a.err
    assert watcher.all_ended("a"), watcher.procs
    b = start_run(runs, zkelect_bin, test_env, zk.connect_string, zk_path, "b", "plain",
                  watcher)
    watcher.wait(lambda: watcher.started("b"), 20, "b's child")
    watcher.assert_no_overlap()
    b.proc.send_signal(signal.SIGTERM)
    assert b.wait(15) == 128 + signal.SIGTERM, b.err


def test_inherited_sigchld_ignore_does_not_hide_the_child(zk, zk_path, zkelect_bin, test_env):
    """With SIGCHLD ignored by whoever started run, the kernel would reap the
    child silently and run would lead forever with no job."""
    def ignore_chld():
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    r = subprocess.run([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                        zk_path, "--session-timeout-ms", str(SESSION_MS), "--", "sh", "-c",
                        "exit 7"],
                       env=test_env, capture_output=True, text=True, timeout=30,
                       preexec_fn=ignore_chld)
    assert r.returncode == 7, r.stderr


def test_final_library_error_ends_run(zk, zk_path, zkelect_bin, test_env):
    """An election path under an ephemeral node can never hold candidates:
    the library gives up, and run ends (exit 1) instead of waiting forever."""
    from kazoo.client import KazooClient
    kz = KazooClient(hosts=zk.connect_string)
    kz.start(timeout=15)
    try:
        kz.create(zk_path, b"", ephemeral=True, makepath=True)
        r = subprocess.run([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                            zk_path + "/under", "--session-timeout-ms", str(SESSION_MS), "--",
                            "true"],
                           env=test_env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, r.stderr
        assert "ephemeral" in r.stderr
    finally:
        kz.stop()
        kz.close()


def test_denied_election_ends_run_with_5(zk, zk_path, zkelect_bin, test_env):
    """An election path where the ACL lets us read but not create: the
    library gives up (ERROR EAUTH, then RESIGNED) and run exits 5, the code
    of "permission denied" in every subcommand."""
    from kazoo.client import KazooClient
    from kazoo.security import make_acl
    kz = KazooClient(hosts=zk.connect_string)
    kz.start(timeout=15)
    try:
        kz.ensure_path(zk_path.rsplit("/", 1)[0])  # open parents
        kz.create(zk_path, b"", acl=[make_acl("world", "anyone", read=True)])
        r = subprocess.run([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                            zk_path, "--session-timeout-ms", str(SESSION_MS), "--", "true"],
                           env=test_env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 5, r.stderr
        assert "ZKELECT_EAUTH" in r.stderr
    finally:
        kz.stop()
        kz.close()


def test_kill_path_does_not_wait_on_a_full_stderr(zk, zk_path, zkelect_bin, test_env,
                                                  watcher, runs):
    """CMD fills the stderr it shares with run and nobody reads it; an operator
    deletes the leader's node: the child is killed all the same (run's
    messages would block on stderr)."""
    from kazoo.client import KazooClient
    env = dict(test_env, TREECHILD_SOCK=watcher.path)
    script = ("import os,sys,subprocess;"
              f"subprocess.Popen([sys.executable, {str(CHILD)!r}, 'plain']);"
              "[os.write(2, b'x' * 65536) for _ in range(1000)]")
    p = subprocess.Popen([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                          zk_path, "--id", "a", "--session-timeout-ms", str(SESSION_MS), "--",
                          sys.executable, "-c", script],
                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        watcher.wait(lambda: watcher.started("a"), 30, "a's child")
        capi = CApi(Path(test_env["ZKELECT_BUILD_DIR"]))
        node = wait_queue(capi, zk.connect_string, zk_path, 1)[0][2]
        kz = KazooClient(hosts=zk.connect_string)
        kz.start(timeout=15)
        try:
            kz.delete(f"{zk_path}/{node}")
        finally:
            kz.stop()
            kz.close()
        watcher.wait(lambda: watcher.all_ended("a"), 10, "the child's end while stderr is full")
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.stderr.close()
        p.wait(10)


FILL_STDERR = r"""
import fcntl, os, sys
# Fill the stderr pipe we share with run (nobody reads it), then make the
# description blocking again, so that run's own writes block, not fail.
fl = fcntl.fcntl(2, fcntl.F_GETFL)
fcntl.fcntl(2, fcntl.F_SETFL, fl | os.O_NONBLOCK)
try:
    for _ in range(100000):
        os.write(2, b"x" * 4096)
except BlockingIOError:
    pass
fcntl.fcntl(2, fcntl.F_SETFL, fl)
sys.stdout.write("full\n")
sys.stdout.flush()
if sys.argv[1] == "exit":
    os._exit(7)
os.close(1)
os.kill(os.getpid(), 19)  # SIGSTOP: held until run ends it
"""


@pytest.mark.parametrize("end", ["sigterm", "command-exits"])
def test_exit_does_not_wait_on_a_full_stderr(zk, zk_path, zkelect_bin, test_env, end):
    """Nobody reads run's stderr (a pipe filled up): run still exits, with
    the command's status or 128+N, within a bound, its last lines dropped."""
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    p = subprocess.Popen([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                          zk_path, "--session-timeout-ms", str(SESSION_MS), "--grace", "1000",
                          "--", sys.executable, "-c", FILL_STDERR,
                          "exit" if end == "command-exits" else "stay"],
                         env=test_env, stdin=subprocess.DEVNULL, stdout=w_out, stderr=w_err,
                         start_new_session=True)
    os.close(w_out)
    os.close(w_err)
    try:
        r, _, _ = select.select([r_out], [], [], 30)
        assert r and os.read(r_out, 100) == b"full\n", "the command did not fill stderr"
        if end == "sigterm":
            time.sleep(0.3)  # run's log thread is blocked on the full pipe by now
            p.send_signal(signal.SIGTERM)
        want = 7 if end == "command-exits" else 128 + signal.SIGTERM
        try:
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        assert rc == want, f"run did not exit within 10 s (rc {rc}) with its stderr unread"
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(10)
        os.close(r_out)
        os.close(r_err)


ZOMBIE_CMD = r"""
import os, subprocess, sys, time
# Orphans that exit soon: zombies until whoever adopted them reaps them.
# (The shells themselves are our own children, and reaped here.)
for _ in range(3):
    subprocess.run(["setsid", "sh", "-c", "sleep 0.1 & exit 0"])

def census():
    # (sleeping sleeps, zombies) in this PID namespace
    sleeping = zombies = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    head, rest = f.read().rsplit(")", 1)
            except OSError:
                continue
            state = rest.split()[0]
            zombies += state == "Z"
            sleeping += state != "Z" and head.endswith("(sleep")
    return sleeping, zombies

# Until the orphans have exited and been reaped, or 10 s.
deadline = time.monotonic() + 10
while True:
    sleeping, zombies = census()
    if (not sleeping and not zombies) or time.monotonic() > deadline:
        break
    time.sleep(0.05)
sys.exit(10 + zombies)
"""


def test_orphans_are_reaped_when_run_is_pid_1(zk, zk_path, zkelect_bin, test_env):
    """In a container, run is PID 1 and orphans of its command are adopted by
    it (or its keeper): they must be reaped, not left as zombies."""
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a PID namespace here: {probe.stderr.decode().strip()}")
    r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", str(zkelect_bin), "run",
                        "--connect", zk.connect_string, "--path", zk_path,
                        "--session-timeout-ms", str(SESSION_MS), "--",
                        sys.executable, "-c", ZOMBIE_CMD],
                       env=test_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 10, f"{r.returncode - 10} zombies; {r.stderr}"


def test_run_refuses_a_proc_of_another_pid_namespace(zk, zk_path, zkelect_bin, test_env,
                                                     tmp_path):
    """In a new PID namespace whose /proc is still the host's, the pids run
    reads from /proc are not its own: its tree walk would signal unrelated
    processes of the host. run refuses to start (exit 1) before anything."""
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a PID namespace here: {probe.stderr.decode().strip()}")
    marker = tmp_path / "ran"
    r = subprocess.run(["unshare", "--pid", "--fork", str(zkelect_bin), "run",
                        "--connect", zk.connect_string, "--path", zk_path,
                        "--session-timeout-ms", str(SESSION_MS), "--",
                        "touch", str(marker)],
                       env=test_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and not marker.exists(), (r.returncode, r.stderr)
    assert "/proc" in r.stderr, r.stderr
    capi = CApi(Path(test_env["ZKELECT_BUILD_DIR"]))
    assert not capi.participants(zk.connect_string, zk_path), "run volunteered"


def children_of(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def test_keeper_killed_under_the_command_takes_the_tree_with_it(
        zk, zk_path, zkelect_bin, test_env, watcher, runs):
    """Someone SIGKILLs the keeper: its orphans (a daemonized grandchild
    included) come to run, which kills them all, resigns and exits 1."""
    a = start_run(runs, zkelect_bin, test_env, zk.connect_string, zk_path, "a", "daemon",
                  watcher)
    watcher.wait(lambda: len(watcher.of("a")) >= 2, 30, "a's processes")
    keepers = children_of(a.pid)
    assert len(keepers) == 1, keepers
    with open(f"/proc/{keepers[0]}/comm") as f:
        assert f.read().strip() == "zkelect-keeper"
    os.kill(keepers[0], signal.SIGKILL)
    watcher.wait(lambda: watcher.all_ended("a"), 10, "the end of a's processes")
    assert a.wait(15) == 1, a.err
    assert any("keeper process died" in l for l in a.err), a.err


def proc_stat(pid):
    """(state, ppid, pgrp, session) of pid, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            f = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return f[0], int(f[1]), int(f[2]), int(f[3])


def wait_children(pid, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        kids = children_of(pid)
        if kids:
            return kids
        assert time.monotonic() < deadline, f"no {what} below {pid}"
        time.sleep(0.02)


def keeper_of(run_pid):
    keepers = []
    for k in children_of(run_pid):
        try:
            with open(f"/proc/{k}/comm") as f:
                if f.read().strip() == "zkelect-keeper":
                    keepers.append(k)
        except OSError:
            pass
    assert len(keepers) == 1, (run_pid, keepers)
    return keepers[0]


def kill_session(sid, sig):
    """What `pkill -s SID` does: sig to every process of the session."""
    hit = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(int(d))
            if st and st[3] == sid and st[0] != "Z":
                try:
                    os.kill(int(d), sig)
                    hit.append(int(d))
                except ProcessLookupError:
                    pass
    return hit


# Signals that reach run and its keeper together (their process group, their
# session, `timeout -s KILL`), or each alone. None may leave a process of the
# command running once another participant can lead.
GROUP_FAULTS = ["group-kill", "group-stop", "session-kill", "timeout-kill", "run-kill",
                "keeper-kill"]


@pytest.mark.fault
@pytest.mark.parametrize("fault", GROUP_FAULTS)
def test_group_signals_never_leave_the_command_running(zk, zk_path, zkelect_bin, test_env,
                                                       build_dir, watcher, runs, fault):
    capi = CApi(build_dir)
    # timeout(1) makes its own process group and, when SIGALRM says its time
    # is up, SIGKILLs the command and then that whole group.
    prefix = ["timeout", "-s", "KILL", "600"] if fault == "timeout-kill" else []
    a = start_run(runs, zkelect_bin, test_env, zk.connect_string, zk_path, "a", "daemon",
                  watcher, "--grace", 60000, prefix=prefix)
    watcher.wait(lambda: len(watcher.of("a")) >= 2, 30, "a's processes")
    run_pid = wait_children(a.pid, 10, "zkelect run")[0] if prefix else a.pid
    keeper = keeper_of(run_pid)
    b = start_run(runs, zkelect_bin, test_env, zk.connect_string, zk_path, "b", "plain",
                  watcher, "--grace", 1500)
    wait_queue(capi, zk.connect_string, zk_path, 2)
    assert not watcher.of("b")

    pgrp, sid = os.getpgid(run_pid), os.getsid(run_pid)
    if fault == "group-kill":
        os.killpg(pgrp, signal.SIGKILL)
    elif fault == "group-stop":
        os.killpg(pgrp, signal.SIGSTOP)
    elif fault == "session-kill":
        kill_session(sid, signal.SIGKILL)
    elif fault == "timeout-kill":
        os.kill(a.pid, signal.SIGALRM)
    elif fault == "run-kill":
        os.kill(run_pid, signal.SIGKILL)
    elif fault == "keeper-kill":
        os.kill(keeper, signal.SIGKILL)
    try:
        # b leads only once a's session expired (or a resigned): a group
        # stopped until then was stopped past the session timeout.
        watcher.wait(lambda: watcher.started("b"), 4 * SESSION_MS / 1000 + 20, "b's child")
        watcher.wait(lambda: watcher.all_ended("a"), 10, "the end of a's processes")
        watcher.assert_no_overlap()
        if fault == "group-stop":
            assert proc_stat(run_pid)[0] == "T", proc_stat(run_pid)
    finally:
        if fault == "group-stop":
            os.killpg(pgrp, signal.SIGCONT)
    if fault == "group-stop":
        # Resumed, a queues behind b and starts nothing while b leads.
        wait_queue(capi, zk.connect_string, zk_path, 2, timeout=20)
        assert a.proc.poll() is None, a.err
        time.sleep(0.5)
    b.proc.send_signal(signal.SIGTERM)
    assert b.wait(15) == 128 + signal.SIGTERM, b.err
    watcher.wait(lambda: watcher.all_ended("b"), 10, "the end of b's processes")
    watcher.assert_no_overlap()


def tmux(sock, *args, check=True):
    r = subprocess.run(["tmux", "-S", sock, *args], capture_output=True, text=True, timeout=20)
    assert not check or r.returncode == 0, (args, r.stderr)
    return r.stdout


@pytest.mark.fault
def test_ctrl_z_in_an_interactive_shell(zk, zk_path, zkelect_bin, test_env, build_dir,
                                        watcher, runs):
    """`zkelect run` as a job of an interactive bash in a terminal (tmux);
    Ctrl-Z sends SIGTSTP to the terminal's foreground process group. The
    command must not run on once the job is suspended: another participant
    is elected when the suspended run's session expires."""
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed (./dev installs it)")
    capi = CApi(build_dir)
    sock = os.path.join(watcher.dir, "tmux")
    env = dict(test_env, TREECHILD_SOCK=watcher.path, PS1="$ ", HISTFILE="/dev/null")
    subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "200",
                    "-y", "50", "bash --norc --noprofile -i"], env=env, check=True, timeout=20)
    try:
        shell = int(tmux(sock, "display-message", "-p", "#{pane_pid}").strip())
        line = " ".join(shlex.quote(str(w)) for w in run_argv(
            zkelect_bin, zk.connect_string, zk_path, "a", "daemon", "--grace", 60000))
        tmux(sock, "send-keys", "-l", line)
        tmux(sock, "send-keys", "Enter")
        watcher.wait(lambda: len(watcher.of("a")) >= 2, 30, "a's processes")
        run_pid = wait_children(shell, 10, "zkelect run")[0]
        b = start_run(runs, zkelect_bin, test_env, zk.connect_string, zk_path, "b", "plain",
                      watcher, "--grace", 1500)
        wait_queue(capi, zk.connect_string, zk_path, 2)
        tmux(sock, "send-keys", "C-z")
        try:
            watcher.wait(lambda: watcher.started("b"), 4 * SESSION_MS / 1000 + 20, "b's child")
            watcher.wait(lambda: watcher.all_ended("a"), 10, "the end of a's processes")
            watcher.assert_no_overlap()
            # The job was suspended (not ended) by the Ctrl-Z.
            assert proc_stat(run_pid)[0] == "T", (proc_stat(run_pid),
                                                  tmux(sock, "capture-pane", "-p"))
        finally:
            try:
                os.kill(run_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        b.proc.send_signal(signal.SIGTERM)
        assert b.wait(15) == 128 + signal.SIGTERM, b.err
        watcher.assert_no_overlap()
    finally:
        tmux(sock, "kill-server", check=False)

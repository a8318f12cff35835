"""`zkelect run` on a transfer and on a priority takeover: the old leader's
command gets its whole shutdown (up to --grace) and the new leader's starts
only once it is gone (issue 50, finding 0; docs/semantics.md, "Draining
before the hand-over").

The job is a Python script that appends to one log file, stamped with
CLOCK_REALTIME ns:
  start <pid> <id> <ns>
  term <pid> <id> <ns>     (SIGTERM arrived: it shuts down for 0.3 s)
  stop <pid> <id> <ns>     (written just before it exits)
"""

import subprocess
import sys
import time

import pytest

from bed.faultproxy import ProxiedEnsemble
from bed.joblog import JobLog
from bed.toolutil import CApi, Proc, pid_alive, wait_gone

SESSION_MS = 4000
GRACE_MS = 5000
SHUTDOWN_S = 0.3

JOB = r"""
import os, signal, sys, time
log = sys.argv[1]
def w(kind):
    with open(log, "a") as f:
        f.write(f"{kind} {os.getpid()} {os.environ['ZKELECT_ID']} {time.time_ns()}\n")
def term(*_):
    w("term")
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else %r)
    w("stop")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
w("start")
for _ in range(12000):
    time.sleep(0.05)
""" % SHUTDOWN_S


class Log(JobLog):
    def parse(self, f):
        if len(f) == 4 and f[0] in ("start", "term", "stop"):
            return {"kind": f[0], "pid": int(f[1]), "id": f[2], "ns": int(f[3])}
        return None

    def of(self, kind, zid):
        return [r for r in self.records() if r["kind"] == kind and r["id"] == zid]


@pytest.fixture
def job(tmp_path):
    p = tmp_path / "job.py"
    p.write_text(JOB)
    return p


@pytest.fixture
def log(tmp_path):
    return Log(tmp_path / "jobs.log")


@pytest.fixture
def runs():
    made = []
    yield made
    for p in made:
        p.kill()


def start_run(runs, zkelect_bin, env, hosts, path, zid, job, log, *opts, shutdown_s=SHUTDOWN_S,
              grace_ms=GRACE_MS):
    p = Proc([zkelect_bin, "run", "--connect", hosts, "--path", path, "--id", zid,
              "--session-timeout-ms", SESSION_MS, "--grace", grace_ms, *opts, "--",
              sys.executable, job, log.path, str(shutdown_s)], env, stdin=False)
    runs.append(p)
    return p


def wait_line_of(capi, hosts, path, ids, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        ps = [x[0] for x in capi.participants(hosts, path) or []]
        if ps == ids:
            return
        assert time.monotonic() < deadline, f"the line never became {ids}: {ps}"
        time.sleep(0.05)


def assert_drained_then_started(log, old, new, t_asked_ns):
    """old's job shut down in full before new's job started, within
    --grace plus the hand-over."""
    start = log.wait(lambda r: r["kind"] == "start" and r["id"] == new, GRACE_MS / 1000 + 15,
                     f"{new}'s job")
    term = log.of("term", old)
    stop = log.of("stop", old)
    assert term, f"{old}'s job never got SIGTERM: {log.records()}"
    assert stop, (f"{old}'s job was killed before it finished its {SHUTDOWN_S} s shutdown: "
                  f"{log.records()}")
    assert wait_gone(stop[0]["pid"], 5)
    assert start["ns"] > stop[0]["ns"], (
        f"{new}'s job started {(stop[0]['ns'] - start['ns']) / 1e6:.1f} ms before {old}'s job "
        f"exited: {log.records()}")
    # The shutdown took 0.3 s of the 5 s grace: the hand-over follows it,
    # it does not wait out the grace.
    after_ms = (start["ns"] - stop[0]["ns"]) / 1e6
    assert after_ms < 2000, (after_ms, log.records())
    assert (start["ns"] - t_asked_ns) / 1e6 < GRACE_MS + 3000, log.records()
    assert len(log.of("start", old)) == 1 and len(log.of("start", new)) == 1, log.records()


def test_transfer_drains_the_old_job_before_the_new_one_starts(zk, zk_path, zkelect_bin,
                                                               test_env, job, log, build_dir,
                                                               runs):
    hosts = zk.connect_string
    capi = CApi(build_dir)
    start_run(runs, zkelect_bin, test_env, hosts, zk_path, "a", job, log)
    log.wait(lambda r: r["kind"] == "start" and r["id"] == "a", 20, "a's job")
    start_run(runs, zkelect_bin, test_env, hosts, zk_path, "b", job, log)
    wait_line_of(capi, hosts, zk_path, ["a", "b"])
    start_run(runs, zkelect_bin, test_env, hosts, zk_path, "c", job, log)
    wait_line_of(capi, hosts, zk_path, ["a", "b", "c"])

    t_asked = time.time_ns()
    r = subprocess.run([str(zkelect_bin), "transfer", "--connect", hosts, "--path", zk_path,
                        "--to", "c", "--timeout", "5000"], env=test_env, capture_output=True,
                       text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "transferred: c\n"), r
    assert_drained_then_started(log, "a", "c", t_asked)
    assert not log.of("start", "b") and not log.of("stop", "c"), log.records()


def test_priority_takeover_drains_the_old_job_first(zk, zk_path, zkelect_bin, test_env, job,
                                                    log, build_dir, runs):
    hosts = zk.connect_string
    capi = CApi(build_dir)
    start_run(runs, zkelect_bin, test_env, hosts, zk_path, "a", job, log)
    log.wait(lambda r: r["kind"] == "start" and r["id"] == "a", 20, "a's job")
    t_asked = time.time_ns()
    # A preferred host comes back: after its hold-down it asks for the lead.
    start_run(runs, zkelect_bin, test_env, hosts, zk_path, "p", job, log, "--priority", "5",
              "--set", "election.priority.holddown.ms=500")
    assert_drained_then_started(log, "a", "p", t_asked)
    wait_line_of(capi, hosts, zk_path, ["p", "a"])


def test_a_drain_whose_session_is_in_doubt_kills_before_the_next_leader(
        zk, zk_path, zkelect_bin, test_env, job, log, build_dir, runs):
    """The old leader's job takes 30 s to stop, within a 60 s --grace; its
    run is cut off during the drain. The node may then go with the session:
    zkelect_is_draining() turns 0 with the lease and the job is killed,
    before the new leader's job starts."""
    hosts = zk.connect_string
    capi = CApi(build_dir)
    with ProxiedEnsemble([zk.client_port(i) for i in range(zk.n)]) as prox:
        start_run(runs, zkelect_bin, test_env, prox.connect_string, zk_path, "a", job, log,
                  "--set", "zk.hosts.follow=false", shutdown_s=30, grace_ms=60000)
        log.wait(lambda r: r["kind"] == "start" and r["id"] == "a", 20, "a's job")
        start_run(runs, zkelect_bin, test_env, hosts, zk_path, "b", job, log)
        wait_line_of(capi, hosts, zk_path, ["a", "b"])
        asker = subprocess.Popen([str(zkelect_bin), "transfer", "--connect", hosts, "--path",
                                  zk_path, "--to", "b", "--timeout", "5000"], env=test_env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            term = log.wait(lambda r: r["kind"] == "term" and r["id"] == "a", 20,
                            "a's job's SIGTERM")
            prox.blackhole()
            # The job's death, seen by polling its pid (it gets SIGKILL: it
            # writes nothing more).
            died_ns = None
            deadline = time.monotonic() + SESSION_MS / 1000 + 10
            while time.monotonic() < deadline and died_ns is None:
                if not pid_alive(term["pid"]):
                    died_ns = time.time_ns()
                time.sleep(0.005)
            assert died_ns is not None, "a's job outlived its session's lease"
            start = log.wait(lambda r: r["kind"] == "start" and r["id"] == "b",
                             SESSION_MS / 1000 + 15, "b's job")
            assert start["ns"] > died_ns, (start["ns"] - died_ns) / 1e6
            assert not log.of("stop", "a"), log.records()
        finally:
            asker.kill()
            asker.wait(10)

"""The heir's claim needs a lease too (docs/semantics.md, "The heir claims
without a round trip ... it already holds a valid lease").

The heir is stopped (SIGSTOP) while it holds a lease; the leader resigns, so
the notification of its node's deletion waits in the stopped heir's socket;
the heir's session expires, its node goes, and the third candidate is
elected. When the heir resumes, the first thing its ZooKeeper client hands
over is that old notification: an heir that claimed on it without a lease in
hand would lead beside the third candidate until it learned of its expiry.
Samples come from inside every process (paused_leader.c, merged on
CLOCK_MONOTONIC by inproc.py).
"""

import os
import signal
import time

import pytest

from bed.faultutil import PausedLeader, report
from inproc import one_runs, run_overlaps

pytestmark = [pytest.mark.fault, pytest.mark.slow]

T = 2000


def test_stopped_heir_does_not_claim_on_a_stale_notification(zk, zk_path, test_env,
                                                            paused_leader_bin):
    procs = {}
    try:
        for pid in ("1", "2", "3"):
            p = PausedLeader(paused_leader_bin, zk.connect_string, zk_path, pid, T, test_env)
            procs[pid] = p
            p.wait(lambda w: w[0] == "READY", 15, f"READY of {pid}")
            p.wait_event("ELECTED" if pid == "1" else "FOLLOWING", 15)
        leader, heir, third = procs["1"], procs["2"], procs["3"]
        leader.wait(lambda w: w[:2] == ["FLIP", "1"], 5, "is_leader 1 in the leader")
        m_heir, m_third = heir.mark(), third.mark()
        t_stop = time.monotonic_ns()
        os.kill(heir.proc.pid, signal.SIGSTOP)
        try:
            leader.proc.stdin.write("resign\n")
            leader.wait_event("RESIGNED", 10)
            # the heir's session expires, its node goes: the third leads
            third.wait_event("ELECTED", 3 * T / 1000 + 10, since=m_third)
            third.wait(lambda w: w[:2] == ["FLIP", "1"], 5, "is_leader 1 in the third",
                       since=m_third)
        finally:
            t_cont = time.monotonic_ns()
            os.kill(heir.proc.pid, signal.SIGCONT)
        heir.wait_event("EXPIRED", 10, since=m_heir)
        # after its new session it queues again behind the third
        heir.wait_event("FOLLOWING", 15, since=m_heir)
    finally:
        for p in procs.values():
            p.close()
    heir_after = [w[1] for w in heir.lines[m_heir:] if w[0] == "EVENT"]
    runs = {pid: one_runs(p.lines) for pid, p in procs.items()}
    report("stopped_heir_stale_notification", session_timeout_ms=T,
           stopped_ms=round((t_cont - t_stop) / 1e6, 1), heir_events_after_resume=heir_after)
    assert "ELECTED" not in heir_after, \
        f"the heir claimed on the stale notification without a lease: {heir_after}"
    heir_ones = [r for r in runs["2"] if r[1] > t_stop]
    assert not heir_ones, f"the heir answered is_leader 1 after its stop: {heir_ones}"
    bad = run_overlaps(runs)
    assert not bad, f"two processes answered is_leader 1 at once: {bad[:3]}"

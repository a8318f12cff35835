"""Churn seen from inside the candidates: every candidate process samples its
own zkelect_is_leader() (tests/fault/paused_leader.c), and the samples of all
processes are merged on CLOCK_MONOTONIC after the run (tests/fault/inproc.py).

Unlike tests/fault/test_churn.py, whose short cut-offs never outlast a
session, the leader is here cut off from ZooKeeper for 2-3 session timeouts:
the quorum expires its session and elects the next candidate while the old
leader still runs and samples. That is where two leaders could exist; the
test asserts that it happened at least once (a term began inside a cut-off of
the previous leader) and that no two processes ever answered 1 at once.
Resigns, SIGKILLs, short blackholes and resets are mixed in.

It also checks every event the library gave each process: ELECTED and
DEPOSED alternate (DEPOSED exactly once per ELECTED), and a resigning leader
gets DEPOSED(resigned).

ZKELECT_CHURN_SEED picks the random schedule (printed in the report).
"""

import os
import random
import threading
import time

import pytest

from bed.faultproxy import ProxiedEnsemble
from bed.faultutil import PausedLeader, children, report, wait_for
from inproc import alternation_errors, leader_events, one_runs, run_overlaps

pytestmark = [pytest.mark.fault, pytest.mark.soak, pytest.mark.slow]

T = 1200
PROCS = 4
DURATION_S = 25.0
MAX_KILLS = 2
DEPOSED_REASONS = {"lease_ended", "resigned", "expired", "suspended", "node_deleted"}


class Proc:
    def __init__(self, binary, hosts_ports, path, pid, env):
        self.pe = ProxiedEnsemble(hosts_ports)
        self.id = pid
        self.p = PausedLeader(binary, self.pe.connect_string, path, pid, T, env, max_s=180)
        self.killed_mono = None
        self.cuts = []            # [(start_mono, end_mono or None)]

    def lines(self):
        with self.p.cv:
            return list(self.p.lines)

    def is_one(self):
        """The value of this process's last reported flip."""
        for w in reversed(self.lines()):
            if w and w[0] == "FLIP":
                return w[1] == "1"
        return False

    def cut_now(self):
        return bool(self.cuts) and self.cuts[-1][1] is None


def test_churn_with_in_process_samplers(zk, zk_path, test_env, paused_leader_bin, kz):
    seed = int(os.environ.get("ZKELECT_CHURN_SEED", str(time.time_ns() % 1_000_000)))
    rng = random.Random(seed)
    ports = [zk.client_port(i) for i in range(zk.n)]
    procs = []
    lock = threading.Lock()
    timers = []
    counts = {"cutoff": 0, "resign": 0, "kill": 0, "blip": 0, "reset": 0}
    next_id = [1]

    def launch():
        pr = Proc(paused_leader_bin, ports, zk_path, str(next_id[0]), test_env)
        next_id[0] += 1
        procs.append(pr)
        pr.p.wait(lambda w: w[0] == "READY", 15, f"READY of {pr.id}")
        return pr

    def later(delay_s, fn):
        t = threading.Timer(delay_s, fn)
        t.daemon = True
        timers.append(t)
        t.start()

    def heal_cut(pr):
        with lock:
            if pr.cut_now():
                pr.cuts[-1] = (pr.cuts[-1][0], time.monotonic_ns())
                pr.pe.heal()

    def live():
        return [x for x in procs if x.killed_mono is None]

    leader = None
    try:
        for _ in range(PROCS):
            launch()
        wait_for(lambda: any(x.is_one() for x in procs) or None, 15, "a first leader")
        t_end = time.monotonic() + DURATION_S
        while time.monotonic() < t_end:
            time.sleep(rng.uniform(0.3, 0.8))        # pacing of the schedule, not a wait
            leaders = [x for x in live() if x.is_one() and not x.cut_now()]
            what = rng.choices(["cutoff", "resign", "kill", "blip", "reset"], [4, 3, 1, 2, 1])[0]
            if what in ("cutoff", "resign", "kill") and not leaders:
                continue
            if what == "cutoff" and any(x.cut_now() for x in procs):
                what = "resign"
            if what == "kill" and counts["kill"] >= MAX_KILLS:
                what = "resign"
            target = leaders[0] if what in ("cutoff", "resign", "kill") else rng.choice(live())
            if what == "cutoff":
                with lock:
                    target.pe.blackhole(discard=rng.random() < 0.5)
                    target.cuts.append((time.monotonic_ns(), None))
                later(rng.uniform(2 * T, 3 * T) / 1000, lambda pr=target: heal_cut(pr))
            elif what == "resign":
                target.p.proc.stdin.write("resign\n")
                later(rng.uniform(0.3, 1.0),
                      lambda pr=target: pr.killed_mono is None and pr.p.proc.stdin.write("volunteer\n"))
            elif what == "kill":
                target.p.proc.kill()
                target.p.proc.wait(10)
                target.killed_mono = time.monotonic_ns()
                with lock:
                    if target.cut_now():
                        target.cuts[-1] = (target.cuts[-1][0], target.killed_mono)
                launch()
            elif what == "blip":
                if not target.cut_now():
                    target.pe.blackhole(discard=rng.random() < 0.5)
                    later(rng.uniform(0.1, 0.5) * T / 1000, lambda pr=target: (
                        None if pr.cut_now() else pr.pe.heal()))
            elif what == "reset":
                if not target.cut_now():
                    target.pe.reset()
            counts[what] += 1
        for t in timers:
            t.cancel()
        for t in timers:
            t.join(5)
        t_calm = time.monotonic_ns()
        for x in live():
            heal_cut(x)
            x.pe.heal()
            x.p.proc.stdin.write("volunteer\n")
        live_ids = sorted(x.id for x in live())

        last_ask = {}

        def settled():
            ids = sorted(d for _, _, d in children(kz, zk_path))
            if ids != live_ids:
                # A volunteer sent while the process's resign was still being
                # carried out (a cut-off delays its delete) is refused with
                # ESTATE: ask again, now and then, until it has its node.
                now = time.monotonic()
                for x in live():
                    if x.id not in ids and now - last_ask.get(x.id, 0) > 0.5:
                        last_ask[x.id] = now
                        x.p.proc.stdin.write("volunteer\n")
                return None
            ones = [x for x in live() if x.is_one()]
            return ones[0] if len(ones) == 1 else None
        # A failure to settle is reported after the overlap check below:
        # two processes answering 1 at once is the more telling finding.
        try:
            leader = wait_for(settled, 3 * T / 1000 + 15, "one leader and a node per live process")
        except AssertionError as e:
            unsettled = e
        else:
            unsettled = None
        t_settled = time.monotonic_ns()
    finally:
        for t in timers:
            t.cancel()
        # The leader quits last: a follower's quit changes no leadership, so
        # every other process has all its events in its output when it ends
        # (the sampler stops listening before the library's DEPOSED(closed)).
        for x in sorted(procs, key=lambda x: x is leader):
            x.p.close()
            x.pe.close()

    runs = {x.id: one_runs(x.lines(), x.killed_mono) for x in procs}
    # A term that began inside a cut-off of the process that led when the
    # cut-off began: the case where a lease that trusted the wrong things
    # would give two leaders.
    terms_in_cutoff = 0
    for x in procs:
        for c0, c1 in x.cuts:
            c1 = c1 or t_settled
            if not any(a <= c0 <= b for a, b in runs[x.id]):
                continue
            if any(c0 < a < c1 for y in procs if y is not x for a, _ in runs[y.id]):
                terms_in_cutoff += 1
    events = {x.id: leader_events(x.lines()) for x in procs}
    reasons = {}
    for ev in events.values():
        for typ, r in ev:
            if typ == "DEPOSED":
                reasons[r] = reasons.get(r, 0) + 1
    report("churn_in_process_samplers", seed=seed, session_timeout_ms=T,
           duration_s=DURATION_S, actions=counts, terms=sum(len(r) for r in runs.values()),
           cutoffs_of_a_leader_with_a_new_term=terms_in_cutoff, deposed_reasons=reasons,
           calm_to_settled_ms=round((t_settled - t_calm) / 1e6, 1),
           final_leader=leader.id if leader else None,
           processes=len(procs))
    bad = run_overlaps(runs)
    assert not bad, f"two processes answered is_leader 1 at once (monotonic ns): {bad[:3]}"
    if unsettled is not None:
        raise unsettled
    assert counts["cutoff"] >= 1, "the schedule cut no leader off: no case for the check"
    assert terms_in_cutoff >= 1, \
        "no term began while the previous leader was cut off: the check saw no risky handover"
    for x in procs:
        errs = alternation_errors(events[x.id], may_end_leading=True)
        assert not errs, f"process {x.id}: {errs}: {events[x.id]}"
        ends_leading = events[x.id] and events[x.id][-1][0] == "ELECTED"
        assert not ends_leading or x.killed_mono is not None or x is leader, \
            f"process {x.id} ended leading, but it was not the final leader: {events[x.id]}"
    assert set(reasons) <= DEPOSED_REASONS, reasons
    if counts["resign"]:
        assert reasons.get("resigned", 0) >= 1, f"resigns sent to leaders, no DEPOSED(resigned): {reasons}"

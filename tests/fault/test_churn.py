"""Issue 3: churn. 20 candidates over 5 `zkelect candidate` processes, each
behind its own fault proxies, for a bounded time: random resigns, partitions
(short blackholes), resets, delays and SIGKILLs (a replacement process joins
each time). Afterwards: exactly one leader, no node left of a process that
quit or was killed, and no overlap in the sampled history.

ZKELECT_CHURN_SEED picks the random schedule (printed in the report).
"""

import os
import random
import threading
import time

import pytest

from bed.candidates import Sampler
from bed.faultproxy import ProxiedEnsemble
from bed.faultutil import check_safety, children, lease_ms, report, wait_for

pytestmark = [pytest.mark.fault, pytest.mark.soak, pytest.mark.slow]

T = 2000
PROCS = 5
PER_PROC = 4
DURATION_S = 20.0
MAX_KILLS = 3


def test_churn(zk, zk_path, spawn, kz):
    seed = int(os.environ.get("ZKELECT_CHURN_SEED", str(time.time_ns() % 1_000_000)))
    rng = random.Random(seed)
    proxy_sets = []
    live = []             # [(Candidate, ProxiedEnsemble)]
    dead = []
    timers = []
    counts = {"resign": 0, "blackhole": 0, "reset": 0, "delay": 0, "kill": 0}
    next_first = [1]

    def launch():
        pe = ProxiedEnsemble([zk.client_port(i) for i in range(zk.n)])
        proxy_sets.append(pe)
        c = spawn(pe.connect_string, zk_path, next_first[0], T, count=PER_PROC)
        next_first[0] += 10
        for pid in c.ids:
            c.wait_event("CONNECTED", pid, 15)
        c.send("join")
        live.append((c, pe))
        return c

    def later(delay_s, fn):
        t = threading.Timer(delay_s, fn)
        t.daemon = True
        timers.append(t)
        t.start()

    sampler = None
    try:
        for _ in range(PROCS):
            launch()
        sampler = Sampler([(c, pid) for c, _ in live for pid in c.ids], period=0.002).start()
        wait_for(lambda: sum(len(c.events("LEADER")) for c, _ in live) >= 1 or None, 15,
                 "a first leader")
        t_end = time.monotonic() + DURATION_S
        while time.monotonic() < t_end:
            time.sleep(rng.uniform(0.15, 0.5))        # pacing of the schedule, not a wait
            c, pe = rng.choice(live)
            # half the faults hit the process of the current leader
            lead = [(x, q) for x, q in live for p in x.ids
                    if sampler.samples[p] and sampler.samples[p][-1][2] == 1]
            if lead and rng.random() < 0.5:
                c, pe = lead[0]
            what = rng.choices(["resign", "blackhole", "reset", "delay", "kill"],
                               [4, 2, 2, 2, 1])[0]
            if what == "kill" and counts["kill"] >= MAX_KILLS:
                what = "resign"
            if what == "resign":
                # mostly the leader (resign is a no-op for a follower)
                leaders = [(x, p) for x, _ in live for p in x.ids
                           if sampler.samples[p] and sampler.samples[p][-1][2] == 1]
                x, p = leaders[0] if leaders and rng.random() < 0.8 else \
                    (c, rng.choice(c.ids))
                x.send(f"resign {p}")
            elif what == "blackhole":
                pe.blackhole(discard=rng.random() < 0.5)
                later(rng.uniform(0.2, 1.4), pe.heal)
            elif what == "reset":
                pe.reset()
            elif what == "delay":
                pe.delay(rng.uniform(10, 120), rng.uniform(0, 60))
                later(rng.uniform(0.5, 2.0), pe.heal)
            elif what == "kill":
                c.sigkill()
                live.remove((c, pe))
                dead.append(c)
                n = launch()
                for pid in n.ids:
                    sampler.add(n, pid)
            counts[what] += 1
        for t in timers:
            t.cancel()
        t_calm = time.time_ns()
        for _, pe in live:
            pe.heal()
        live_ids = [p for c, _ in live for p in c.ids]
        dead_ids = {p for c in dead for p in c.ids}

        def settled():
            nodes = children(kz, zk_path)
            ids = sorted(d for _, _, d in nodes)
            if ids != sorted(live_ids):       # killed sessions gone, everyone queued once
                return None
            led = [p for p in live_ids if sampler.samples[p][-3:] and
                   {v for s, _, v in sampler.samples[p][-3:]} == {1} and
                   sampler.samples[p][-3][0] > t_calm]
            return led[0] if len(led) == 1 else None
        leader = wait_for(settled, 3 * T / 1000 + 15, "one leader and only live nodes")
        t_settled = time.time_ns()
        sampler.wait_count(leader, 1, sampler.count(leader, 1) + 5, 5)
        others1 = [p for p in live_ids if p != leader and sampler.samples[p][-1][2] == 1]
        nodes_before_quit = len(children(kz, zk_path))
    finally:
        for t in timers:
            t.cancel()
        if sampler is not None:
            sampler.stop()
    all_cands = [c for c, _ in live] + dead
    terms = sum(len(c.events("LEADER")) for c in all_cands)
    lost = {}
    for c in all_cands:
        for e in c.events("LOST"):
            lost[e[3].get("reason")] = lost.get(e[3].get("reason"), 0) + 1
    report("churn", seed=seed, session_timeout_ms=T, lease_ms=lease_ms(T),
           duration_s=DURATION_S, actions=counts, leadership_terms=terms, lost_reasons=lost,
           calm_to_settled_ms=round((t_settled - t_calm) / 1e6, 1), final_leader=leader,
           samples=sum(len(v) for v in sampler.samples.values()))
    assert not others1, f"others answering 1 at the end: {others1}"
    assert nodes_before_quit == len(live_ids)
    assert not dead_ids & {d for _, _, d in children(kz, zk_path)}
    check_safety(sampler, all_cands)
    for c, pe in live:
        assert c.quit() == 0
    # quitting deletes the nodes: nothing is left of any closed handle
    wait_for(lambda: not children(kz, zk_path) or None, 10, "no node after every process quit")
    for pe in proxy_sets:
        pe.close()

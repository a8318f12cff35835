"""A seeded, reproducible run of leader pauses around the session timeout.

Three candidates, each a process that samples its own zkelect_is_leader()
in a tight loop (tests/fault/paused_leader.c) and reaches the ensemble
through its own fault proxies. Each round waits for a leader, then pauses
one of three things for 0.5 T to 1.5 T, chosen by the seed:

  process     the leader's process is stopped (SIGSTOP) and resumed
  connection  the leader's connections cross nothing (a blackhole)
  server      the ZooKeeper server the leader is connected to is stopped

and waits until some candidate leads again. Around 1 T the quorum may or may
not expire the paused leader's session; either way no two processes may
answer 1 at the same instant. The samples of all processes are merged on
CLOCK_MONOTONIC (tests/fault/inproc.py).

ZKELECT_SOAK_SEED replays a schedule; ZKELECT_SOAK_ROUNDS makes the run
longer (default 6 rounds in ./dev test). The report gives the rounds, which
pauses expired the session, and the gaps between consecutive terms of
different processes (the smallest is the safety margin seen).
"""

import os
import random
import signal
import time

import pytest

from bed.faultproxy import ProxiedEnsemble
from bed.faultutil import PausedLeader, report
from inproc import one_runs, run_overlaps

pytestmark = [pytest.mark.fault, pytest.mark.soak, pytest.mark.slow]

T = 1200
PROCS = 3


def _is_one(p):
    with p.cv:
        for w in reversed(p.lines):
            if w and w[0] == "FLIP":
                return w[1] == "1"
    return False


def _leader(procs, timeout, exclude=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ones = [n for n, (p, _) in procs.items() if n != exclude and _is_one(p)]
        if len(ones) == 1:
            return ones[0]
        time.sleep(0.005)
    return None


def _server_of(pe):
    """Index of the server the process behind pe is connected to, if any."""
    for i in range(len(pe)):
        if any(sid for _, sid, _ in pe[i].connections()):
            return i
    return None


def test_pauses_around_the_session_timeout(zk, zk_path, test_env, paused_leader_bin):
    seed = int(os.environ.get("ZKELECT_SOAK_SEED", str(time.time_ns() % 1_000_000)))
    rounds = int(os.environ.get("ZKELECT_SOAK_ROUNDS", "6"))
    rng = random.Random(seed)
    ports = [zk.client_port(i) for i in range(zk.n)]
    procs = {}
    done = []
    try:
        for k in range(PROCS):
            pe = ProxiedEnsemble(ports)
            name = f"p{k}"
            procs[name] = (PausedLeader(paused_leader_bin, pe.connect_string, zk_path, name, T,
                                        test_env, max_s=60 + rounds * 15), pe)
        for name, (p, _) in procs.items():
            p.wait(lambda w: w[0] == "READY", 20, f"READY of {name}")
        for r in range(rounds):
            leader = _leader(procs, 15)
            assert leader, f"round {r} (seed {seed}): no single leader within 15 s"
            p, pe = procs[leader]
            kind = rng.choice(["process", "connection", "server"])
            pause_s = rng.uniform(0.5, 1.5) * T / 1000
            mark = p.mark()
            server = _server_of(pe) if kind == "server" else None
            if kind == "server" and server is None:
                kind = "connection"  # between connections: pause its links instead
            t0 = time.monotonic()
            if kind == "process":
                os.kill(p.proc.pid, signal.SIGSTOP)
                try:
                    time.sleep(pause_s)  # the pause is what is under test
                finally:
                    os.kill(p.proc.pid, signal.SIGCONT)
            elif kind == "connection":
                pe.blackhole()
                try:
                    time.sleep(pause_s)
                finally:
                    pe.heal()
            else:
                zk.pause_server(server)
                try:
                    time.sleep(pause_s)
                finally:
                    zk.resume_server(server)
            # A leader again (the same or another), then the next round.
            after = _leader(procs, 20)
            assert after, f"round {r} (seed {seed}): no leader after a {kind} pause"
            done.append([kind, round(pause_s * 1000), leader, mark, None])
            # Let the quorum and the resumed process settle before the next
            # pause (a server just resumed may still be rejoining).
            zk.heal(timeout=30)
            time.sleep(0.2 + rng.uniform(0, 0.3))
    finally:
        for p, pe in procs.values():
            p.close()
            pe.close()
    # Whether the paused leader's session expired shows up after the round
    # (the EXPIRED event comes once it reconnects): look up to the next
    # round that paused the same process.
    for i, d in enumerate(done):
        lines = procs[d[2]][0].lines
        end = next((e[3] for e in done[i + 1:] if e[2] == d[2]), len(lines))
        d[4] = any(w[:2] == ["EVENT", "EXPIRED"] for w in lines[d[3]:end])
    runs = {n: one_runs(p.lines) for n, (p, _) in procs.items()}
    overlaps = run_overlaps(runs)
    flat = sorted((a, b, n) for n, rs in runs.items() for a, b in rs)
    gaps = [(flat[i + 1][0] - flat[i][1]) / 1e6 for i in range(len(flat) - 1)
            if flat[i + 1][2] != flat[i][2]]
    report("pause_soak", seed=seed, rounds=len(done), session_timeout_ms=T,
           pauses=";".join(f"{k}:{ms}ms:{'expired' if e else 'kept'}" for k, ms, _, _, e in done),
           expired=sum(1 for d in done if d[4]),
           handovers=len(gaps),
           min_gap_ms=round(min(gaps), 3) if gaps else None,
           max_gap_ms=round(max(gaps), 3) if gaps else None)
    assert not overlaps, f"seed {seed}: two processes answered 1 at once: {overlaps[:3]}"
    assert len(done) == rounds

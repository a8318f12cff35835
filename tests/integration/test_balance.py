"""Balanced groups (issue 56; docs/design.md, "Balanced groups"): the
leaderships of E elections held by P processes of one balance.group spread
to floor or ceil of E/P each, through transfers, and even out again after
a join, a graceful leave and a SIGKILL (the crash guard on), while no two
processes ever lead one election at once.

Each process is tests/bed/balance_member.py (driven by bed/balance.py, as
the bench's balance part drives it): one client, one candidacy on each of
the E paths, a sampler of every candidacy's is_leader() recording the spans
of each term it saw; from those, no overlap, and each phase's longest time
without a leader."""

import os
import uuid

from bed.balance import Proc, even, gaps, group_says, moved, moves, now_ns, overlaps

# 3 x 3,000 in the bench (bench/balance.py); a smaller E here keeps
# ./dev test's time, and every step is the same.
E = int(os.environ.get("ZKELECT_BALANCE_E", "300"))
T = 4000
# The longest time without a leader a graceful phase (a join's transfers,
# a graceful leave) may show: one graceful handover is milliseconds, the
# rest is room for a loaded machine and the sampler's rounds (the spans
# are sampled). A SIGKILL's: below T, the crash guard closes the session.
GRACEFUL_GAP_MS = 2000
# How long a phase may take to even out here, and how many moves a 4th
# join may cost: the targets (10 s, E/4 + 10 at E = 3,000) are the
# bench's (bench/balance.py, ./dev bench --only balance), measured alone;
# beside ./dev test's other workers these bound what would be a fault
# (a group that never settles, moves that churn on), not the pace.
EVEN_S = 15
MOVES_SLACK = 1.5


def test_a_group_evens_out_on_joins_leaves_and_a_crash(test_env, zk, kz):
    group = f"/t/balance-{uuid.uuid4().hex[:8]}/group"
    prefix = f"/t/balance-{uuid.uuid4().hex[:8]}/shard"
    procs, gone, marks = [], [], []

    def proc(n):
        return Proc(test_env, zk.connect_string, group, prefix, n, count=E, session_ms=T)

    try:
        for n in ("a", "b", "c"):
            procs.append(proc(n))
            if n == "a":
                marks.append(("joins", now_ns()))
        took, counts = even(procs, E // 3, -(-E // 3), EVEN_S, E)
        # The counters at the first even look, as this test always read
        # them; the bench's balance part (bench/balance.py) also waits
        # until the group stays even and the counters settle, and counts
        # the moves of any churn after that first look.
        before = moves(procs)
        print(f"\n3 x {E}: even ({counts}) {took:.2f} s after the last join, "
              f"{sum(before.values())} moves")

        marks.append(("a 4th joins", now_ns()))
        procs.append(proc("d"))
        took, counts = even(procs, E // 4, -(-E // 4), EVEN_S, E)
        n = moved(before, moves(procs))
        print(f"a 4th joined: even ({counts}) in {took:.2f} s, {n} moves")
        assert n <= MOVES_SLACK * (E // 4), n

        d = procs.pop()
        marks.append(("the 4th leaves", now_ns()))
        d.shutdown()
        gone.append(d)
        took, counts = even(procs, E // 3, -(-E // 3), EVEN_S, E)
        print(f"the 4th left gracefully: even ({counts}) in {took:.2f} s")

        c = procs.pop()
        marks.append(("SIGKILL", now_ns()))
        c.kill()
        gone.append(c)
        took, counts = even(procs, E // 2, -(-E // 2), EVEN_S, E)
        print(f"a 3rd was SIGKILLed: even ({counts}) in {took:.2f} s")
        marks.append(("end", now_ns()))
        for p in procs:
            p.collect()
        bad = overlaps(procs + gone)
        assert not bad, bad[:5]
        phases = [(name, t0, t1) for (name, t0), (_, t1) in zip(marks, marks[1:])]
        longest = gaps(procs + gone, phases)
        rounds = max(p.rounds[2] for p in procs + gone)
        print("longest without a leader (ms, election, from, to): %s; the samplers' longest round %.0f ms"
              % (longest, rounds))
        for name, g in longest.items():
            bound = T if name == "SIGKILL" else GRACEFUL_GAP_MS
            assert g is None or g[0] < bound, (name, g, bound)
        for p in procs:
            p.shutdown()
    except AssertionError:
        print("group:", group_says(kz, group))
        raise
    finally:
        for p in procs + gone:
            p.stop()

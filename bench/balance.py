#!/usr/bin/python3
"""The balance part of the bench (issue 56): P processes of one
balance.group, each holding a candidacy on each of E elections
(tests/bed/balance_member.py, driven by tests/bed/balance.py), through the
phases of the issue:

  joins     3 processes join one after the other; the time from the last
            READY until each leads E/3 +- 1, and the moves (BALANCE_MOVES)
  join4     a 4th joins: time from its READY to E/4 +- 1 each, its moves
  leave     the 4th leaves gracefully (zkelect_client_shutdown): time to
            E/3 +- 1 again, from the shutdown asked
  kill      one of the 3 is SIGKILLed (the crash guard on): time to
            E/2 +- 1, from the signal

Even: every process within E/P +- 1 and all E led, and so for HOLD_S;
the time is to the start of that stretch (the first even look's time is
noted too). The moves are counted once the counters settle. And, over
every process's sampled is_leader() spans, the overlaps (two
leaders of one election at once) and each phase's longest time without a
leader (bed/balance.py gaps()).

    bench/balance.py --connect HOSTS --count E [--session-ms T] --json PATH

Needs ZKELECT_BUILD_DIR (the build whose libzkelect the members load) and,
for the crash guard, ZKELECT_GUARD; `./dev bench --only balance` sets both
and writes the report (bench/run.py)."""

import argparse
import json
import os
import sys
import time
import uuid

from bed.balance import Proc, gaps, group_says, moved, moves, now_ns, overlaps, settled_moves, stays_even

# How long a phase is waited for before it is written down as not even
# (the targets are 10 s; a slower evening is still worth its number).
EVEN_WAIT_S = 60
# Even means even for this long: longer than the balancer's memory of a
# move it made (1 s, cxx/balance/balancer.cpp kGivenNs), so a move made
# again once that memory lapses shows.
HOLD_S = 3.0


def band(total, p):
    """E/P +- 1, the issue's evenness."""
    return total // p - 1, -(-total // p) + 1


class Run:
    def __init__(self, a):
        self.a = a
        tag = uuid.uuid4().hex[:8]
        self.group = "/bench/balance-%s/group" % tag
        self.prefix = "/bench/balance-%s/shard" % tag
        self.procs, self.gone, self.marks = [], [], []
        self.out = {"count": a.count, "session_ms": a.session_ms, "group": self.group, "phases": {},
                    "failures": []}
        from kazoo.client import KazooClient
        self.kz = KazooClient(hosts=a.connect, timeout=10.0)
        self.kz.start(timeout=20)

    def proc(self, name):
        t0 = time.monotonic()
        p = Proc(dict(os.environ), self.a.connect, self.group, self.prefix, name, count=self.a.count,
                 session_ms=self.a.session_ms, ready_s=300)
        self.out.setdefault("ready_s", {})[name] = round(time.monotonic() - t0, 3)
        self.procs.append(p)
        return p

    def phase(self, name, p, since=None, before=None):
        """Waits for even at p processes; notes time, counts, moves, the
        member nodes."""
        lo, hi = band(self.a.count, p)
        hist = []
        ph = {"processes": p, "band": [lo, hi], "history": hist}
        try:
            first, took, counts = stays_even(self.procs, lo, hi, self.a.count, HOLD_S, EVEN_WAIT_S,
                                             since=since, history=hist)
            ph.update(first_s=round(first, 3), took_s=round(took, 3), counts=counts)
        except AssertionError as e:
            ph.update(first_s=None, took_s=None, counts=hist[-1][1] if hist else None)
            self.out["failures"].append("%s: %s" % (name, e))
        after = settled_moves(self.procs)
        if before is not None:
            ph["moves"] = moved(before, after)
        ph["moves_total"] = sum(after.values())
        ph["group"] = group_says(self.kz, self.group)
        self.out["phases"][name] = ph
        ph["hold_s"] = HOLD_S
        print("[balance] %s: %s" % (name, {k: v for k, v in ph.items() if k not in ("history", "group")}),
              file=sys.stderr, flush=True)

    def run(self):
        for name in ("a", "b", "c"):
            self.proc(name)
            if name == "a":
                self.marks.append(("joins", now_ns()))
        self.phase("joins", 3)

        before = moves(self.procs)
        self.marks.append(("join4", now_ns()))
        self.proc("d")
        self.phase("join4", 4, before=before)

        before = moves(self.procs[:3])
        d = self.procs.pop()
        self.marks.append(("leave", now_ns()))
        t0 = time.monotonic()
        d.shutdown()
        self.gone.append(d)
        self.phase("leave", 3, since=t0, before=before)

        c = self.procs.pop()
        before = moves(self.procs)
        self.marks.append(("kill", now_ns()))
        t0 = time.monotonic()
        c.kill()
        self.gone.append(c)
        self.phase("kill", 2, since=t0, before=before)
        self.marks.append(("end", now_ns()))

        for p in self.procs:
            p.collect()
        everyone = self.procs + self.gone
        bad = overlaps(everyone)
        self.out["overlaps"] = len(bad)
        self.out["overlap_examples"] = bad[:5]
        phases = [(name, t0, t1) for (name, t0), (_, t1) in zip(self.marks, self.marks[1:])]
        for name, g in gaps(everyone, phases).items():
            self.out["phases"][name]["longest_gap"] = g
        self.out["sampler_rounds"] = {p.id: p.rounds for p in everyone}
        for p in self.procs:
            p.shutdown()

    def close(self):
        for p in self.procs + self.gone:
            p.stop()
        self.kz.stop()
        self.kz.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connect", required=True)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--session-ms", type=int, default=4000)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    r = Run(a)
    t0 = time.monotonic()
    rc = 0
    try:
        r.run()
    except Exception as e:  # written down with what was measured before it
        r.out["failures"].append("aborted: %r" % (e,))
        rc = 1
    finally:
        r.out["elapsed_s"] = round(time.monotonic() - t0, 1)
        r.close()
        with open(a.json, "w") as fh:
            json.dump(r.out, fh, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())

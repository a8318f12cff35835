"""Balanced groups (issue 56) from the outside: processes of one
balance.group, each bed/balance_member.py (one client, a candidacy on each
of E paths, a sampler of every is_leader()), driven over their stdin, and
the arithmetic over what they saw. Used by tests/integration/test_balance.py
and the bench's balance part (bench/balance.py).

    p = Proc(env, hosts, group, prefix, "a", count=E, session_ms=T)
    took, counts = even([a, b, c], E // 3, -(-E // 3), 10, E)
    p.collect(); overlaps(procs); gaps(procs, [("leave", t0, t1), ...])

Times of spans and phase marks are CLOCK_BOOTTIME in ns (now_ns()), one
clock for every process of the machine."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bed.lines import LinePump

HERE = Path(__file__).resolve().parent
MEMBER = HERE / "balance_member.py"


def now_ns():
    """The spans' clock: a phase's mark taken here compares with them."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


class Proc:
    """One member process; READY read before the constructor returns (its
    E candidacies volunteered). .spans: {election index: [[token, first,
    last], ...]} as of the last collect()."""

    def __init__(self, env, hosts, group, prefix, pid, count, session_ms=4000, moves_max=None,
                 ready_s=60):
        self.id = pid
        env = dict(env, PYTHONPATH=str(HERE.parent) + os.pathsep + env.get("PYTHONPATH", ""))
        cmd = [sys.executable, str(MEMBER), "--hosts", hosts, "--group", group, "--prefix", prefix,
               "--count", str(count), "--id", pid, "--session-ms", str(session_ms)]
        if moves_max is not None:
            cmd += ["--moves-max", str(moves_max)]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.out = LinePump(self.p.stdout, name=f"balance-{pid}")
        self.err = LinePump(self.p.stderr, last=50, name=f"balance-{pid}-err")
        self.spans = {}
        self.rounds = None
        line = self.out.next(ready_s)
        if not (line and line.startswith("READY")):
            self.stop()
            raise AssertionError((pid, line, self.err.lines))
        self.session = int(line.split()[1])

    def ask(self, cmd, timeout=20):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.line(cmd, timeout)

    def line(self, what, timeout):
        line = self.out.next(timeout)
        assert line is not None, (self.id, what, self.err.lines)
        return line

    def count(self):
        """(elections it leads now, its BALANCE_MOVES counter)."""
        _, n, moves = self.ask("COUNT").split()
        return int(n), int(moves)

    def _spans(self, line):
        for i, ss in json.loads(line.split(" ", 1)[1]).items():
            self.spans[int(i)] = ss

    def collect(self):
        self._spans(self.ask("SPANS"))
        _, n, mean, top = self.ask("ROUND").split()
        self.rounds = (int(n), float(mean), float(top))

    def shutdown(self):
        """A graceful leave; the spans are collected after it (the sampler
        ran through it)."""
        self.collect()
        bye = self.ask("SHUTDOWN", 30)
        assert bye.startswith("BYE 0"), (self.id, bye, self.err.lines)
        self._spans(self.line("SHUTDOWN's spans", 30))
        self.p.wait(10)

    def kill(self):
        """SIGKILL, its spans collected just before (they end at most the
        time of one answer early)."""
        self.collect()
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
            self.p.wait(10)


def group_says(kz, group):
    """What the member nodes say (name, data, session), for a failure's
    message or a report."""
    out = []
    for c in sorted(kz.get_children(group)):
        try:
            data, st = kz.get(f"{group}/{c}")
            out.append((c, data.decode(errors="replace"), hex(st.ephemeralOwner)))
        except Exception as e:  # gone meanwhile
            out.append((c, repr(e)))
    return out


def even(procs, lo, hi, timeout_s, total, history=None, since=None):
    """Waits until every live process leads lo..hi and all `total` are
    led; returns the seconds it took and the counts. history, a list, gets
    (seconds, counts) of every look. since: the time.monotonic() the
    seconds count from (default: now), e.g. taken before a leave."""
    t0 = time.monotonic() if since is None else since
    counts = None
    while time.monotonic() - t0 < timeout_s:
        counts = [p.count()[0] for p in procs]
        if history is not None:
            history.append((round(time.monotonic() - t0, 3), counts))
        if all(lo <= n <= hi for n in counts) and sum(counts) == total:
            return time.monotonic() - t0, counts
        time.sleep(0.1)
    raise AssertionError(f"not even within {timeout_s} s: {counts} (want {lo}..{hi}, sum {total})")


def stays_even(procs, lo, hi, total, hold_s, timeout_s, since=None, history=None):
    """Waits until every live process leads lo..hi, all `total` led, and
    every process has stayed within lo..hi for hold_s (a balancer that
    overshoots and evens out again is not even at its first even look).
    Within the stretch a look whose sum is not `total` does not end it:
    the processes are asked one after the other, and a move in flight
    between two answers is counted twice or not at all. Returns (seconds
    to the first even look, seconds to the start of the stretch that held,
    the counts). history gets (seconds, counts, moves counters) of every
    look; since as even()'s."""
    t0 = time.monotonic() if since is None else since
    first = stretch = None
    counts = None
    while time.monotonic() - t0 < timeout_s:
        got = [p.count() for p in procs]
        t = time.monotonic() - t0
        counts = [n for n, _ in got]
        if history is not None:
            history.append((round(t, 3), counts, [m for _, m in got]))
        if not all(lo <= n <= hi for n in counts):
            stretch = None
        elif sum(counts) == total:
            first = t if first is None else first
            stretch = t if stretch is None else stretch
            if t - stretch >= hold_s:
                return first, stretch, counts
        time.sleep(0.1)
    raise AssertionError(f"not even for {hold_s} s within {timeout_s} s: {counts} (want {lo}..{hi}, "
                         f"sum {total}; first even look at {first} s)")


def moves(procs):
    """{process id: its BALANCE_MOVES counter}."""
    return {p.id: p.count()[1] for p in procs}


def settled_moves(procs, quiet_s=0.5, timeout_s=5.0):
    """moves() once it stays the same for quiet_s (or after timeout_s): a
    giver counts a move when the taker's answer reaches it, which can be
    after the taker already leads, so the moves of a phase just seen even
    may still be coming in (up to balance.moves.max per giver)."""
    t0 = time.monotonic()
    last = moves(procs)
    while time.monotonic() - t0 < timeout_s:
        time.sleep(quiet_s)
        now = moves(procs)
        if now == last:
            break
        last = now
    return last


def moved(before, after):
    """The moves between two moves() of the processes in both."""
    return sum(after[k] - before[k] for k in after if k in before)


def _by_election(procs):
    by = {}
    for p in procs:
        for i, ss in p.spans.items():
            for tok, a, b in ss:
                by.setdefault(i, []).append((a, b, tok, p.id))
    for ss in by.values():
        ss.sort()
    return by


def overlaps(procs):
    """Spans of one election, one term each, that two processes saw at once."""
    bad = []
    for i, ss in _by_election(procs).items():
        for (a1, b1, t1, p1), (a2, b2, t2, p2) in zip(ss, ss[1:]):
            if p1 != p2 and a2 <= b1:
                bad.append((i, (p1, t1, a1, b1), (p2, t2, a2, b2)))
    return bad


def gaps(procs, phases):
    """The longest time without a leader of any election, per phase:
    phases is [(name, start ns, end ns)] (now_ns()); a gap, from one
    term's last-seen to the next term's first-seen (by any process), falls
    in the phase where it ended: its start is sampled up to a round early,
    so a gap that an action caused can seem to begin before the action's
    mark, never to end before it. Returns {name: (ms, election, from pid,
    to pid, from token, to token) or None} (the same process and token on
    both sides: a leader whose is_leader() said 0 for a while within its
    term, its lease not renewed in time). Spans are sampled, so a gap is longer than the truth
    by at most a sampling round at each end (Proc.rounds)."""
    out = {name: None for name, _, _ in phases}
    for i, ss in _by_election(procs).items():
        reach, who = None, None
        for a, b, tok, pid in ss:
            if reach is not None and a > reach:
                for name, t0, t1 in phases:
                    if t0 <= a < t1:
                        ms = (a - reach) / 1e6
                        if out[name] is None or ms > out[name][0]:
                            out[name] = (ms, i, who[0], pid, who[1], tok)
            if reach is None or b > reach:
                reach, who = b, (pid, tok)
    return out

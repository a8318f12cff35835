"""Balanced groups (issue 56; docs/design.md, "Balanced groups"): the
leaderships of E elections held by P processes of one balance.group spread
to floor or ceil of E/P each, through transfers, and even out again after
a join, a graceful leave and a SIGKILL (the crash guard on), while no two
processes ever lead one election at once.

Each process is tests/integration/balance_member.py: one client, one
candidacy on each of the E paths, a sampler of every candidacy's
is_leader() recording the spans of each term it saw."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path


from bed.lines import LinePump

HERE = Path(__file__).resolve().parent
# 3 x 3,000 in the bench (bench/balance.py); a smaller E here keeps
# ./dev test's time, and every step is the same.
E = int(os.environ.get("ZKELECT_BALANCE_E", "300"))
T = 4000


class Proc:
    def __init__(self, env, hosts, group, prefix, pid):
        self.id = pid
        self.p = subprocess.Popen(
            [sys.executable, str(HERE / "balance_member.py"), "--hosts", hosts, "--group", group,
             "--prefix", prefix, "--count", str(E), "--id", pid, "--session-ms", str(T)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env)
        self.out = LinePump(self.p.stdout, name=f"balance-{pid}")
        self.err = LinePump(self.p.stderr, last=50, name=f"balance-{pid}-err")
        self.spans = {}
        line = self.out.next(60)
        assert line and line.startswith("READY"), (line, self.err.lines)

    def ask(self, cmd, timeout=20):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        line = self.out.next(timeout)
        assert line is not None, (cmd, self.err.lines)
        return line

    def count(self):
        _, n, moves = self.ask("COUNT").split()
        return int(n), int(moves)

    def collect(self):
        for i, ss in json.loads(self.ask("SPANS").split(" ", 1)[1]).items():
            self.spans[int(i)] = ss

    def shutdown(self):
        self.collect()
        assert self.ask("SHUTDOWN", 30).startswith("BYE 0")
        self.p.wait(10)

    def kill(self):
        self.collect()
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
            self.p.wait(10)


def group_says(kz, group):
    """What the member nodes say, for a failure's message."""
    out = []
    for c in sorted(kz.get_children(group)):
        try:
            data, st = kz.get(f"{group}/{c}")
            out.append((c, data.decode(errors="replace"), hex(st.ephemeralOwner)))
        except Exception as e:  # gone meanwhile
            out.append((c, repr(e)))
    return out


def even(procs, lo, hi, timeout_s):
    """Waits until every live process leads lo..hi and all E are led;
    returns the seconds it took and the counts."""
    t0 = time.monotonic()
    counts = None
    while time.monotonic() - t0 < timeout_s:
        counts = [p.count()[0] for p in procs]
        if all(lo <= n <= hi for n in counts) and sum(counts) == E:
            return time.monotonic() - t0, counts
        time.sleep(0.1)
    raise AssertionError(f"not even within {timeout_s} s: {counts} (want {lo}..{hi}, sum {E})")


def overlaps(procs):
    """Spans of one election, one term each, that two processes saw at once."""
    bad = []
    by_election = {}
    for p in procs:
        for i, ss in p.spans.items():
            for tok, a, b in ss:
                by_election.setdefault(i, []).append((a, b, tok, p.id))
    for i, ss in by_election.items():
        ss.sort()
        for (a1, b1, t1, p1), (a2, b2, t2, p2) in zip(ss, ss[1:]):
            if p1 != p2 and a2 <= b1:
                bad.append((i, (p1, t1, a1, b1), (p2, t2, a2, b2)))
    return bad


def moves(procs):
    return sum(p.count()[1] for p in procs)


def test_a_group_evens_out_on_joins_leaves_and_a_crash(test_env, zk, kz):
    group = f"/t/balance-{uuid.uuid4().hex[:8]}/group"
    prefix = f"/t/balance-{uuid.uuid4().hex[:8]}/shard"
    env = dict(test_env, PYTHONPATH=str(HERE.parent) + os.pathsep + test_env.get("PYTHONPATH", ""))
    procs, gone = [], []
    try:
        for n in ("a", "b", "c"):
            procs.append(Proc(env, zk.connect_string, group, prefix, n))
        took, counts = even(procs, E // 3, -(-E // 3), 10)
        print(f"\n3 x {E}: even ({counts}) {took:.2f} s after the last join, {moves(procs)} moves")

        before = moves(procs)
        procs.append(Proc(env, zk.connect_string, group, prefix, "d"))
        took, counts = even(procs, E // 4, -(-E // 4), 10)
        moved = moves(procs) - before
        print(f"a 4th joined: even ({counts}) in {took:.2f} s, {moved} moves")
        assert moved <= E // 4 + E // 300 + 2, moved

        d = procs.pop()
        d.shutdown()
        gone.append(d)
        took, counts = even(procs, E // 3, -(-E // 3), 10)
        print(f"the 4th left gracefully: even ({counts}) in {took:.2f} s")

        c = procs.pop()
        c.kill()
        gone.append(c)
        took, counts = even(procs, E // 2, -(-E // 2), 10)
        print(f"a 3rd was SIGKILLed: even ({counts}) in {took:.2f} s")
        for p in procs:
            p.collect()
        bad = overlaps(procs + gone)
        assert not bad, bad[:5]
        for p in procs:
            p.shutdown()
    except AssertionError:
        print("group:", group_says(kz, group))
        raise
    finally:
        for p in procs + gone:
            p.stop()

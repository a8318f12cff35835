"""`zkelect candidate` processes in the fault tests, and the safety checks.

Candidate      one process (tests/bed/participant.py does the driving)
Sampler        asks every candidate `status <id>` in a loop and records
               is_leader with the wall-clock window of each answer
no_overlap()   safety checks on those samples and on the event intervals
"""

import os
import threading
import time

from bed.participant import Participant, candidate_argv


class Candidate(Participant):
    """One `zkelect candidate` process hosting participants first_id..;
    stderr goes to log_dir/candidate-<first_id>.stderr when log_dir is given."""

    def __init__(self, zkelect_bin, hosts, path, first_id, session_timeout_ms,
                 env, count=1, log_dir=None, extra_args=()):
        err = os.path.join(log_dir, f"candidate-{first_id}.stderr") if log_dir else None
        super().__init__(candidate_argv(zkelect_bin, hosts, path, first_id, count,
                                        session_timeout_ms, extra_args),
                         env, name=f"candidate[{first_id}]", stderr=err)


class Sampler:
    """Polls `status` of (candidate, id) pairs until stopped."""

    def __init__(self, pairs, period=0.01):
        self.pairs = list(pairs)
        self.period = period
        self.samples = {pid: [] for _, pid in pairs}   # pid -> [(s, r, v)]
        self.errors = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True, name="sampler")

    def start(self):
        self._t.start()
        return self

    def add(self, cand, pid):
        """Sample one more participant from now on (a replacement process)."""
        with self._lock:
            self.samples.setdefault(pid, [])
            self.pairs.append((cand, pid))

    def _run(self):
        deadline = time.monotonic() + 300                 # hard bound
        while not self._stop.is_set() and time.monotonic() < deadline:
            with self._lock:
                pairs = list(self.pairs)
            for cand, pid in pairs:
                if cand.proc.poll() is not None:
                    continue
                try:
                    s, r, v, _ = cand.status(pid, timeout=2.0)
                    self.samples[pid].append((s, r, v))
                except AssertionError as e:
                    # a process killed on purpose mid-query is no error
                    if cand.proc.poll() is None and not getattr(cand, "killed", False):
                        self.errors.append(str(e))
            self._stop.wait(self.period)

    def stop(self):
        self._stop.set()
        self._t.join(10)

    def count(self, pid, value):
        return sum(1 for _, _, v in list(self.samples[pid]) if v == value)

    def wait_count(self, pid, value, n, timeout):
        deadline = time.monotonic() + timeout
        while self.count(pid, value) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"sampler: fewer than {n} samples {pid}={value}")
            time.sleep(0.01)

    def first(self, pid, value, after_ns=0):
        for s, r, v in self.samples[pid]:
            if v == value and s >= after_ns:
                return s, r
        return None

    def last(self, pid, value, before_ns=None):
        best = None
        for s, r, v in self.samples[pid]:
            if v == value and (before_ns is None or r <= before_ns):
                best = (s, r)
        return best


def sample_overlaps(samples):
    """Proven overlaps: a 1-answer of one id inside a span where another id
    answered 1 at both ends with no 0 between (so it led throughout)."""
    spans = {}
    for pid, ss in samples.items():
        ss = sorted(ss)
        spans[pid] = [(a[1], b[0]) for a, b in zip(ss, ss[1:]) if a[2] == 1 and b[2] == 1]
    bad = []
    for pid, ss in samples.items():
        for other, sp in spans.items():
            if other == pid:
                continue
            for s, r, v in ss:
                if v != 1:
                    continue
                for lo, hi in sp:
                    if s >= lo and r <= hi:
                        bad.append((pid, s, r, other, lo, hi))
    return bad


def event_intervals(cands, end_ns):
    """{id: [(leader_ns, end_ns)]} from LEADER to the next LOST/RESIGNED/FOLLOWER."""
    out = {}
    for c in cands:
        for pid in c.ids:
            start = None
            for ns, kind, *_ in c.events(pid=pid):
                if kind == "LEADER" and start is None:
                    start = ns
                elif kind in ("LOST", "RESIGNED", "FOLLOWER") and start is not None:
                    out.setdefault(pid, []).append((start, ns))
                    start = None
            if start is not None:
                # a killed process stops answering at once: it leads no longer
                out.setdefault(pid, []).append((start, c.kill_ns or end_ns))
    return out


def interval_overlaps(intervals):
    flat = sorted((a, b, pid) for pid, iv in intervals.items() for a, b in iv)
    bad = []
    for i, (a, b, p) in enumerate(flat):
        for a2, b2, p2 in flat[i + 1:]:
            if a2 >= b:
                break
            if p2 != p:
                bad.append(((p, a, b), (p2, a2, b2)))
    return bad

"""Helpers shared by the fault scenarios: reports, node listings, safety
checks, waiting with deadlines, and the paused_leader process."""

import json
import os
import subprocess
import time

from bed.lines import LinePump
from bed.candidates import event_intervals, interval_overlaps, sample_overlaps


def report(name, **fields):
    line = json.dumps({"scenario": name, **fields}, sort_keys=True)
    print("\nFAULT-REPORT " + line)
    path = os.environ.get("ZKELECT_FAULT_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def ms(a, b):
    return None if a is None or b is None else round((b - a) / 1e6, 1)


def lease_ms(T):
    """The lease a keepalive earns (docs/semantics.md): T/2 - margin, where
    the default margin is T/20, at least 10 ms."""
    return T / 2 - max(T / 20, 10)


def nodes_of(kz, path, pid):
    """[(name, ephemeralOwner)] of the children of `path` holding id `pid`."""
    return [(n, o) for n, o, d in children(kz, path) if d == pid]


def children(kz, path):
    """[(name, ephemeralOwner, data)] of every child of `path`."""
    kz.sync(path)
    out = []
    try:
        names = kz.get_children(path)
    except Exception:        # NoNodeError: the path is gone
        return out
    for name in names:
        try:
            data, st = kz.get(f"{path}/{name}")
        except Exception:    # deleted between list and get
            continue
        out.append((name, st.ephemeralOwner, data.decode()))
    return out


def seq_of(name):
    return int(name.rsplit("latch-", 1)[1])


def wait_for(pred, timeout, what, period=0.02):
    """pred() until it returns something other than None or False (0 is an
    answer: a server index); fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last is not None and last is not False:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s (last: {last!r})")
        time.sleep(period)


def check_safety(sampler, cands):
    sampler.stop()
    assert not sampler.errors, sampler.errors[:3]
    bad = sample_overlaps(sampler.samples)
    assert not bad, f"two participants answered is_leader=1 at once: {bad[:3]}"
    bad = interval_overlaps(event_intervals(cands, time.time_ns()))
    assert not bad, f"overlapping LEADER intervals: {bad[:3]}"


def start_pair(spawn, first_hosts, second_hosts, path, timeout_ms, extra_args=()):
    """Participant 1 on first_hosts leads, 2 on second_hosts follows."""
    a = spawn(first_hosts, path, 1, timeout_ms, extra_args=extra_args)
    a.wait_event("CONNECTED", "1", 15)
    a.send("join")
    a.wait_event("LEADER", "1", 15)
    b = spawn(second_hosts, path, 2, timeout_ms)
    b.wait_event("CONNECTED", "2", 15)
    b.send("join")
    b.wait_event("FOLLOWER", "2", 15)
    return a, b


def keepalive_count(proxies):
    return proxies.stats()["total"]["requests"].get("multi", 0)


def sync_to_keepalive(proxies, timeout=10.0):
    """Return right after a keepalive (a multi) and then a reply passed the
    proxies, so that the lease was just renewed (it runs from the send time
    of the last ACKNOWLEDGED keepalive) and the next keepalive is T/6 away."""
    def total():
        return proxies.stats()["total"]
    n = total()["requests"].get("multi", 0)
    wait_for(lambda: total()["requests"].get("multi", 0) > n, timeout,
             "a keepalive through the proxies", period=0.002)
    r = total()["packets_s2c"]
    return wait_for(lambda: total()["packets_s2c"] > r and time.time_ns(), timeout,
                    "the keepalive's reply through the proxies", period=0.002)


class PausedLeader:
    """tests/fault/paused_leader.c as a child process; its lines by kind."""

    def __init__(self, binary, hosts, path, pid, timeout_ms, env, extra=(), max_s=120):
        self.proc = subprocess.Popen([str(binary), hosts, path, pid, str(timeout_ms),
                                      str(max_s), *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1, env=env,
                                     start_new_session=True)
        # .lines: the words of each stdout line, then ["EOF"].
        self._out = LinePump(self.proc.stdout, item=lambda rx, text: text.split(),
                             end=lambda rx: ["EOF"])
        self.lines = self._out.lines
        self.cv = self._out.cv

    def mark(self):
        return self._out.mark()

    def wait(self, pred, timeout, what, since=0):
        i = self._out.wait(pred, timeout, since)
        if i is not None:
            return self.lines[i]
        with self.cv:
            if self._out.ended:
                raise AssertionError(f"{what}: paused_leader exited: "
                                     f"{self.proc.stderr.read() if self.proc.poll() is not None else ''}"
                                     f" {self.lines[-20:]}")
            raise AssertionError(f"no {what} within {timeout} s: {self.lines[-20:]}")

    def wait_event(self, kind, timeout, since=0):
        return self.wait(lambda w: w[0] == "EVENT" and w[1] == kind, timeout,
                         f"EVENT {kind}", since)

    def all(self, kind):
        with self.cv:
            return [w for w in self.lines if w and w[0] == kind]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._out.join(5)


# What paused_leader.c's FLIP/END lines say, on CLOCK_MONOTONIC ns.

def _flips(p):
    """[(value, first_mono, prev_mono)] and the END (value, last_mono)."""
    flips = [(int(w[1]), int(w[3]), int(w[4])) for w in p.all("FLIP")]
    end = [(int(w[1]), int(w[2])) for w in p.all("END")]
    return flips, (end[-1] if end else None)


def last_one_ns(p):
    """CLOCK_MONOTONIC just after the last is_leader call of p that answered
    1 (the end of the loop if it still answered 1 when it stopped)."""
    flips, end = _flips(p)
    assert end is not None, "the sampler did not report the end of its loop"
    last = None
    for v, _first, prev in flips:
        if v == 0 and last is not None:
            last = prev
        elif v == 1:
            last = "open"
    if last == "open":
        assert end[0] == 1
        return end[1]
    return last


def first_one_ns(p, after_ns=0):
    for v, first, _prev in _flips(p)[0]:
        if v == 1 and first >= after_ns:
            return first
    return None

"""Drive `zkelect candidate` processes (DESIGN.md section 6) from fault tests.

Candidate      one process, its parsed EVENT/INFO lines, `status` queries
Sampler        asks every candidate `status <id>` in a loop and records
               is_leader with the wall-clock window of each answer
no_overlap()   safety checks on those samples and on the event intervals
"""

import os
import subprocess
import threading
import time


class Candidate:
    """One `zkelect candidate` process hosting participants first_id.."""

    def __init__(self, zkelect_bin, hosts, path, first_id, session_timeout_ms,
                 env, count=1, log_dir=None, extra_args=()):
        self.ids = [str(first_id + k) for k in range(count)]
        self.killed = False
        self.kill_ns = None
        self.lines = []                 # (recv_ns, words)
        self.cv = threading.Condition()
        self._status_lock = threading.Lock()
        self.cmd = [str(zkelect_bin), "candidate", "--connect", hosts, "--path", path,
                    "--first-id", str(first_id), "--count", str(count),
                    "--session-timeout-ms", str(session_timeout_ms), *extra_args]
        err = subprocess.DEVNULL
        self.stderr_path = None
        if log_dir is not None:
            self.stderr_path = os.path.join(log_dir, f"candidate-{first_id}.stderr")
            err = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err, text=True, bufsize=1, env=env,
                                     start_new_session=True)
        if err is not subprocess.DEVNULL:
            err.close()
        self._reader = threading.Thread(target=self._read, daemon=True,
                                        name=f"cand-{first_id}")
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            now = time.time_ns()
            with self.cv:
                self.lines.append((now, line.split()))
                self.cv.notify_all()
        with self.cv:
            self.lines.append((time.time_ns(), ["EOF"]))
            self.cv.notify_all()

    def send(self, line):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def events(self, kind=None, pid=None, since=0):
        """[(ns, kind, id, {k: v})] of EVENT lines from index `since`."""
        out = []
        with self.cv:
            lines = list(self.lines[since:])
        for _, w in lines:
            if len(w) >= 4 and w[0] == "EVENT" and (kind is None or w[1] == kind) \
                    and (pid is None or w[2] == pid):
                kv = dict(x.split("=", 1) for x in w[4:] if "=" in x)
                out.append((int(w[3]), w[1], w[2], kv))
        return out

    def mark(self):
        with self.cv:
            return len(self.lines)

    def wait_line(self, pred, timeout, since=0, what="line"):
        """First line (words) at index >= since with pred(words) true."""
        deadline = time.monotonic() + timeout
        i = since
        with self.cv:
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i][1]):
                        return self.lines[i]
                    i += 1
                if self.lines and self.lines[-1][1] == ["EOF"]:
                    raise AssertionError(f"{what}: candidate exited; output: {self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {what} within {timeout} s; output: {self.tail()}")
                self.cv.wait(left)

    def wait_event(self, kind, pid, timeout, since=0):
        ns_line = self.wait_line(
            lambda w: len(w) >= 4 and w[0] == "EVENT" and w[1] == kind and w[2] == pid,
            timeout, since, f"EVENT {kind} {pid}")
        return int(ns_line[1][3])

    def wait_info(self, pid, word, timeout, since=0):
        return self.wait_line(lambda w: len(w) >= 3 and w[0] == "INFO" and w[1] == pid
                              and w[2] == word, timeout, since, f"INFO {pid} {word}")

    def status(self, pid, timeout=5.0):
        """(send_ns, recv_ns, is_leader, state) from `status <pid>`."""
        with self._status_lock:
            m = self.mark()
            t0 = time.time_ns()
            self.send(f"status {pid}")
            recv_ns, w = self.wait_line(
                lambda w: len(w) >= 3 and w[0] == "INFO" and w[1] == pid and w[2] == "status",
                timeout, m, f"status {pid}")
            kv = dict(x.split("=", 1) for x in w[3:] if "=" in x)
            return t0, recv_ns, int(kv["is_leader"]), kv.get("state")

    def tail(self, n=40):
        """The last n lines but the sampler's status answers (they drown
        everything else)."""
        with self.cv:
            lines = [w for _, w in self.lines if w[:1] != ["INFO"] or w[2:3] != ["status"]]
        return "\n".join(" ".join(w) for w in lines[-n:])

    def quit(self, timeout=10.0):
        """Send quit, close stdin; returns the exit status (kills on timeout)."""
        self.send("quit")
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def sigkill(self):
        """SIGKILL on purpose (a crash); returns the time it was sent."""
        self.killed = True
        self.kill_ns = time.time_ns()
        self.proc.kill()
        self.proc.wait(10)
        return self.kill_ns

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def close(self):
        if self.proc.poll() is None:
            self.quit()
        self._reader.join(5)


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
            for ns, kind, _, _ in c.events(pid=pid):
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

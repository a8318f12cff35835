"""The one driver of the participant line protocol (docs/design.md, "The
participant line protocol"): `zkelect candidate`, and the Curator and kazoo
participants of bench/, which speak the same protocol.

Used by the tests (tests/fault, tests/integration, tests/tools), the demo
(tools/demo.py) and the benchmarks (bench/) as `bed.participant`
(tests/bed/__init__.py says how the package is found).

  Participant    one process: every stdout line time-stamped on arrival and
                 kept; bounded waits on lines and events; status queries;
                 quit, SIGKILL or any signal to its process group
  Hub            several Participants whose lines are merged in arrival
                 order, with each id's latest state
  Event          (ns, kind, id, kv, rx) of one EVENT line
  protocol_args  the protocol's options, in the protocol's order
  candidate_argv the command line of `zkelect candidate`

Every wait has a deadline and raises AssertionError when it passes (or when
the process ends first), naming what it waited for and the last lines seen.
"""

import collections
import os
import signal
import subprocess
import threading
import time

from .lines import LinePump

# ns: the participant's own CLOCK_REALTIME stamp of the event; rx: when this
# driver read the line (same clock), so rx - ns is the delivery delay.
Event = collections.namedtuple("Event", "ns kind id kv rx")
# words == ["EOF"] marks the end of the process's stdout.
Line = collections.namedtuple("Line", "rx words src")

EOF = ["EOF"]


def _kv(words):
    return dict(w.split("=", 1) for w in words if "=" in w)


def parse_event(words, rx=0):
    """Event of an `EVENT KIND ID NS [k=v...]` line (a str or its words),
    None for any other line or a malformed stamp."""
    if isinstance(words, str):
        words = words.split()
    if len(words) < 4 or words[0] != "EVENT":
        return None
    try:
        ns = int(words[3])
    except ValueError:
        return None
    return Event(ns, words[1], words[2], _kv(words[4:]), rx)


def protocol_args(hosts, path, first_id, count=1, session_ms=2000):
    """The options every participant program takes, in the protocol's order."""
    return ["--connect", str(hosts), "--path", str(path), "--first-id", str(first_id),
            "--count", str(count), "--session-timeout-ms", str(session_ms)]


def candidate_argv(zkelect, hosts, path, first_id, count=1, session_ms=2000, extra=()):
    return [str(zkelect), "candidate",
            *protocol_args(hosts, path, first_id, count, session_ms), *map(str, extra)]


def _kinds(kinds):
    return (kinds,) if isinstance(kinds, str) else tuple(kinds)


class Hub:
    """Lines of several Participants in one list, in arrival order.

    wait() consumes: each line is offered to one wait only, in order, so a
    sequence of waits reads the merged stream like a queue. `state` holds the
    latest EVENT kind per participant id, `events` every Event, `info` the
    key=value words of INFO lines per id; all three are updated as lines
    arrive, so they are current whenever a pred looks at them."""

    def __init__(self):
        self.cv = threading.Condition()
        self.lines = []
        self.state = {}
        self.events = []
        self.info = {}
        self._next = 0

    def _add(self, line):       # called with self.cv held
        self.lines.append(line)
        ev = parse_event(line.words, line.rx)
        if ev:
            self.state[ev.id] = ev.kind
            self.events.append(ev)
        elif len(line.words) >= 2 and line.words[0] == "INFO":
            self.info.setdefault(line.words[1], {}).update(_kv(line.words[2:]))
        self.cv.notify_all()

    def wait(self, pred, timeout, what):
        """Offer each new line to pred until it returns something truthy;
        returns that. Lines offered are consumed."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                while self._next < len(self.lines):
                    line = self.lines[self._next]
                    self._next += 1
                    got = pred(line)
                    if got:
                        return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out ({timeout:.0f} s) waiting for {what}; "
                                         f"states {self.state}; last events "
                                         f"{[tuple(e[:3]) for e in self.events[-10:]]}")
                self.cv.wait(left)

    def leaders(self):
        with self.cv:
            return sorted(i for i, k in self.state.items() if k == "LEADER")


class Participant:
    """One participant program, started in its own process group.

    argv     the whole command (candidate_argv(), or a Curator/kazoo
             participant's command followed by protocol_args())
    stderr   None: discarded; "pipe": the last 200 lines kept in .err;
             a path: written to that file
    hub      a Hub to merge this process's lines into
    keep_stdout  a path: every stdout line is also written there, prefixed
             with its arrival time in ns
    """

    def __init__(self, argv, env=None, name=None, stderr=None, hub=None, keep_stdout=None):
        self.argv = [str(a) for a in argv]
        self.name = name or " ".join(self.argv[:2])
        self.ids = self._ids(self.argv)
        self.hub = hub
        self.cv = hub.cv if hub else threading.Condition()
        self.killed = False
        self.kill_ns = None
        self.stderr_path = None
        self._status_lock = threading.Lock()
        if stderr == "pipe":
            err = subprocess.PIPE
        elif stderr:
            self.stderr_path = str(stderr)
            err = open(self.stderr_path, "w")
        else:
            err = subprocess.DEVNULL
        try:
            self.proc = subprocess.Popen(self.argv, env=env, text=True, bufsize=1,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, start_new_session=True)
        finally:
            if err not in (subprocess.PIPE, subprocess.DEVNULL):
                err.close()
        # .lines: a Line per stdout line, in the Hub too, then one EOF Line.
        self._out = LinePump(self.proc.stdout, item=lambda rx, text: Line(rx, text.split(), self),
                             end=lambda rx: Line(rx, EOF, self), on_item=self._merge, cv=self.cv,
                             keep=keep_stdout, name=f"read-{self.name}")
        self.lines = self._out.lines
        self._pumps = [self._out]
        # .err: the last 200 stderr lines (stderr="pipe").
        self.err = []
        if stderr == "pipe":
            self._pumps.append(LinePump(self.proc.stderr, last=200))
            self.err = self._pumps[-1].lines

    @staticmethod
    def _ids(argv):
        try:
            first = int(argv[argv.index("--first-id") + 1])
            count = int(argv[argv.index("--count") + 1])
        except (ValueError, IndexError):
            return []
        return [str(first + k) for k in range(count)]

    @property
    def pid(self):
        return self.proc.pid

    def _merge(self, line):     # called with self.cv held
        if self.hub:
            self.hub._add(line)

    # -- commands -----------------------------------------------------------

    def send(self, line):
        """Write one command line; False when the process no longer reads."""
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def status(self, pid, timeout=5.0):
        """(send_ns, recv_ns, is_leader, state) from `status <pid>`
        (`zkelect candidate` only)."""
        with self._status_lock:
            m = self.mark()
            t0 = time.time_ns()
            self.send(f"status {pid}")
            line = self.wait_line(lambda w: w[:3] == ["INFO", pid, "status"], timeout, m,
                                  f"status {pid}")
            kv = _kv(line.words[3:])
            return t0, line.rx, int(kv["is_leader"]), kv.get("state")

    # -- what it said -------------------------------------------------------

    def mark(self):
        """An index into .lines: pass it as `since` to look only at later lines."""
        with self.cv:
            return len(self.lines)

    def events(self, kind=None, pid=None, since=0):
        """[Event] of EVENT lines from index `since`, optionally of one kind/id."""
        with self.cv:
            lines = self.lines[since:]
        out = []
        for line in lines:
            ev = parse_event(line.words, line.rx)
            if ev and (kind is None or ev.kind == kind) and (pid is None or ev.id == pid):
                out.append(ev)
        return out

    def exited(self):
        with self.cv:
            return bool(self.lines) and self.lines[-1].words == EOF

    def wait_line(self, pred, timeout, since=0, what="a line"):
        """The first Line at index >= since whose words satisfy pred."""
        deadline = time.monotonic() + timeout
        i = since
        with self.cv:
            while True:
                while i < len(self.lines):
                    if self.lines[i].words != EOF and pred(self.lines[i].words):
                        return self.lines[i]
                    i += 1
                if self.lines and self.lines[-1].words == EOF:
                    raise AssertionError(f"{self.name} exited (rc={self.proc.poll()}) before "
                                         f"{what}:\n{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name}: no {what} within {timeout} s:\n{self.tail()}")
                self.cv.wait(left)

    def wait_for_event(self, kinds, pid, timeout, since=0):
        """The first Event of one of `kinds` (a str or several) for `pid`."""
        kinds = _kinds(kinds)
        line = self.wait_line(lambda w: len(w) >= 4 and w[0] == "EVENT" and w[1] in kinds
                              and w[2] == pid and parse_event(w) is not None,
                              timeout, since, f"EVENT {'|'.join(kinds)} {pid}")
        return parse_event(line.words, line.rx)

    def wait_event(self, kinds, pid, timeout, since=0):
        """The participant's time stamp (ns) of that event."""
        return self.wait_for_event(kinds, pid, timeout, since).ns

    def wait_info(self, pid, word, timeout, since=0):
        """(recv_ns, words) of the first `INFO <pid> <word> ...` line."""
        line = self.wait_line(lambda w: w[:3] == ["INFO", pid, word], timeout, since,
                              f"INFO {pid} {word}")
        return line.rx, line.words

    def info(self, pid, key, timeout=30, since=0):
        """The value of the first `key=value` in an `INFO <pid> ...` line."""
        line = self.wait_line(lambda w: len(w) >= 3 and w[:2] == ["INFO", pid]
                              and any(x.startswith(key + "=") for x in w[2:]), timeout, since,
                              f"INFO {pid} {key}")
        return _kv(line.words[2:])[key]

    def tail(self, n=40):
        """The last n lines but status answers (a sampler's drown everything
        else), and the last stderr lines when they are kept."""
        with self.cv:
            ws = [ln.words for ln in self.lines if ln.words[:1] != ["INFO"] or ln.words[2:3] != ["status"]]
        out = "\n".join(" ".join(w) for w in ws[-n:])
        return out + ("\nstderr:\n" + "\n".join(self.err[-10:]) if self.err else "")

    # -- ending it ----------------------------------------------------------

    def send_signal(self, sig):
        """Send sig to the process group (a wrapper script and the program
        it started alike)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def sigkill(self, sig=signal.SIGKILL):
        """A crash on purpose: SIGKILL (or sig, a signal whose default
        action ends the process: SIGSEGV, SIGABRT), reaped; returns when it
        was sent (ns)."""
        self.killed = True
        self.kill_ns = time.time_ns()
        self.send_signal(sig)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        return self.kill_ns

    def kill(self, sig=signal.SIGKILL):
        """Clean-up: signal the group if it still runs and reap it."""
        if self.proc.poll() is None:
            self.send_signal(sig)
            if sig == signal.SIGKILL:
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    pass

    def quit(self, timeout=10.0):
        """`quit`, stdin closed; the exit status, or None when it had to be
        killed after timeout."""
        self.send("quit")
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def close(self, timeout=10.0):
        """Quit if it still runs (killed after timeout); the exit status."""
        if self.proc.poll() is None:
            self.quit(timeout)
        for p in self._pumps:
            p.join(5)
        return self.proc.returncode

#!/usr/bin/python3
"""Failover benchmarks of one participant program (docs/design.md, "The
participant line protocol") against a running ZooKeeper ensemble.

  bench/election_bench.py --impl-cmd CMD --name NAME --connect HOSTS --json OUT
                          [--tests convergence,graceful,crash,pause,herd,join] ...

CMD is the program and its own options; the protocol's options are appended.
Every test uses a fresh election path /eb_<name>_<pid>_<ms> (its first
component keys ZooKeeper's per-namespace counters) and checks safety: no two
ids' LEADER intervals overlap by the participants' own time stamps.

  convergence  N participants connect, `join` goes to all: time from the
               broadcast to the last of 1 LEADER + N-1 FOLLOWER lines
  graceful     `resign <leader>`: new LEADER stamp - old RESIGNED stamp,
               each trial ending when the old leader is FOLLOWER again
               (RESIGNED -> that FOLLOWER: resign_to_follower_ms)
  crash        SIGKILL of the leader's process: kill -> next LEADER, against
               the negotiated session timeout; a new participant replaces it
               (--crash-signal SEGV or ABRT: that signal instead, no core)
  pause        SIGSTOP of the leader's process until another leads, then
               SIGCONT: how long the resumed one keeps claiming (until its
               LOST or any other line about it); overlaps by construction
  join         one candidate joins an election of --join-n that has a
               leader: its `join` -> its FOLLOWER line (a new process each
               trial, which quits after it)
  transfer     (libzkelect only) `transfer <leader> <target>` to the 2nd,
               the 5th and the last of --transfer-n in line, and
               `zkelect transfer` from outside to the 5th, interleaved
               with a `resign` in the same election: command -> target's
               LEADER, the old leader's RESIGNED -> the target's LEADER
  herd         per graceful failover, the servers' counters (mntr, wchs,
               wchp): requests under the path, watch notifications, packets,
               watches held, most watchers on one node; net of an idle window

Driving is tests/bed/participant.py's (tests/ on PYTHONPATH; ./dev sets
it). Writes one JSON document; bench/run.py reads it.
"""
import argparse
import json
import math
import os
import random
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import time

try:
    from bed.participant import EOF, Hub, Participant, protocol_args
    from bed.zkbed import four_letter
except ImportError as e:
    sys.exit("election_bench: %s: run it with tests/ on PYTHONPATH (./dev bench does)" % e)

# Lines after which an id no longer leads (KILLED and EXITED are the
# driver's own, for a process that was killed or ended).
NOT_LEADING = ("RESIGNED", "LOST", "FOLLOWER", "KILLED", "EXITED")


class BenchError(RuntimeError):
    pass


def ms(ns):
    return ns / 1e6


def stats(xs):
    """n, min, median, p90 (nearest rank), max, mean of a list of numbers."""
    if not xs:
        return {"n": 0}
    s = sorted(xs)
    return {"n": len(s), "min": s[0], "median": statistics.median(s),
            "p90": s[max(0, math.ceil(0.9 * len(s)) - 1)], "max": s[-1],
            "mean": statistics.fmean(s)}


def show(st):
    if not st.get("n"):
        return "n=0"
    return "n=%d median=%.2f p90=%.2f max=%.2f ms" % (st["n"], st["median"], st["p90"], st["max"])


def per_process(a, n):
    """Participants per process: one each for small N, else N/5 processes."""
    return a.per_proc or (1 if n <= 10 else math.ceil(n / 5))


class Election:
    """The participant processes of one test on one fresh path."""

    def __init__(self, a, label, session_ms=None):
        self.a = a
        self.session_ms = session_ms or a.session_timeout_ms
        tag = "".join(c for c in a.name if c.isalnum())
        self.path = "/eb_%s_%d_%d" % (tag, os.getpid(), int(time.time() * 1000) % 10**9)
        self.hub = Hub()
        self.procs = []
        self.owner = {}        # id -> Participant
        self.gone = {}         # id -> (kind, ns): KILLED or EXITED
        self._seen = 0         # hub lines looked at for process ends
        self.next_id = 1
        self.rejoined = None   # the last resign_leader's FOLLOWER of the old leader
        os.makedirs(a.log_dir, exist_ok=True)
        self.logbase = os.path.join(a.log_dir, "%s-%s-%d" % (a.name, label, os.getpid()))

    # -- processes -----------------------------------------------------------

    def spawn(self, n, per_proc):
        made = []
        while n > 0:
            k = min(per_proc, n)
            argv = self.a.cmd + protocol_args(self.a.connect, self.path, self.next_id, k,
                                              self.session_ms)
            p = Participant(argv, name="%s[%d]" % (self.a.name, self.next_id), hub=self.hub,
                            stderr="%s-%d.stderr" % (self.logbase, self.next_id))
            self.procs.append(p)
            made.append(p)
            for i in p.ids:
                self.owner[i] = p
            self.next_id += k
            n -= k
        return made

    def kill(self, p, sig=signal.SIGKILL):
        t = p.sigkill(sig)
        for i in p.ids:
            self.gone.setdefault(i, ("KILLED", t))
        return t

    def stop(self):
        for p in self.procs:
            p.send("quit")
        for p in self.procs:
            p.close(15)
        with open(self.logbase + ".events", "w") as f:
            with self.hub.cv:
                lines = list(self.hub.lines)
            for ln in lines:
                f.write("%d %s\n" % (ln.rx, " ".join(ln.words)))

    # -- state ---------------------------------------------------------------

    def _exited(self):
        with self.hub.cv:
            lines = self.hub.lines[self._seen:]
            self._seen += len(lines)
        for ln in lines:
            if ln.words == EOF:
                for i in ln.src.ids:
                    self.gone.setdefault(i, ("EXITED", ln.rx))

    def state(self, i):
        self._exited()
        return self.gone[i][0] if i in self.gone else self.hub.state.get(i)

    def live(self):
        self._exited()
        return [i for i in self.owner if i not in self.gone]

    def leaders(self):
        return [i for i in self.live() if self.hub.state.get(i) == "LEADER"]

    def converged(self):
        kinds = [self.hub.state.get(i) for i in self.live()]
        return kinds.count("LEADER") == 1 and kinds.count("FOLLOWER") == len(kinds) - 1

    def connected(self, ids):
        return all(self.hub.state.get(i) == "CONNECTED" for i in ids)

    def events(self, since=0):
        with self.hub.cv:
            return self.hub.events[since:]

    def mark(self):
        with self.hub.cv:
            return len(self.hub.events)

    def wait(self, cond, timeout, what):
        """Until cond() is truthy (re-checked at every line); its value."""
        got = cond()
        if got:
            return got
        try:
            return self.hub.wait(lambda line: cond(), timeout, what)
        except AssertionError as e:
            raise BenchError(str(e)) from None

    def settle(self, seconds):
        """Let lines arrive for a while (bounded by time, not by a state)."""
        deadline = time.monotonic() + seconds
        try:
            self.hub.wait(lambda line: time.monotonic() >= deadline, seconds, "settling")
        except AssertionError:
            pass

    def negotiated_ms(self):
        with self.hub.cv:
            vals = [int(kv["negotiated_session_timeout_ms"]) for kv in self.hub.info.values()
                    if "negotiated_session_timeout_ms" in kv]
        return statistics.median(vals) if vals else None

    def start(self, n, per_proc):
        """Spawn, wait for every CONNECTED, pause, `join`, wait to converge.
        Returns (spawn_ns, all_connected_ns, join_ns, converged_ns)."""
        t_spawn = time.time_ns()
        procs = self.spawn(n, per_proc)
        ids = [i for p in procs for i in p.ids]
        self.wait(lambda: self.connected(ids), 60 + 2 * n, "%d CONNECTED" % n)
        t_conn = time.time_ns()
        # Fresh runtimes (a JVM's JIT, Python's imports) go quiet first.
        self.settle(self.a.join_delay)
        t_join = time.time_ns()
        for p in procs:
            p.send("join")
        self.wait(self.converged, 60, "1 LEADER + %d FOLLOWER" % (n - 1))
        last = {}
        for e in self.events():
            if e.kind in ("LEADER", "FOLLOWER"):
                last[e.id] = e.ns
        return t_spawn, t_conn, t_join, max(last[i] for i in self.live())

    # -- safety --------------------------------------------------------------

    def check_safety(self, out):
        """Leadership intervals of every id, from LEADER to the next line that
        ends it (or the process's end); pairs of ids that overlap."""
        self._exited()
        evs = [(e.ns, e.kind, e.id) for e in self.events()]
        evs += [(ns, kind, i) for i, (kind, ns) in self.gone.items()]
        evs.sort()
        opened, spans = {}, []
        for ns, kind, i in evs:
            if kind == "LEADER":
                opened.setdefault(i, ns)
            elif kind in NOT_LEADING and i in opened:
                spans.append((opened.pop(i), ns, i))
        end = time.time_ns()
        spans += [(start, end, i) for i, start in opened.items()]
        spans.sort()
        bad, active = [], []
        for start, stop, i in spans:
            active = [s for s in active if s[1] > start]
            bad += [{"a": s[2], "b": i, "overlap_ms": ms(min(s[1], stop) - start)}
                    for s in active if s[2] != i]
            active.append((start, stop, i))
        out["leader_intervals"] = sum(1 for e in evs if e[1] == "LEADER")
        out["safety_violations"] = len(bad)
        if bad:
            out["violation_examples"] = bad[:5]
        return out


# ---------------------------------------------------------------------------
# the tests

def handover(el, old, command, timeout, what, outcome=None):
    """Send `command` to the leader `old`; wait for its RESIGNED, a LEADER of
    another id, and old's FOLLOWER after its RESIGNED (and outcome(), when
    given, to be truthy). Returns (command ns, RESIGNED, LEADER, FOLLOWER)."""
    m = el.mark()
    t_cmd = time.time_ns()
    if callable(command):
        command()
    else:
        el.owner[old].send(command)

    def done():
        res = new = back = None
        for e in el.events(m):
            if e.id == old and e.kind == "RESIGNED" and res is None:
                res = e
            elif e.id != old and e.kind == "LEADER" and new is None:
                new = e
            elif e.id == old and e.kind == "FOLLOWER" and res is not None:
                back = e
        return (res, new, back) if res and new and back and (outcome is None or outcome()) else None
    res, new, back = el.wait(done, timeout, what)
    return t_cmd, res, new, back


def resign_leader(el, timeout=30):
    """One graceful failover: (the old leader's RESIGNED, the new LEADER, when
    the command was sent); returns once the old leader is FOLLOWER again.
    A leader that gave up by itself (LOST) is waited for to lead again."""
    old = el.wait(lambda: el.leaders(), timeout, "a leader to resign")[0]
    t_cmd, res, new, back = handover(el, old, "resign %s" % old, timeout,
                                     "a failover after `resign %s`" % old)
    el.rejoined = back
    return res, new, t_cmd


def queue(el):
    """Ids in line, the leader first, as `zkelect status --json` lists them
    (the participant program is the zkelect tool: transfer is its own)."""
    out = subprocess.run([el.a.cmd[0], "status", "--connect", el.a.connect, "--path", el.path,
                          "--json"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise BenchError("zkelect status: %s" % out.stderr.strip())
    return [p["id"] for p in json.loads(out.stdout)["participants"]]


def transfer_leader(el, place, timeout=30, outside=False):
    """One transfer from the leader to the candidate at `place` in line (0 is
    the leader), or a resign when place is None: (command ns, the old
    leader's RESIGNED, the new LEADER, the outcome's code); returns once the
    old leader is FOLLOWER again. outside: asked by `zkelect transfer`, a
    process of its own (zkelect_client_transfer), rather than by the
    leader's own zkelect_transfer; its time includes the tool's start and
    its connect."""
    el.wait(el.converged, timeout, "a settled line before a transfer")
    order = queue(el)
    old = order[0]
    target = order[place] if place is not None else order[1]
    with el.hub.cv:
        first_line = len(el.hub.lines)
    code = ["OK" if place is None else None]
    asker = []

    def outcome():
        with el.hub.cv:
            for ln in el.hub.lines[first_line:]:
                if ln.words[:3] == ["INFO", old, "transfer"]:
                    code[0] = next((w[5:] for w in ln.words if w.startswith("code=")), "?")
        return code[0]
    if outside:
        def command():
            asker.append(subprocess.Popen(
                [el.a.cmd[0], "transfer", "--connect", el.a.connect, "--path", el.path,
                 "--to", target], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        what = "the end of `zkelect transfer --to %s`" % target
    else:
        command = "transfer %s %s" % (old, target) if place is not None else "resign %s" % old
        what = "the end of `%s`" % command
    try:
        # The hub re-checks at each participant's line: the asker's exit is
        # none, so it is waited for after the handover's lines.
        t_cmd, res, new, _ = handover(el, old, command, timeout, what,
                                      None if outside else outcome)
        if outside:
            try:
                rc = asker[0].wait(timeout)
            except subprocess.TimeoutExpired:
                raise BenchError("timed out (%d s) waiting for %s" % (timeout, what)) from None
            code[0] = "OK" if rc == 0 else "exit %d: %s" % (rc, asker[0].stderr.read().strip())
    except BenchError as e:
        said = ""
        for p in asker:
            if p.poll() is None:
                p.kill()
            said = p.communicate()[1][-3000:]
        raise BenchError("%s%s" % (e, "; zkelect transfer said: " + said if asker else "")) from None
    finally:
        for p in asker:
            if p.poll() is None:
                p.kill()
            p.wait()
    if new.id != target:
        return t_cmd, res, new, "%s (%s leads, not %s)" % (code[0], new.id, target)
    return t_cmd, res, new, code[0]


def test_transfer(a):
    n = a.transfer_n
    places = sorted({1, min(4, n - 1), n - 1})
    labels = ["resign"] + ["to_%d" % (p + 1) for p in places] + ["outside_to_%d" % (min(4, n - 1) + 1)]
    how = [(None, False)] + [(p, False) for p in places] + [(min(4, n - 1), True)]
    cmd_ms = {k: [] for k in labels}
    gap_ms = {k: [] for k in labels}
    failed = []
    el = Election(a, "transfer%d" % n)
    try:
        el.start(n, 1)
        el.settle(0.5)
        for t in range(a.warmup + a.transfer_trials):
            for label, (place, outside) in zip(labels, how):
                t_cmd, res, new, code = transfer_leader(el, place, outside=outside)
                if code != "OK":
                    failed.append("%s: %s" % (label, code))
                elif t >= a.warmup:
                    cmd_ms[label].append(ms(new.ns - t_cmd))
                    gap_ms[label].append(ms(new.ns - res.ns))
                el.settle(a.gap)
    finally:
        el.stop()
    out = el.check_safety({"n": n, "trials": a.transfer_trials, "warmup": a.warmup,
                           "cmd_to_leader_ms": {k: stats(v) for k, v in cmd_ms.items()},
                           "resigned_to_leader_ms": {k: stats(v) for k, v in gap_ms.items()},
                           "failed": failed})
    print("transfer N=%d: command -> target's LEADER %s | failed %d | violations %d"
          % (n, "; ".join("%s %s" % (k, show(out["cmd_to_leader_ms"][k])) for k in labels),
             len(failed), out["safety_violations"]), flush=True)
    return out


def first_leader_since(el, m, besides):
    return next((e for e in el.events(m) if e.kind == "LEADER" and e.id != besides), None)


def replace(el, dead):
    """A new participant for one that was killed, so N stays the same."""
    p = el.spawn(1, 1)[0]
    el.wait(lambda: el.connected(p.ids), 60, "the replacement's CONNECTED")
    p.send("join")
    el.wait(el.converged, 30, "convergence after replacing %s" % dead)


def test_convergence(a, n):
    runs, out = [], {"n": n, "per_proc": per_process(a, n)}
    safety = {"leader_intervals": 0, "safety_violations": 0}
    for _ in range(a.conv_repeats):
        el = Election(a, "conv%d" % n)
        try:
            t_spawn, t_conn, t_join, t_conv = el.start(n, per_process(a, n))
            leader = el.leaders()
            el.settle(0.3)
            if not el.converged() or el.leaders() != leader:
                raise BenchError("leadership moved right after convergence")
            runs.append({"startup_ms": ms(t_conn - t_spawn), "converge_ms": ms(t_conv - t_join)})
        finally:
            el.stop()
        s = el.check_safety({})
        for k in safety:
            safety[k] += s[k]
    out.update(runs=runs, converge_ms=stats([r["converge_ms"] for r in runs]),
               startup_ms=stats([r["startup_ms"] for r in runs]), **safety)
    print("convergence N=%d: join -> converged %s | violations %d"
          % (n, show(out["converge_ms"]), out["safety_violations"]), flush=True)
    return out


def test_graceful(a, n):
    el = Election(a, "graceful%d" % n)
    lat, from_cmd, rejoin = [], [], []
    try:
        el.start(n, per_process(a, n))
        el.settle(0.5)
        for t in range(a.warmup + a.trials):
            res, new, t_cmd = resign_leader(el)
            if t >= a.warmup:
                lat.append(ms(new.ns - res.ns))
                from_cmd.append(ms(new.ns - t_cmd))
                # the old leader back in line: RESIGNED -> its FOLLOWER
                rejoin.append(ms(el.rejoined.ns - res.ns))
            el.settle(a.gap)
    finally:
        el.stop()
    # Leaders that gave up unasked during the rotation (a lease that ran
    # out, a lost connection): each leaves the election without a leader.
    lost = sum(1 for e in el.events() if e.kind == "LOST")
    out = el.check_safety({"n": n, "per_proc": per_process(a, n), "warmup": a.warmup, "lost": lost,
                           "failover_ms": stats(lat), "cmd_to_leader_ms": stats(from_cmd),
                           "resign_to_follower_ms": stats(rejoin), "samples_ms": lat})
    print("graceful N=%d: RESIGNED -> LEADER %s | LOST %d | violations %d"
          % (n, show(out["failover_ms"]), lost, out["safety_violations"]), flush=True)
    return out


def test_crash(a):
    el = Election(a, "crash%d" % a.crash_n)
    lat = []
    try:
        el.start(a.crash_n, 1)
        el.settle(0.5)
        for _ in range(a.crash_trials):
            # A random phase: the server expires sessions on a tickTime grid
            # that a regular loop would lock onto.
            el.settle(random.uniform(0, a.kill_jitter))
            old = el.leaders()[0]
            m = el.mark()
            t_kill = el.kill(el.owner[old], a.crash_sig)
            new = el.wait(lambda: first_leader_since(el, m, old),
                          4 * a.session_timeout_ms / 1000 + 20,
                          "a leader after %s of %s" % (a.crash_sig.name, old))
            lat.append(ms(new.ns - t_kill))
            replace(el, old)
            el.settle(a.gap)
    finally:
        el.stop()
    neg = el.negotiated_ms() or a.session_timeout_ms
    st = stats(lat)
    out = el.check_safety({"n": a.crash_n, "signal": a.crash_sig.name,
                           "session_timeout_ms": a.session_timeout_ms,
                           "negotiated_session_timeout_ms": neg, "failover_ms": st,
                           "ratio_median_to_timeout": st["median"] / neg if lat else None,
                           "samples_ms": lat})
    print("crash N=%d: %s -> LEADER %s (T = %s ms) | violations %d"
          % (a.crash_n, a.crash_sig.name, show(st), neg, out["safety_violations"]), flush=True)
    return out


def test_pause(a):
    el = Election(a, "pause%d" % a.crash_n)
    elect, zombie, overlap, rejoined = [], [], [], 0
    try:
        el.start(a.crash_n, 1)
        el.settle(0.5)
        for _ in range(a.pause_trials):
            el.settle(random.uniform(0, a.kill_jitter))
            old = el.leaders()[0]
            p = el.owner[old]
            m = el.mark()
            t_stop = time.time_ns()
            p.send_signal(signal.SIGSTOP)
            try:
                new = el.wait(lambda: first_leader_since(el, m, old),
                              4 * a.session_timeout_ms / 1000 + 20,
                              "a leader while %s is stopped" % old)
            finally:
                t_cont = time.time_ns()
                p.send_signal(signal.SIGCONT)
            end = el.wait(lambda: next((e for e in el.events(m) if e.id == old and e.kind in
                                        ("LOST", "RESIGNED", "FOLLOWER")), None)
                          or (old in el.gone and el.gone[old][1]),
                          30, "the resumed %s to stop claiming" % old)
            end_ns = end if isinstance(end, int) else end.ns
            elect.append(ms(new.ns - t_stop))
            zombie.append(ms(end_ns - t_cont))
            overlap.append(ms(end_ns - new.ns))
            try:   # it must come back as a follower by itself
                el.wait(el.converged, 20, "%s to re-join" % old)
                rejoined += 1
            except BenchError:
                el.kill(p)
                replace(el, old)
            el.settle(a.gap)
    finally:
        for p in el.procs:   # never leave a stopped process behind
            p.send_signal(signal.SIGCONT)
        el.stop()
    out = el.check_safety({
        "n": a.crash_n, "session_timeout_ms": a.session_timeout_ms,
        "stop_to_new_leader_ms": stats(elect), "cont_to_old_leader_gives_up_ms": stats(zombie),
        "overlap_ms": stats(overlap), "rejoined_by_itself": rejoined,
        "samples": {"stop_to_new_leader_ms": elect, "zombie_ms": zombie, "overlap_ms": overlap}})
    print("pause N=%d: SIGSTOP -> new LEADER %s | SIGCONT -> old gives up %s | re-joined %d/%d"
          % (a.crash_n, show(out["stop_to_new_leader_ms"]),
             show(out["cont_to_old_leader_gives_up_ms"]), rejoined, len(elect)), flush=True)
    return out


def test_join(a):
    """A newcomer to an election that has a leader: `join` -> FOLLOWER."""
    el = Election(a, "join%d" % a.join_n)
    lat = []
    try:
        el.start(a.join_n, 1)
        el.settle(0.5)
        for _ in range(a.join_trials):
            p = el.spawn(1, 1)[0]
            new = p.ids[0]
            el.wait(lambda: el.connected(p.ids), 60, "the newcomer's CONNECTED")
            # A fresh runtime (a JVM's JIT, Python's imports) goes quiet first.
            el.settle(a.join_delay)
            m = el.mark()
            t_join = time.time_ns()
            p.send("join")
            got = el.wait(lambda: next((e for e in el.events(m) if e.id == new and e.kind in
                                        ("FOLLOWER", "LEADER")), None),
                          30, "%s to follow after `join`" % new)
            if got.kind != "FOLLOWER":
                raise BenchError("the newcomer %s led instead of following" % new)
            lat.append(ms(got.ns - t_join))
            p.close(15)
            el.wait(el.converged, 30, "convergence after %s quit" % new)
            el.settle(a.gap)
    finally:
        el.stop()
    out = el.check_safety({"n": a.join_n, "join_to_follower_ms": stats(lat), "samples_ms": lat})
    print("join to N=%d with a leader: join -> FOLLOWER %s | violations %d"
          % (a.join_n, show(out["join_to_follower_ms"]), out["safety_violations"]), flush=True)
    return out


def counters(ports, path):
    """The servers' view, summed: requests under the path's first component,
    packets, watch notifications, watches held, watchers per node."""
    ns = path.strip("/").split("/")[0]
    c = {"t": time.time_ns(), "reads": 0.0, "writes": 0.0, "packets_received": 0.0,
         "packets_sent": 0.0, "watch_notifications": 0.0, "watches": 0,
         "max_watchers_per_znode": 0, "watched_znodes": 0}
    for port in ports:
        m = dict(line.split("\t", 1) for line in four_letter(port, "mntr").splitlines()
                 if "\t" in line)
        num = lambda k: float(m.get(k) or 0)
        c["reads"] += num("zk_cnt_%s_read_per_namespace" % ns)
        # Every server applies every write: once is the count.
        c["writes"] = max(c["writes"], num("zk_cnt_%s_write_per_namespace" % ns))
        c["packets_received"] += num("zk_packets_received")
        c["packets_sent"] += num("zk_packets_sent")
        for kind in ("deleted", "children", "changed", "created"):
            c["watch_notifications"] += num("zk_sum_node_%s_watch_count" % kind)
        for line in four_letter(port, "wchs").splitlines():
            if line.startswith("Total watches:"):
                c["watches"] += int(line.split(":")[1])
        node, per = None, {}
        for line in four_letter(port, "wchp").splitlines():
            if line.startswith("/"):
                node = line.strip()
            elif line.strip().startswith("0x") and node and node.startswith(path + "/"):
                per[node] = per.get(node, 0) + 1
        if per:
            c["max_watchers_per_znode"] = max(c["max_watchers_per_znode"], max(per.values()))
        c["watched_znodes"] += len(per)
    return c


def delta(c0, c1):
    d = {k: c1[k] - c0[k] for k in ("reads", "writes", "packets_received", "packets_sent",
                                    "watch_notifications")}
    d["window_ms"] = ms(c1["t"] - c0["t"])
    return d


def test_herd(a):
    n = a.herd_n
    ports = [int(h.rsplit(":", 1)[1]) for h in a.connect.split(",")]
    # A long session timeout keeps pings out of the packet counters.
    el = Election(a, "herd%d" % n, session_ms=a.herd_session_timeout_ms)
    trials, idle = [], []
    try:
        el.start(n, per_process(a, n))
        el.settle(1.0)
        resign_leader(el)          # warm-up, not counted
        el.settle(1.0)
        for _ in range(a.herd_trials):
            c0 = counters(ports, el.path)
            resign_leader(el)
            el.settle(0.3)         # the re-joined one sets its watch
            c1 = counters(ports, el.path)
            d = delta(c0, c1)
            d.update(watches_before=c0["watches"], watches_after=c1["watches"],
                     max_watchers_per_znode=max(c0["max_watchers_per_znode"],
                                                c1["max_watchers_per_znode"]),
                     watched_znodes=c1["watched_znodes"])
            trials.append(d)
            # The same length of nothing: pings and the probes themselves.
            c0 = counters(ports, el.path)
            el.settle(max(0.0, d["window_ms"] / 1000 - 0.05))
            idle.append(delta(c0, counters(ports, el.path)))
            el.settle(0.3)
    finally:
        el.stop()
    out = {"n": n, "per_proc": per_process(a, n), "session_timeout_ms": a.herd_session_timeout_ms,
           "trials": trials, "nulls": idle}
    for k in ("reads", "writes", "watch_notifications", "packets_received", "packets_sent"):
        out[k] = statistics.median(t[k] for t in trials)
        out[k + "_null"] = statistics.median(t[k] for t in idle)
        out[k + "_net"] = out[k] - out[k + "_null"]
    out["requests_per_failover"] = out["reads_net"] + out["writes_net"]
    out["watches"] = statistics.median(t["watches_after"] for t in trials)
    out["max_watchers_per_znode"] = max(t["max_watchers_per_znode"] for t in trials)
    el.check_safety(out)
    print("herd N=%d: per failover %.0f requests, %.1f watch notifications, max %d watchers "
          "on a node | violations %d" % (n, out["requests_per_failover"],
                                         out["watch_notifications_net"],
                                         out["max_watchers_per_znode"], out["safety_violations"]),
          flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl-cmd", required=True,
                    help="the participant program and its own options (shell words)")
    ap.add_argument("--name", required=True, help="label of the results")
    ap.add_argument("--connect", required=True, help="ZooKeeper connect string")
    ap.add_argument("--json", required=True, help="write the results here")
    ap.add_argument("--log-dir", default="/tmp/zkelect-bench-logs",
                    help="participants' stderr and every line they printed")
    ap.add_argument("--tests", default="convergence,graceful,crash,pause,herd")
    ap.add_argument("--session-timeout-ms", type=int, default=2000)
    ap.add_argument("--n", default="2,10,50", help="N for convergence and graceful")
    ap.add_argument("--per-proc", type=int, default=0,
                    help="participants per process (default 1 for N <= 10, else N/5)")
    ap.add_argument("--conv-repeats", type=int, default=3)
    ap.add_argument("--trials", type=int, default=30, help="graceful failovers per N")
    ap.add_argument("--warmup", type=int, default=3, help="graceful failovers not counted")
    ap.add_argument("--gap", type=float, default=0.1, help="seconds between trials")
    ap.add_argument("--crash-n", type=int, default=3)
    ap.add_argument("--crash-trials", type=int, default=8)
    ap.add_argument("--crash-signal", default="KILL", choices=["KILL", "SEGV", "ABRT"],
                    help="what ends the leader's process in the crash test")
    ap.add_argument("--pause-trials", type=int, default=5)
    ap.add_argument("--kill-jitter", type=float, default=1.0,
                    help="random 0..S seconds before each SIGKILL or SIGSTOP")
    ap.add_argument("--join-n", type=int, default=3,
                    help="participants of the election a newcomer joins (join test)")
    ap.add_argument("--join-trials", type=int, default=5)
    ap.add_argument("--transfer-n", type=int, default=10,
                    help="candidates of the transfer test (each in its own process)")
    ap.add_argument("--transfer-trials", type=int, default=8)
    ap.add_argument("--herd-n", type=int, default=50)
    ap.add_argument("--herd-trials", type=int, default=5)
    ap.add_argument("--herd-session-timeout-ms", type=int, default=20000)
    ap.add_argument("--join-delay", type=float, default=1.0,
                    help="seconds between the last CONNECTED and `join`")
    a = ap.parse_args()
    a.cmd = shlex.split(a.impl_cmd)
    a.crash_sig = signal.Signals["SIG" + a.crash_signal]
    # A SIGSEGV or SIGABRT of a participant writes no core file (inherited).
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    tests = [t.strip() for t in a.tests.split(",") if t.strip()]
    unknown = set(tests) - {"convergence", "graceful", "crash", "pause", "herd", "join", "transfer"}
    if unknown:
        ap.error("unknown tests: %s" % ",".join(sorted(unknown)))
    ns = [int(x) for x in a.n.split(",") if x.strip()]

    doc = {"impl": a.name, "cmd": a.cmd, "connect": a.connect,
           "session_timeout_ms": a.session_timeout_ms,
           "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "host": {"cpus": os.cpu_count(), "load": os.getloadavg()},
           "args": {k: v for k, v in vars(a).items() if k not in ("cmd", "crash_sig")}, "results": {}}
    r = doc["results"]
    t0 = time.monotonic()
    try:
        if "convergence" in tests:
            r["convergence"] = [test_convergence(a, n) for n in ns]
        if "graceful" in tests:
            r["graceful"] = [test_graceful(a, n) for n in ns]
        if "crash" in tests:
            r["crash"] = test_crash(a)
        if "join" in tests:
            r["join"] = test_join(a)
        if "transfer" in tests:
            r["transfer"] = test_transfer(a)
        if "herd" in tests:
            r["herd"] = test_herd(a)
        if "pause" in tests:
            r["pause"] = test_pause(a)
    finally:
        doc["elapsed_s"] = time.monotonic() - t0
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print("results: %s (%.0f s)" % (a.json, doc["elapsed_s"]), flush=True)


if __name__ == "__main__":
    main()

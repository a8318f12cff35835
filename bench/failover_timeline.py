#!/usr/bin/python3
"""Where a graceful failover's time goes (issue 5: "a profile of where the
time goes"), against the bench ensemble that is already running.

Runs `zkelect candidate` participants (one per process, the participant
protocol of docs/design.md) with `--set zk.log.level=debug`, so the
ZooKeeper C client logs every request it queues, every response and watch
event it receives (IO thread) and hands over (completion thread). Its log
timestamps have millisecond resolution, too coarse for segments of a few
hundred microseconds, so an LD_PRELOAD shim (bench/zkts.c, built by Meson)
prefixes each log line with CLOCK_REALTIME nanoseconds, the clock of the EVENT
lines. The driver resigns the leader in rotation; for each failover the new
leader's log and the events give the segments RESIGNED -> delete queued ->
notification received -> requests queued -> answers -> LEADER.

Also measured, in the same run:
  - the floor: read RTT (getChildren), write RTT (multi{check}) and the two
    pipelined (multi then getChildren, as the engine sends them), per server,
    by a small C program against -lzookeeper_mt (bench/zkftl.c; async calls,
    like the engine), on a second session in turn with host re-resolution off; and fdatasync
    of small writes on the filesystem of the ensemble's data;
  - the same failovers without the debug log: libzkelect, libzkelect with
    zoo_set_servers_resolution_delay(-1) preloaded (an experiment: no host
    re-resolution on each loop iteration of the C client) and kazoo's
    participant (if present), all up at once on their own paths with their
    failovers interleaved, with the client CPU time per failover of each
    one's processes (/proc/PID/task/*/schedstat, user + kernel, net of an
    idle window as long as the failover window);
  - (--callgrind K) instructions per failover in one candidate process run
    under valgrind --tool=callgrind (counters zeroed before K failovers in
    rotation and dumped after, minus an idle window of the same length), per
    object, per role (resigner / heir / bystander), and callgrind_annotate's
    top functions.

Prints a markdown report on stdout; --json keeps the raw numbers.

  bench/failover_timeline.py --connect HOSTS [--binary BUILD/tools/zkelect] [--failovers 40]
                             [--callgrind 30] [--json FILE]
Loopback only; every process started here is stopped by its PID.
"""
import argparse
import collections
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

try:
    # tests/ on PYTHONPATH (./dev sets it): the test bed (participant driver, four-letter words)
    from bed.participant import EOF, Hub, Participant, protocol_args
    from bed.zkbed import four_quiet
except ImportError as e:
    sys.exit("failover_timeline: %s: run it with PYTHONPATH=%s"
             % (e, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests")))

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BINARY = os.path.join(HERE, "..", "build-release", "tools", "zkelect")
DEFAULT_KAZOO = os.path.join(HERE, "participants", "kazoo", "kazoo_participant.py")

# ---------------------------------------------------------------------------
# statistics


def pct(xs, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(xs)
    k = max(1, int(math.ceil(p / 100.0 * len(s))))
    return s[k - 1]


def med(xs):
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def fmt_ms(ns, digits=2):
    return "-" if ns is None else ("%.*f" % (digits, ns / 1e6))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def log(msg):
    sys.stderr.write("[failover_timeline] %s\n" % msg)
    sys.stderr.flush()


# ---------------------------------------------------------------------------
# ZooKeeper helpers


def fsync_counters(connect):
    """(count, sum in ms) of fsyncs of the transaction log, per server (mntr)."""
    out = {}
    for hp in connect.split(","):
        t = four_quiet(hp, "mntr")
        c = re.search(r"^zk_cnt_fsynctime\s+(\d+)", t, re.M)
        s = re.search(r"^zk_sum_fsynctime\s+(\d+)", t, re.M)
        if c and s:
            out[hp] = (int(c.group(1)), int(s.group(1)))
    return out


def server_modes(connect):
    modes = {}
    for hp in connect.split(","):
        m = re.search(r"^Mode: (\w+)", four_quiet(hp, "srvr"), re.M)
        modes[hp] = m.group(1) if m else "?"
    return modes


# ---------------------------------------------------------------------------
# participants


class Group:
    """N participants, one per process, ids 1..N; participant i is process
    i-1. Driven by tests/bed/participant.py; each process's stdout is also
    kept beside its stderr log, every line prefixed with its arrival time."""

    def __init__(self, label, argvs, envs, stderr_paths, connect, path, timeout_ms):
        self.label = label
        self.hub = Hub()
        self.stderr_paths = stderr_paths
        self.procs = []
        for i, (argv, env, errp) in enumerate(zip(argvs, envs, stderr_paths)):
            full = list(argv) + protocol_args(connect, path, i + 1, 1, timeout_ms) + \
                list(getattr(argv, "extra", ()))
            self.procs.append(Participant(full, env, name="%s[%d]" % (label, i + 1), stderr=errp,
                                          hub=self.hub, keep_stdout=errp[:-len(".stderr")] + ".stdout"))

    @property
    def state(self):
        return self.hub.state

    @property
    def events(self):
        """Every Event (ns: the participant's stamp, rx: its arrival here)."""
        return self.hub.events

    def wait(self, pred, timeout, what):
        """Until pred() holds, re-checked at every line; TimeoutError at the
        deadline, RuntimeError when a participant process ends."""
        if pred():
            return pred()

        def offer(line):
            if line.words == EOF:
                idx = self.procs.index(line.src)
                raise RuntimeError("%s: participant process %d exited (see %s)"
                                   % (self.label, idx, self.stderr_paths[idx]))
            return pred()
        try:
            return self.hub.wait(offer, timeout, what)
        except AssertionError:
            raise TimeoutError("%s: timed out after %.0f s waiting for %s (states %s)"
                               % (self.label, timeout, what, self.ids_state())) from None

    def ids_state(self):
        return {str(i + 1): self.state.get(str(i + 1)) for i in range(len(self.procs))}

    def send(self, idx, line):
        self.procs[idx].send(line)

    def start(self, timeout):
        n = len(self.procs)
        self.wait(lambda: all(self.state.get(str(i + 1)) == "CONNECTED" for i in range(n)),
                  timeout, "all CONNECTED")
        for i in range(n):
            self.send(i, "join")

        def converged():
            s = list(self.ids_state().values())
            return s.count("LEADER") == 1 and s.count("FOLLOWER") == n - 1
        self.wait(converged, timeout, "1 LEADER + %d FOLLOWER" % (n - 1))

    def leader(self):
        ls = [k for k, v in self.ids_state().items() if v == "LEADER"]
        if len(ls) != 1:
            raise RuntimeError("%s: not exactly one leader: %s" % (self.label, self.ids_state()))
        return ls[0]

    def failover(self, timeout, resend_after=None):
        """resend_after: seconds after which a `resign` not yet answered by
        RESIGNED is sent once more (counted in self.resends)."""
        old = self.leader()
        mark = len(self.events)
        cmd_ns = time.time_ns()
        self.send(int(old) - 1, "resign %s" % old)
        out = {}

        def done():
            res = fol = newl = None
            for e in self.events[mark:]:
                if e.kind == "RESIGNED" and e.id == old and res is None:
                    res = e
                elif e.kind == "LEADER" and e.id != old and newl is None:
                    newl = e
                elif e.kind == "FOLLOWER" and e.id == old and res is not None:
                    fol = e
            if res and newl and fol:
                out.update(old=old, new=newl.id, cmd_ns=cmd_ns, resigned_ns=res.ns,
                           leader_ns=newl.ns, follower_ns=fol.ns, leader_rx=newl.rx)
                return True
            return False
        if resend_after:
            try:
                self.wait(done, resend_after, "a failover from %s" % old)
                return out
            except TimeoutError:
                if any(e.kind == "RESIGNED" and e.id == old for e in self.events[mark:]):
                    raise
                log("%s: no RESIGNED from %s after %.0f s: resign sent again"
                    % (self.label, old, resend_after))
                self.resends = getattr(self, "resends", 0) + 1
                self.send(int(old) - 1, "resign %s" % old)
        self.wait(done, timeout, "a failover from %s" % old)
        return out

    def pids(self):
        return [p.pid for p in self.procs]

    def stop(self):
        for p in self.procs:
            if p.quit(15) is None:
                log("%s: pid %d did not quit; killed" % (self.label, p.pid))
            p.close()


class Argv(list):
    """A command prefix plus options that go after the protocol's options."""

    def __init__(self, prefix, extra=()):
        super().__init__(prefix)
        self.extra = list(extra)


def cpu_ns(pids):
    """On-CPU time (user + system) of every thread of these processes."""
    total = 0
    for pid in pids:
        for t in glob.glob("/proc/%d/task/*/schedstat" % pid):
            try:
                with open(t) as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


# ---------------------------------------------------------------------------
# the ZooKeeper C client's debug log

LINE_RE = re.compile(r"^(?:(\d{16,20}) )?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}):\d+\(0x[0-9a-f]+\):"
                     r"ZOO_\w+@(\w+)@\d+: (.*)$")
SEND_RE = re.compile(r"Sending request xid=(0x[0-9a-f]+) for path \[(.*?)\]")
MULTI_RE = re.compile(r"Sending multi request xid=(0x[0-9a-f]+) with (\d+) subrequests")
DONE_RE = re.compile(r"Calling COMPLETION_(\w+) for xid=(0x[0-9a-f]+) failed=(\d+),? rc=(-?\d+)")
WATCH_RE = re.compile(r"Calling a watcher for node \[(.*?)\], type = (-?\d+) event=(\w+)")
SERVER_RE = re.compile(r"session establishment complete on server (\S+?),")
OPS = {"zoo_awget_children_": "getChildren", "zoo_awget_children2_": "getChildren",
       "zoo_awget": "getData", "zoo_awexists": "exists", "zoo_acreate2_ttl": "create",
       "zoo_acreate_ttl": "create", "zoo_adelete": "delete", "zoo_aset": "setData"}


def parse_zklog(path):
    """Requests (queued / response received / completion called), watch events
    (received / callback), servers. Times in ns; fine_ts tells whether the
    shim's ns prefix was there (else millisecond wall-clock)."""
    reqs = {}
    order = []          # xids in the order of their first completion line
    io_resp = []        # IO thread: "Queueing asynchronous response"
    io_watch = []       # IO thread: "Processing WATCHER_EVENT"
    watches = []        # completion thread: watcher called (non-session events)
    servers = []
    fine = coarse = 0
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE_RE.match(line.rstrip("\n"))
            if not m:
                continue
            if m.group(1):
                t = int(m.group(1))
                fine += 1
            else:
                t = int(time.mktime(time.strptime(m.group(2), "%Y-%m-%d %H:%M:%S"))) * 10**9 \
                    + int(m.group(3)) * 10**6
                coarse += 1
            func, msg = m.group(4), m.group(5)
            if msg.startswith("Sending "):
                s = SEND_RE.match(msg)
                if s:
                    reqs[s.group(1)] = {"op": OPS.get(func, func), "path": s.group(2), "sent": t}
                    continue
                s = MULTI_RE.match(msg)
                if s:
                    reqs[s.group(1)] = {"op": "multi", "path": "", "sent": t}
                    continue
            elif msg.startswith("Calling COMPLETION_"):
                s = DONE_RE.match(msg)
                if s:
                    x = s.group(2)
                    r = reqs.setdefault(x, {"op": "?", "path": "", "sent": None})
                    if "done" not in r:
                        r["done"] = t
                        r["rc"] = int(s.group(4))
                        order.append(x)
            elif msg.startswith("Queueing asynchronous response"):
                io_resp.append(t)
            elif msg.startswith("Processing WATCHER_EVENT"):
                io_watch.append(t)
            elif msg.startswith("Calling a watcher for node"):
                s = WATCH_RE.match(msg)
                if s and s.group(3) != "ZOO_SESSION_EVENT":
                    watches.append({"path": s.group(1), "event": s.group(3), "cb": t})
            else:
                s = SERVER_RE.search(msg)
                if s:
                    servers.append((t, s.group(1)))
    # Responses and watch events are handed over in the order they arrive:
    # pair the IO thread's lines with the completion thread's, in order, a
    # receipt never later than its hand-over.
    j = 0
    for x in order:
        r = reqs[x]
        if j < len(io_resp) and io_resp[j] <= r["done"]:
            r["io"] = io_resp[j]
            j += 1
    j = 0
    for w in watches:
        if j < len(io_watch) and io_watch[j] <= w["cb"]:
            w["io"] = io_watch[j]
            j += 1
    return {"reqs": reqs, "watches": watches, "servers": servers, "fine": fine, "coarse": coarse,
            "unpaired": abs(len(io_resp) - len(order)) + abs(len(io_watch) - len(watches))}


def server_at(log, t):
    s = None
    for ts, hp in log["servers"]:
        if ts <= t:
            s = hp
    return s


def requests_between(log, t0, t1):
    return sorted((r for r in log["reqs"].values() if r.get("sent") is not None
                   and t0 <= r["sent"] <= t1), key=lambda r: r["sent"])


def analyze(fo, logs):
    """One failover: milestones (ns) and its path."""
    H, R = logs[int(fo["new"]) - 1], logs[int(fo["old"]) - 1]
    t0, t_leader = fo["resigned_ns"], fo["leader_ns"]
    a = {"old": fo["old"], "new": fo["new"], "total": t_leader - t0,
         "server": server_at(H, t_leader)}
    rq = requests_between(R, t0, fo["follower_ns"])
    dels = [r for r in rq if r["op"] == "delete"]
    creates = [r for r in rq if r["op"] == "create"]
    if creates:
        a["create_sent"] = creates[0]["sent"] - t0
        if "io" in creates[0]:
            a["create_io"] = creates[0]["io"] - t0
    if dels:
        a["del_sent"] = dels[0]["sent"] - t0
        if "io" in dels[0]:
            a["del_rtt"] = dels[0]["io"] - dels[0]["sent"]
            a["del_io"] = dels[0]["io"] - t0
    notif = [w for w in H["watches"] if t0 <= w["cb"] <= t_leader and w["event"] == "ZOO_DELETED_EVENT"]
    if not notif:
        a["path"] = "no-notification"
        return a
    w = notif[0]
    a["notif_cb"] = w["cb"] - t0
    if "io" in w:
        a["notif_io"] = w["io"] - t0
    reqs = requests_between(H, w["cb"], t_leader)
    a["requests"] = [r["op"] for r in reqs]
    if not reqs:
        a["path"] = "fast"
        a["cb_to_leader"] = t_leader - w["cb"]
        if "io" in w:
            a["client"] = t_leader - w["io"]
        return a
    a["path"] = "listing"
    a["first_sent"] = reqs[0]["sent"] - t0
    last_done = w["cb"]
    last_io = None
    for r in reqs:
        key = {"multi": "multi", "getChildren": "gc"}.get(r["op"])
        if key and key + "_sent" not in a:
            a[key + "_sent"] = r["sent"] - t0
            if "io" in r:
                a[key + "_io"] = r["io"] - t0
            if "done" in r:
                a[key + "_done"] = r["done"] - t0
        if "done" in r and r["done"] <= t_leader and r["done"] >= last_done:
            last_done = r["done"]
            last_io = r.get("io")
    a["last_done"] = last_done - t0
    if last_io is not None:
        a["last_io"] = last_io - t0
    if "gc_io" in a and "multi_io" in a:
        a["gc_after_multi"] = a["gc_io"] - a["multi_io"]
    if "notif_io" in a and "last_io" in a:
        # time the new leader's process itself spent on the critical path
        a["client"] = (a["first_sent"] - a["notif_io"]) + (a["total"] - a["last_io"])
    return a


# ---------------------------------------------------------------------------
# runs


class Ctx:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.paths = []
        self.seq = 0

    def new_path(self, tag):
        self.seq += 1
        p = "/ftl_%s_%d_%d" % (tag, os.getpid(), self.seq)
        self.paths.append(p)
        return p


def run_group(ctx, label, argvs, envs, n_fail, warmup, gap, cpu=False, timeout=10.0):
    args = ctx.args
    path = ctx.new_path(label.split()[0].replace("-", ""))
    errs = [os.path.join(ctx.tmp, "%s-%d.stderr" % (re.sub(r"\W+", "_", label), i + 1))
            for i in range(len(argvs))]
    g = Group(label, argvs, envs, errs, args.connect, path, args.session_timeout_ms)
    res = {"label": label, "n": len(argvs), "failovers": [], "stderr": errs}
    fs0 = fsync_counters(args.connect)
    try:
        g.start(timeout=60)
        for _ in range(warmup):
            g.failover(timeout)
            time.sleep(gap)
        c0, w0 = cpu_ns(g.pids()), time.monotonic_ns()
        for k in range(n_fail):
            fo = g.failover(timeout)
            res["failovers"].append(fo)
            time.sleep(gap)
        c1, w1 = cpu_ns(g.pids()), time.monotonic_ns()
        fs1 = fsync_counters(args.connect)
        res["fsync"] = {hp: (fs1[hp][0] - fs0[hp][0], fs1[hp][1] - fs0[hp][1])
                        for hp in fs1 if hp in fs0}
        if cpu:
            # idle window as long as the failover window: keepalives and pings
            time.sleep((w1 - w0) / 1e9)
            c2, w2 = cpu_ns(g.pids()), time.monotonic_ns()
            res["cpu"] = {"busy_ns": c1 - c0, "busy_wall_ns": w1 - w0,
                          "idle_ns": c2 - c1, "idle_wall_ns": w2 - w1}
        res["window_ns"] = w1 - w0
    finally:
        g.stop()
    return res


def run_interleaved(ctx, specs, n_fail, warmup, gap, timeout=10.0):
    """Several groups up at once, each on its own election path; their
    failovers alternate (the group going first rotates), so every
    implementation meets the same moments of the shared machine. CPU per
    group over the whole window, net of an idle window as long."""
    args = ctx.args
    groups, results = [], []
    try:
        for label, argvs, envs in specs:
            path = ctx.new_path(label.split()[0].replace("-", ""))
            errs = [os.path.join(ctx.tmp, "%s-%d.stderr" % (re.sub(r"\W+", "_", label), i + 1))
                    for i in range(len(argvs))]
            g = Group(label, argvs, envs, errs, args.connect, path, args.session_timeout_ms)
            groups.append(g)
            results.append({"label": label, "n": len(argvs), "failovers": [], "stderr": errs})
        for g in groups:
            g.start(timeout=60)
        for _ in range(warmup):
            for g in groups:
                g.failover(timeout)
                time.sleep(gap)
        c0 = [cpu_ns(g.pids()) for g in groups]
        w0 = time.monotonic_ns()
        for k in range(n_fail):
            for j in range(len(groups)):
                i = (j + k) % len(groups)
                results[i]["failovers"].append(groups[i].failover(timeout))
                time.sleep(gap)
        c1 = [cpu_ns(g.pids()) for g in groups]
        w1 = time.monotonic_ns()
        time.sleep((w1 - w0) / 1e9)
        c2 = [cpu_ns(g.pids()) for g in groups]
        w2 = time.monotonic_ns()
        for i, r in enumerate(results):
            r["cpu"] = {"busy_ns": c1[i] - c0[i], "busy_wall_ns": w1 - w0,
                        "idle_ns": c2[i] - c1[i], "idle_wall_ns": w2 - w1}
            r["window_ns"] = w1 - w0
    finally:
        for g in groups:
            g.stop()
    return results


def compare_runs(ctx, n):
    a = ctx.args
    specs = [("libzkelect N=%d" % n, [Argv([a.binary, "candidate"]) for _ in range(n)],
              [dict(os.environ)] * n)]
    if ctx.resoff:
        env = dict(os.environ, LD_PRELOAD=ctx.resoff)
        specs.append(("libzkelect [resolution delay -1] N=%d" % n,
                      [Argv([a.binary, "candidate"]) for _ in range(n)], [env] * n))
    if a.kazoo:
        specs.append(("kazoo N=%d" % n, [Argv(["/usr/bin/python3", a.kazoo]) for _ in range(n)],
                      [dict(os.environ)] * n))
    log("interleaved N=%d: %s; %d failovers each" % (n, ", ".join(x[0] for x in specs), a.failovers))
    return run_interleaved(ctx, specs, a.failovers, a.warmup, a.gap)


def timeline_run(ctx, n, debug=True, resoff=False):
    a = ctx.args
    env = dict(os.environ)
    pre = ([ctx.shim] if debug and ctx.shim else []) + ([ctx.resoff] if resoff else [])
    if pre:
        env["LD_PRELOAD"] = ":".join(pre)
    extra = ["--set", "zk.log.level=debug"] if debug else []
    argvs = [Argv([a.binary, "candidate"], extra) for _ in range(n)]
    label = "libzkelect%s%s N=%d" % (" (debug log)" if debug else "",
                                     " [resolution delay -1]" if resoff else "", n)
    log("%s: %d failovers" % (label, a.failovers))
    res = run_group(ctx, label, argvs, [env] * n, a.failovers, a.warmup, a.gap, cpu=not debug)
    if debug:
        logs = [parse_zklog(p) for p in res["stderr"]]
        res["fine_ts"] = all(L["fine"] > 0 and L["coarse"] == 0 for L in logs)
        res["unpaired"] = sum(L["unpaired"] for L in logs)
        res["analysis"] = [analyze(fo, logs) for fo in res["failovers"]]
        # every request any participant sent from RESIGNED until the resigned
        # one is FOLLOWER again (keepalives falling into the window included)
        for fo, an in zip(res["failovers"], res["analysis"]):
            an["all_requests"] = collections.Counter(
                r["op"] for L in logs for r in requests_between(L, fo["resigned_ns"], fo["follower_ns"]))
    return res


def floor_run(ctx):
    """Per server; the address is given three times so that the C client,
    as with the participants' three-server string, resolves three addresses
    on each loop iteration while every session is on that one server."""
    a = ctx.args
    out = {}
    for hp in a.connect.split(","):
        path = ctx.new_path("floor")
        r = subprocess.run([ctx.zkftl, "rtt", ",".join([hp] * 3), path, str(a.floor_count)],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError("floor against %s failed: %s" % (hp, r.stderr.strip()))
        out[hp] = json.loads(r.stdout)
    return out


def disk_floor(n=200):
    """fdatasync after a small write into a preallocated file, as ZooKeeper's
    transaction log does, on the filesystem of the ensemble's data."""
    d = "/tmp/zkbench" if os.path.isdir("/tmp/zkbench") else tempfile.gettempdir()
    fd, name = tempfile.mkstemp(prefix="ftl-fsync-", dir=tempfile.gettempdir())
    same = os.stat(d).st_dev == os.stat(name).st_dev
    try:
        os.write(fd, b"\0" * (4 << 20))
        os.fsync(fd)
        xs = []
        for i in range(n):
            os.pwrite(fd, b"x" * 120, i * 512)
            t0 = time.monotonic_ns()
            os.fdatasync(fd)
            xs.append(time.monotonic_ns() - t0)
    finally:
        os.close(fd)
        os.unlink(name)
    return {"fdatasync_ns": xs, "same_fs_as": d if same else None}


# --- callgrind ---------------------------------------------------------------

def parse_callgrind(path):
    """Exclusive Ir per object and per (object, function). Cost lines right
    after a calls= line are the callee's inclusive cost and are skipped."""
    names = {"ob": {}, "fn": {}, "fl": {}}
    space = {"ob": "ob", "cob": "ob", "fn": "fn", "cfn": "fn", "fl": "fl", "fi": "fl", "fe": "fl",
             "cfi": "fl", "cfl": "fl"}
    ob = fn = cfn = None
    skip = False
    callee_calls = collections.Counter()
    callee_incl = collections.Counter()
    per_ob = collections.Counter()
    per_fn = collections.Counter()
    summary = None
    with open(path, errors="replace") as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                if skip:
                    skip = False
                    w = line.split()
                    if len(w) >= 2:
                        callee_incl[cfn] += int(w[1])
                    continue
                w = line.split()
                if len(w) >= 2:
                    v = int(w[1])
                    per_ob[ob] += v
                    per_fn[(ob, fn)] += v
                continue
            if "=" in line and c.isalpha():
                key, val = line.rstrip("\n").split("=", 1)
                if key == "calls":
                    skip = True
                    callee_calls[cfn] += int(val.split()[0])
                    continue
                if key in space:
                    m = re.match(r"\((\d+)\)(?: (.*))?$", val)
                    table = names[space[key]]
                    if m:
                        if m.group(2) is not None:
                            table[m.group(1)] = m.group(2)
                        name = table.get(m.group(1), val)
                    else:
                        name = val
                    if key == "ob":
                        ob = name
                    elif key == "fn":
                        fn = name
                    elif key == "cfn":
                        cfn = name
                continue
            if line.startswith("summary:"):
                summary = int(line.split()[1])
    return {"per_ob": per_ob, "per_fn": per_fn, "summary": summary,
            "callee_calls": callee_calls, "callee_incl": callee_incl}


def obj_group(ob):
    b = os.path.basename(ob or "?")
    for key, name in (("libzkelect", "libzkelect.so"), ("libzookeeper_mt", "libzookeeper_mt"),
                      ("libstdc++", "libstdc++"), ("libc.so", "libc"), ("ld-linux", "ld.so"),
                      ("libgcc_s", "libgcc_s"), ("libm.so", "libm")):
        if key in b:
            return name
    if b == "zkelect":
        return "zkelect (tool)"
    return "other (%s)" % b


class Callgrind:
    """Zero / dump the counters of a process under callgrind (monitor commands)."""

    def __init__(self, ctx, pid, prefix):
        self.ctx, self.pid, self.prefix = ctx, pid, prefix

    def files(self):
        return set(glob.glob(self.prefix + ".*"))

    def control(self, opt):
        """Returns (dump file or None, mid time): the command takes effect at
        some point while vgdb waits, so windows are taken between midpoints."""
        before = self.files()
        t0 = time.monotonic_ns()
        # vgdb without ptrace (--max-invoke-ms=0): the command runs when
        # valgrind next polls (well under a second here) and no blocked system
        # call of the candidate is interrupted. (With callgrind_control, which
        # forces the invocation with ptrace, one run had a leader under
        # valgrind never print RESIGNED for its `resign`; cause not found.)
        r = subprocess.run(["vgdb", "--pid=%d" % self.pid, "--max-invoke-ms=0",
                            {"-z": "zero", "-d": "dump"}[opt]], capture_output=True,
                           text=True, timeout=60)
        t1 = time.monotonic_ns()
        mid = (t0 + t1) // 2
        self.last_ns = t1 - t0
        if r.returncode != 0:
            raise RuntimeError("vgdb %s %d: %s" % (opt, self.pid, r.stderr))
        if opt != "-d":
            return None, mid
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            new = self.files() - before
            if new:
                f = new.pop()
                # a dump is complete once its "totals:" line is written
                with open(f, errors="replace") as fh:
                    if "\ntotals:" in fh.read():
                        return f, mid
            time.sleep(0.02)
        raise RuntimeError("callgrind dump of %d did not appear" % self.pid)


def callgrind_run(ctx):
    a = ctx.args
    n = 3
    K = a.callgrind
    cgdir = os.path.join(ctx.tmp, "cg")
    os.makedirs(cgdir, exist_ok=True)
    prefix = os.path.join(cgdir, "cg.out")
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + prefix, "--dump-instr=no",
          "--separate-threads=no"]
    argvs = [Argv(vg + [a.binary, "candidate"])] + [Argv([a.binary, "candidate"])
                                                     for _ in range(n - 1)]
    path = ctx.new_path("cg")
    errs = [os.path.join(ctx.tmp, "callgrind-%d.stderr" % (i + 1)) for i in range(n)]
    log("callgrind: participant 1 under valgrind; %d failovers + idle window + per-role dumps" % K)
    g = Group("callgrind N=3", argvs, [dict(os.environ)] * n, errs, a.connect, path,
              a.session_timeout_ms)
    out = {"K": K}
    try:
        g.start(timeout=120)
        cg = Callgrind(ctx, g.procs[0].pid, prefix)
        out["warmup"] = 2 * n
        for _ in range(2 * n):      # every role's code runs twice before counting
            g.failover(30, resend_after=10)
            time.sleep(a.gap)
        # (1) K failovers in rotation, one dump
        roles = collections.Counter()
        _, w0 = cg.control("-z")
        for _ in range(K):
            fo = g.failover(30, resend_after=10)
            roles["resigner" if fo["old"] == "1" else "heir" if fo["new"] == "1" else "bystander"] += 1
            time.sleep(a.gap)
        busy, w1 = cg.control("-d")
        # (2) idle, as long
        _, i0 = cg.control("-z")
        # the dump's midpoint should fall (w1 - w0) after i0
        time.sleep(max(0.0, (i0 + (w1 - w0) - cg.last_ns // 2 - time.monotonic_ns()) / 1e9))
        idle, i1 = cg.control("-d")
        # (3) one dump per failover, to split by role
        per_role = collections.defaultdict(list)
        for _ in range(a.callgrind_roles):
            _, f0 = cg.control("-z")
            fo = g.failover(30, resend_after=10)
            d, f1 = cg.control("-d")
            role = "resigner" if fo["old"] == "1" else "heir" if fo["new"] == "1" else "bystander"
            per_role[role].append({"file": d, "wall_ns": f1 - f0})
            time.sleep(a.gap)
        out["resends"] = getattr(g, "resends", 0)
        out.update(busy_file=busy, idle_file=idle, busy_wall_ns=w1 - w0, idle_wall_ns=i1 - i0,
                   roles=dict(roles), per_role=dict(per_role))
    finally:
        g.stop()
    # numbers
    B, I = parse_callgrind(out["busy_file"]), parse_callgrind(out["idle_file"])
    scale = out["busy_wall_ns"] / out["idle_wall_ns"]
    groups = collections.Counter()
    for ob, v in B["per_ob"].items():
        groups[obj_group(ob)] += v
    igroups = collections.Counter()
    for ob, v in I["per_ob"].items():
        igroups[obj_group(ob)] += v
    out["busy_total"], out["idle_total"] = sum(B["per_ob"].values()), sum(I["per_ob"].values())
    out["summaries"] = [B["summary"], I["summary"]]
    out["per_object"] = {k: {"busy": groups[k], "idle": igroups[k],
                             "per_failover": (groups[k] - igroups[k] * scale) / K}
                         for k in sorted(set(groups) | set(igroups), key=lambda k: -groups[k])}
    out["per_failover"] = (out["busy_total"] - out["idle_total"] * scale) / K
    # the C client's loop: zookeeper_interest re-resolves the host list
    # (getaddrinfo per host, srand) on every iteration unless told otherwise
    out["callees"] = {}
    for name in ("zookeeper_interest", "getaddrinfo", "srand", "zookeeper_process",
                 "zkelect::Client::run()"):
        out["callees"][name] = {
            "busy_calls": B["callee_calls"][name], "busy_incl": B["callee_incl"][name],
            "idle_calls": I["callee_calls"][name], "idle_incl": I["callee_incl"][name]}
    idle_rate = out["idle_total"] / (out["idle_wall_ns"] / 1e9)
    out["idle_per_s"] = idle_rate
    rr = {}
    for role, lst in out["per_role"].items():
        vals = []
        for d in lst:
            P = parse_callgrind(d["file"])
            vals.append(sum(P["per_ob"].values()) - idle_rate * d["wall_ns"] / 1e9)
        rr[role] = vals
    out["per_role_ir"] = rr
    # top functions: callgrind_annotate, on a copy where "calls=0" (calls made
    # before the counters were zeroed) reads "calls=1": callgrind_annotate
    # 3.19 counts the cost line after a calls=0 line as the caller's own cost.
    fixed = out["busy_file"] + ".fixed"
    with open(out["busy_file"], errors="replace") as fi, open(fixed, "w") as fo_:
        for line in fi:
            fo_.write("calls=1 " + line[8:] if line.startswith("calls=0 ") else line)
    ann = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", fixed],
                         capture_output=True, text=True, timeout=120)
    top = []
    for line in ann.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+) \(\s*([\d.]+)%\)\s+(.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            top.append((int(m.group(1).replace(",", "")), m.group(3)))
    out["top"] = top[: a.top]
    anni = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", fixed],
                          capture_output=True, text=True, timeout=120)
    topi = []
    for line in anni.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+) \(\s*([\d.]+)%\)\s+(.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            topi.append((int(m.group(1).replace(",", "")), m.group(3)))
    out["top_inclusive"] = topi
    return out


# ---------------------------------------------------------------------------
# report

SEGMENTS_LISTING = [
    ("RESIGNED -> delete queued (old leader)", None, "del_sent"),
    ("delete queued -> notification received (heir's IO thread)", "del_sent", "notif_io"),
    ("notification received -> watcher called (completion thread)", "notif_io", "notif_cb"),
    ("watcher called -> multi + getChildren queued (engine)", "notif_cb", "first_sent"),
    ("queued -> multi{check} answer received", "multi_sent", "multi_io"),
    ("multi answer -> getChildren answer received", "multi_io", "gc_io"),
    ("last answer received -> its completion called", "last_io", "last_done"),
    ("completion called -> LEADER (engine)", "last_done", "total"),
]
MILESTONES = [
    ("delete queued by the old leader", "del_sent"),
    ("delete answered to the old leader", "del_io"),
    ("old leader's re-join create queued", "create_sent"),
    ("old leader's re-join create answered", "create_io"),
    ("delete notification received (IO thread)", "notif_io"),
    ("delete notification processed (watcher called)", "notif_cb"),
    ("multi{check} answer received", "multi_io"),
    ("multi{check} completion called", "multi_done"),
    ("getChildren answer received", "gc_io"),
    ("getChildren completion called", "gc_done"),
    ("LEADER", "total"),
]


def seg_values(an, a, b):
    v = []
    for x in an:
        if b in x and (a is None or a in x):
            v.append(x[b] - (x[a] if a else 0))
    return v


def fsync_text(run):
    fs = run.get("fsync") or {}
    n = len(run["failovers"]) or 1
    cnt = sum(v[0] for v in fs.values())
    tot = sum(v[1] for v in fs.values())
    if not cnt:
        return "-"
    return "%.1f per failover" % (cnt / n)


def row(name, vals, digits=3):
    if not vals:
        return "| %s | - | - | 0 |" % name
    return "| %s | %s | %s | %d |" % (name, fmt_ms(med(vals), digits), fmt_ms(pct(vals, 90), digits),
                                     len(vals))


def report_heading(p, a, R):
    """The run: when, the load, the driver's options, the servers' modes."""
    p("_failover_timeline.py, %s, load average at start %s, at end %s; %d failovers per run "
      "after %d warm-up, gap %.0f ms, session timeout %d ms; ensemble modes: %s._"
      % (R["started"], R["load_start"], R["load_end"], a.failovers, a.warmup, a.gap * 1000,
         a.session_timeout_ms, ", ".join("%s %s" % (k, v) for k, v in R["modes"].items())))
    p("")


def report_floor(p, a, R):
    """The C client's round trips per server, with and without host
    re-resolution, and the disk's fdatasync."""
    floor = R.get("floor")
    if floor:
        p("### Floor: one session, C client, async calls (ms)")
        p("")
        p("Measured by this script (%d round trips each, per server, alternating). "
          "\"pipelined\" = multi{check} then getChildren sent back to back, as the engine does "
          "on the listing path; times from the first send." % a.floor_count)
        p("")
        p("| server | mode | read (getChildren) median / p90 | write (multi{check}) median / p90 | "
          "pipelined: write answered | pipelined: read answered | write - read (median) |")
        p("|---|---|---|---|---|---|---|")
        for hp, d in floor.items():
            p("| %s | %s | %s / %s | %s / %s | %s | %s | %s |" % (
                hp, R["modes"].get(hp, "-"), fmt_ms(med(d["read_ns"]), 3), fmt_ms(pct(d["read_ns"], 90), 3),
                fmt_ms(med(d["write_ns"]), 3), fmt_ms(pct(d["write_ns"], 90), 3),
                fmt_ms(med(d["pipe_write_ns"]), 3), fmt_ms(med(d["pipe_read_ns"]), 3),
                fmt_ms(med(d["write_ns"]) - med(d["read_ns"]), 3)))
        allr = [x for d in floor.values() for x in d["read_ns"]]
        allw = [x for d in floor.values() for x in d["write_ns"]]
        p("| all | | %s / %s | %s / %s | %s | %s | %s |" % (
            fmt_ms(med(allr), 3), fmt_ms(pct(allr, 90), 3), fmt_ms(med(allw), 3), fmt_ms(pct(allw, 90), 3),
            fmt_ms(med([x for d in floor.values() for x in d["pipe_write_ns"]]), 3),
            fmt_ms(med([x for d in floor.values() for x in d["pipe_read_ns"]]), 3),
            fmt_ms(med(allw) - med(allr), 3)))
        late = sum(1 for d in floor.values() for w, r in zip(d["pipe_write_ns"], d["pipe_read_ns"]) if r >= w)
        tot = sum(len(d["pipe_read_ns"]) for d in floor.values())
        p("")
        p("Pipelined: the read was answered after the write in %d of %d pairs." % (late, tot))
        p("")
        p("The C client re-resolves its host list on every loop iteration of its IO thread by "
          "default (getaddrinfo per address, srand). A second session in the same program, used "
          "in turn with the first on the same server, had zoo_set_servers_resolution_delay(-1):")
        p("")
        p("| server | read: default / delay -1 (median ms) | write: default / delay -1 | "
          "read: median of paired differences | write: median of paired differences |")
        p("|---|---|---|---|---|")
        rows = list(floor.items()) + [("all", {k: [x for dd in floor.values() for x in dd[k]]
                                               for k in ("read_ns", "b_read_ns", "write_ns",
                                                         "b_write_ns")})]
        for hp, d in rows:
            dr = [x - y for x, y in zip(d["read_ns"], d["b_read_ns"])]
            dw = [x - y for x, y in zip(d["write_ns"], d["b_write_ns"])]
            p("| %s | %s / %s | %s / %s | %s | %s |" % (
                hp, fmt_ms(med(d["read_ns"]), 3), fmt_ms(med(d["b_read_ns"]), 3),
                fmt_ms(med(d["write_ns"]), 3), fmt_ms(med(d["b_write_ns"]), 3),
                fmt_ms(med(dr), 3), fmt_ms(med(dw), 3)))
        p("")
        dk = R.get("disk")
        if dk:
            v = dk["fdatasync_ns"]
            p("Disk floor: write 120 bytes into a preallocated file + fdatasync (as the "
              "transaction log), %d times%s: median %s ms, p90 %s ms." % (
                  len(v), " on the filesystem of %s" % dk["same_fs_as"] if dk["same_fs_as"] else "",
                  fmt_ms(med(v), 3), fmt_ms(pct(v, 90), 3)))
            p("")


def report_listing_path(p, an, lst, floor):
    """The failovers whose new leader had to ask ZooKeeper before LEADER."""
    reqs = collections.Counter(tuple(x["requests"]) for x in lst)
    p("Listing path: requests the new leader sent between the notification and LEADER: %s."
      % "; ".join("%s x%d" % (" + ".join(k), v) for k, v in reqs.most_common()))
    p("")
    p("Milestones from the old leader's RESIGNED (ms):")
    p("")
    p("| milestone | median | p90 | n |")
    p("|---|---|---|---|")
    for name, key in MILESTONES:
        p(row(name, seg_values(lst, None, key)))
    p("")
    p("Segments (ms; medians of segments do not add up to the median total):")
    p("")
    p("| segment | median | p90 | n |")
    p("|---|---|---|---|")
    for name, k0, k1 in SEGMENTS_LISTING:
        p(row(name, seg_values(lst, k0, k1)))
    p(row("**total RESIGNED -> LEADER**", seg_values(lst, None, "total")))
    p(row("of which inside the new leader's process (notification received -> requests "
          "queued, last answer received -> LEADER)", [x["client"] for x in lst if "client" in x]))
    p(row("of which the old leader's process (RESIGNED -> delete queued)",
          seg_values(lst, None, "del_sent")))
    p("")
    p("In-situ round trips on the listing path (ms), queued -> answer received:")
    p("")
    p("| request | median | p90 | n |")
    p("|---|---|---|---|")
    p(row("multi{check} (write) of the new leader", seg_values(lst, "multi_sent", "multi_io")))
    p(row("getChildren (read, sent right after the write) of the new leader",
          seg_values(lst, "gc_sent", "gc_io")))
    p(row("delete (write) of the old leader", [x["del_rtt"] for x in an if "del_rtt" in x]))
    after = sum(1 for x in lst if x.get("gc_after_multi", -1) >= 0)
    p("")
    p("The getChildren answer came after the multi{check} answer in %d of %d failovers."
      % (after, len([x for x in lst if "gc_after_multi" in x])))
    p("")
    if floor:
        # what the same failovers would take with the read alone
        model = []
        for x in lst:
            d = floor.get(x.get("server"))
            if d and "first_sent" in x:
                model.append(x["first_sent"] + med(d["read_ns"]) + (x["total"] - x["last_done"])
                             + (x["last_done"] - x["last_io"] if "last_io" in x else 0))
        p("Counterfactual (no write on the listing path): each failover's own time up to "
          "the requests being queued, plus the floor read RTT of the new leader's server, "
          "plus its own hand-over to LEADER: median %s ms, p90 %s ms (measured: median %s ms)."
          % (fmt_ms(med(model), 3), fmt_ms(pct(model, 90), 3),
             fmt_ms(med(seg_values(lst, None, "total")), 3)))
        p("")


def report_fast_path(p, fast):
    """The failovers of an heir that needed no request."""
    p("Heir fast path (no request between the notification and LEADER), ms:")
    p("")
    p("| segment | median | p90 | n |")
    p("|---|---|---|---|")
    p(row("RESIGNED -> delete queued (old leader)", seg_values(fast, None, "del_sent")))
    p(row("delete queued -> notification received", seg_values(fast, "del_sent", "notif_io")))
    p(row("notification received -> watcher called", seg_values(fast, "notif_io", "notif_cb")))
    p(row("watcher called -> LEADER (engine)", [x["cb_to_leader"] for x in fast]))
    p(row("**total RESIGNED -> LEADER**", seg_values(fast, None, "total")))
    p(row("of which inside the new leader's process (notification received -> LEADER)",
          [x["client"] for x in fast if "client" in x]))
    p("")


def report_timeline(p, run, floor):
    """One timeline run (debug log on): its paths, then each path's
    milestones and segments, fsyncs and requests."""
    an = run["analysis"]
    paths = collections.Counter(x.get("path") for x in an)
    p("### Timeline: %s (%d failovers)" % (run["label"], len(an)))
    p("")
    p("Paths: %s. Timestamps: %s.%s" % (
        ", ".join("%s %d" % kv for kv in sorted(paths.items())),
        "ns (shim) for the C client's log, ns for the EVENT lines" if run["fine_ts"]
        else "millisecond resolution (shim not loaded): segments below 1 ms are not meaningful",
        "" if not run["unpaired"] else " %d completion(s) without an IO-thread receipt line "
        "or the reverse (requests cancelled when the session closes at quit)." % run["unpaired"]))
    p("")
    lst = [x for x in an if x.get("path") == "listing"]
    fast = [x for x in an if x.get("path") == "fast"]
    if lst:
        report_listing_path(p, an, lst, floor)
    if fast:
        report_fast_path(p, fast)
    p("Transaction-log fsyncs over the failover window, all three servers (mntr "
      "zk_cnt_fsynctime deltas; keepalives of the window included): %s." % fsync_text(run))
    p("")
    allreq = collections.Counter()
    for x in an:
        allreq.update(x.get("all_requests", {}))
    p("Requests sent by all participants from RESIGNED until the old leader is FOLLOWER "
      "again, per failover: %s (total %.1f)." % (
          ", ".join("%s %.2f" % (k, v / len(an)) for k, v in allreq.most_common()),
          sum(allreq.values()) / len(an)))
    p("")


def paired(x, y):
    d = [u - v for u, v in zip(x, y)]
    return "ratio of medians %.2f, median of paired differences %s ms" % (
        med(x) / med(y), fmt_ms(med(d), 3))


def report_compare(p, R):
    """The implementations side by side without the debug log: time and
    client CPU per failover, then paired comparisons."""
    cmp_runs = R.get("compare", [])
    if cmp_runs:
        p("### Same driver, no debug log: RESIGNED -> LEADER and client CPU")
        p("")
        p("The implementations run at the same time, each on its own election path with its "
          "own N participants, and their failovers alternate (failover k of each within about "
          "a second, the one going first rotating), so that all meet the same moments of the "
          "shared machine. CPU = on-CPU time (user + kernel, /proc/PID/task/*/schedstat) of "
          "the implementation's participant processes over the whole window, minus an idle "
          "window as long (all idle), per failover.")
        p("")
        p("| run | median (ms) | p90 (ms) | n | client CPU per failover (ms, all its processes) | "
          "idle CPU (ms/s) |")
        p("|---|---|---|---|---|---|")
        for run in cmp_runs:
            tot = [fo["leader_ns"] - fo["resigned_ns"] for fo in run["failovers"]]
            c = run.get("cpu")
            if c:
                idle_rate = c["idle_ns"] / c["idle_wall_ns"]
                per = (c["busy_ns"] - idle_rate * c["busy_wall_ns"]) / len(tot)
                cs = "%.3f" % (per / 1e6)
                ir = "%.3f" % (idle_rate * 1e3)
            else:
                cs = ir = "-"
            p("| %s, round %d | %s | %s | %d | %s | %s |" % (
                run["label"], run.get("round", 1), fmt_ms(med(tot), 3), fmt_ms(pct(tot, 90), 3),
                len(tot), cs, ir))
        p("")
        by = collections.defaultdict(dict)
        for run in cmp_runs:
            kind = run["label"].rsplit(" N=", 1)[0]
            by[(run["n"], run.get("round", 1))][kind] = [fo["leader_ns"] - fo["resigned_ns"]
                                                         for fo in run["failovers"]]
        for (n, rnd), v in sorted(by.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
            items = []
            if "libzkelect" in v and "kazoo" in v:
                items.append("libzkelect vs kazoo: " + paired(v["libzkelect"], v["kazoo"]))
            if "libzkelect [resolution delay -1]" in v and "libzkelect" in v:
                items.append("resolution delay -1 vs default: "
                             + paired(v["libzkelect [resolution delay -1]"], v["libzkelect"]))
            if items:
                p("- N=%d, round %d: %s." % (n, rnd, "; ".join(items)))
        p("")


def report_callgrind(p, a, R):
    """Instructions per failover in one candidate process: per object, selected
    callees, per role, and callgrind_annotate's top functions."""
    cg = R.get("callgrind")
    if cg:
        K = cg["K"]
        p("### Callgrind: instructions in one libzkelect candidate process")
        p("")
        p("Participant 1 of 3 under `valgrind --tool=callgrind` (the other two native), %d "
          "failovers in rotation after %d warm-up ones (its roles: %s): counters zeroed before, "
          "dumped after (%.2f s), then zeroed, an idle window (%.2f s, its counts scaled to the "
          "failover window's length), dumped. Per "
          "failover = (failover window - idle window) / %d: one process's share, averaged over "
          "its three roles; all three participants together execute about 3x that per failover. "
          "Guest user-space instructions only (no kernel). Time at ~1 instruction/ns."
          % (K, cg["warmup"], ", ".join("%s %d" % kv for kv in sorted(cg["roles"].items())),
             cg["busy_wall_ns"] / 1e9, cg["idle_wall_ns"] / 1e9, K))
        if cg.get("resends"):
            p("")
            p("(%d `resign` command(s) had to be sent twice to the process under valgrind.)"
              % cg["resends"])
        p("")
        p("| object | failover window Ir | idle window Ir | Ir per failover (one process) | "
          "~us per failover |")
        p("|---|---|---|---|---|")
        for k, v in cg["per_object"].items():
            if v["busy"] < 1000 and v["idle"] < 1000:
                continue
            p("| %s | %d | %d | %.0f | %.1f |" % (k, v["busy"], v["idle"], v["per_failover"],
                                                   v["per_failover"] / 1e3))
        p("| **all** | %d | %d | %.0f | %.1f |" % (cg["busy_total"], cg["idle_total"],
                                                   cg["per_failover"], cg["per_failover"] / 1e3))
        p("")
        p("Idle: %.0f instructions/s in this process (keepalives, pings, the C client's loop)."
          % cg["idle_per_s"])
        p("")
        p("Selected callees, inclusive (callers' calls= lines of the dumps): calls and "
          "instructions per failover, net of the idle window; calls made before the counters "
          "were zeroed count as 0 calls.")
        p("")
        p("| function | calls per failover | Ir per failover | Ir per call (failover window) | "
          "share of all Ir per failover |")
        p("|---|---|---|---|---|")
        sc = cg["busy_wall_ns"] / cg["idle_wall_ns"]
        for name, v in cg["callees"].items():
            calls = (v["busy_calls"] - v["idle_calls"] * sc) / K
            incl = (v["busy_incl"] - v["idle_incl"] * sc) / K
            per_call = v["busy_incl"] / v["busy_calls"] if v["busy_calls"] else 0
            p("| `%s` | %s | %.0f | %s | %.0f%% |" % (
                name, "%.1f" % calls if v["busy_calls"] else "- (entered before)", incl,
                "%.0f" % per_call if per_call else "-", 100.0 * incl / cg["per_failover"]))
        p("")
        if cg.get("per_role_ir"):
            p("Per role, one dump per failover minus the idle rate over the same wall time (the "
              "idle rate was measured in whatever role the process then held, so some ten "
              "thousand either way is noise: the bystander does no election work):")
            p("")
            p("| role of the process | failovers | median Ir | min | max | ~us (median) |")
            p("|---|---|---|---|---|---|")
            for role in ("resigner", "heir", "bystander"):
                v = cg["per_role_ir"].get(role)
                if v:
                    p("| %s | %d | %.0f | %.0f | %.0f | %.1f |" % (role, len(v), med(v), min(v), max(v),
                                                                  med(v) / 1e3))
            p("")
        p("Top functions in the failover window by own (exclusive) instructions, "
          "`callgrind_annotate --inclusive=no` (idle included, not subtracted):")
        p("")
        p("| Ir | function [object] |")
        p("|---|---|")
        for ir, name in cg["top"]:
            p("| %d | `%s` |" % (ir, name.replace("|", "\\|")))
        p("")
        p("Top inclusive (callgrind_annotate --inclusive=yes), first entries below the thread "
          "roots:")
        p("")
        p("| Ir | function [object] |")
        p("|---|---|")
        shown = 0
        for ir, name in cg["top_inclusive"]:
            if any(s in name for s in ("clone", "start_thread", "(below main)", "0x00000000000d4490")):
                continue
            p("| %d | `%s` |" % (ir, name.replace("|", "\\|")))
            shown += 1
            if shown >= a.top:
                break
        p("")


def report(ctx, R):
    a = ctx.args
    L = []
    p = L.append
    report_heading(p, a, R)
    report_floor(p, a, R)
    for run in R["timelines"]:
        report_timeline(p, run, R.get("floor"))
    report_compare(p, R)
    report_callgrind(p, a, R)
    return "\n".join(L)


# ---------------------------------------------------------------------------


def find_helpers(build):
    """The C helpers bench/meson.build made: (zkts.so, zkftl, zkresoff.so).
    Without the log shim the timelines fall back to the log's millisecond
    stamps; without zkresoff the experiment is skipped."""
    d = os.path.join(build, "bench")
    shim, zkftl, resoff = (os.path.join(d, x) for x in ("zkts.so", "zkftl", "zkresoff.so"))
    if not os.access(zkftl, os.X_OK):
        raise RuntimeError("%s is missing: build first (ninja -C %s)" % (zkftl, build))
    if not os.path.exists(shim):
        log("%s is missing: falling back to the log's millisecond stamps" % shim)
        shim = None
    if not os.path.exists(resoff):
        log("%s is missing: resolution experiment skipped" % resoff)
        resoff = None
    return shim, zkftl, resoff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=DEFAULT_BINARY)
    ap.add_argument("--connect", required=True, help="connect string of a running ensemble")
    ap.add_argument("--kazoo", default=DEFAULT_KAZOO, help="kazoo participant ('' to skip)")
    ap.add_argument("--failovers", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--gap", type=float, default=0.05, help="seconds between failovers")
    ap.add_argument("--session-timeout-ms", type=int, default=2000)
    ap.add_argument("--n", default="3,2", help="participant counts for the timelines")
    ap.add_argument("--floor-count", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds of interleaved (libzkelect without debug log, the same with "
                         "resolution delay -1, kazoo) per N")
    ap.add_argument("--callgrind", type=int, default=0, metavar="K",
                    help="also profile one candidate under callgrind over K failovers (0: skip)")
    ap.add_argument("--callgrind-roles", type=int, default=9,
                    help="failovers dumped one by one to split instructions by role")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--no-resolve-experiment", dest="resolve_experiment", action="store_false",
                    help="skip the runs with zoo_set_servers_resolution_delay(-1) preloaded")
    ap.add_argument("--parts", default="floor,timeline,compare,callgrind")
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--keep", help="keep participant logs and dumps in this directory")
    a = ap.parse_args()
    a.binary = os.path.abspath(a.binary)
    parts = set(a.parts.split(","))
    if not a.callgrind:
        parts.discard("callgrind")
    if not os.access(a.binary, os.X_OK):
        sys.exit("no zkelect binary at %s" % a.binary)
    if a.kazoo and not os.path.exists(a.kazoo):
        log("no kazoo participant at %s: skipped" % a.kazoo)
        a.kazoo = ""
    tmp = tempfile.mkdtemp(prefix="zkelect-ftl-")
    ctx = Ctx(a, tmp)
    R = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load_start": loadavg(),
         "modes": server_modes(a.connect), "timelines": [], "compare": []}
    try:
        ctx.shim, ctx.zkftl, ctx.resoff = find_helpers(os.path.dirname(os.path.dirname(a.binary)))
        if not a.resolve_experiment:
            ctx.resoff = None
        ns = [int(x) for x in a.n.split(",") if x]
        if "floor" in parts:
            log("floor: %d round trips of each kind per server" % a.floor_count)
            R["floor"] = floor_run(ctx)
            R["disk"] = disk_floor()
        for n in ns:    # runs of one N close together in time
            if "timeline" in parts:
                R["timelines"].append(timeline_run(ctx, n, debug=True))
                if ctx.resoff:
                    R["timelines"].append(timeline_run(ctx, n, debug=True, resoff=True))
            if "compare" in parts:
                for r in range(a.rounds):
                    for x in compare_runs(ctx, n):
                        x["round"] = r + 1
                        R["compare"].append(x)
        if "callgrind" in parts:
            R["callgrind"] = callgrind_run(ctx)
        R["load_end"] = loadavg()
        R["modes_end"] = server_modes(a.connect)
        print(report(ctx, R))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(R, f, indent=1, default=str)
    finally:
        # the election paths are persistent: remove them (empty by now)
        if ctx.paths and getattr(ctx, "zkftl", None):
            subprocess.run([ctx.zkftl, "rm", a.connect.split(",")[0]] + ctx.paths,
                           capture_output=True, timeout=60)
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            for f in (glob.glob(os.path.join(tmp, "*.stderr")) + glob.glob(os.path.join(tmp, "*.stdout"))
                      + glob.glob(os.path.join(tmp, "cg", "*"))):
                shutil.copy(f, a.keep)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

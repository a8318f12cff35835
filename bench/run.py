#!/usr/bin/python3
"""./dev bench: libzkelect side by side with Curator and kazoo, plus the floor.

  bench/run.py --build BUILD_DIR [--quick] [--only libzkelect,curator,kazoo,floor,micro,scale,idle,endpoint,fenced,balance]
               [--idle-100k] [--groups convergence,graceful,crash-pause-herd50,herd100,transfer,operations] [--upgrade]
  bench/run.py --build BUILD_DIR [--quick] --wan MS[,MS...] | --geo MS[,MS...]
  bench/run.py --report-only bench/results/raw/STAMP

Starts a 3-server ZooKeeper ensemble on loopback (tests/bed/zkbed.py, tickTime
500 ms, sessions of 1-20 s, fsync on), runs the driver bench/election_bench.py
for `zkelect candidate`, Curator's LeaderLatch and kazoo's Election (the
participants in bench/participants/) with the same options in the same run,
the in-process C programs of this folder (the scale part: also E elections
on one session, each alone on its path, beside bench/zkbulk.c's pipelined
creates and deletes, and bench/handover.c's handover of E elections from a
leader process to a standby process: crash and graceful, on 1 and 10
sessions), then the C-client floors (bench/zkfloor.c, bench/zkjoin.c), stops the ensemble (by PID, also on failure) and writes
bench/results/<stamp>.md and bench/results/LATEST.md, with every raw result
under bench/results/raw/<stamp>/. LATEST.md, which copies every table, is
what the repository keeps: git ignores raw/ and the per-run <stamp>.md
(`git add -f` one to keep it on purpose); --report-only RAW_DIR writes the
report and LATEST.md again from a raw folder. The C programs are built by Meson (bench/meson.build) into
BUILD_DIR/bench.

The fenced part (issue 54) times a fenced write of libzkelect
(bench/fenced.c: zkelect_fenced_ops_* and zkelect_fenced_commit, one set a
batch) against a plain zoo_set of the same size and, as its floor, the
same set behind a check in one multi (bench/zkset.c, the bare C client),
both sessions on the same server, in rounds of one program after the
other. Its section of LATEST.md is its own (kept by runs without it), so
`--only fenced` measures it alone and leaves the rest as it was.

The balance part (issue 56; bench/balance.py, over tests/bed/balance.py)
runs the phases of a balanced group on the bench's ensemble: 3 processes
join one balance.group, each with a candidacy on each of E = 3,000
elections (300 with --quick) and a sampler of every is_leader(); a 4th
joins; the 4th leaves gracefully; one of the 3 is SIGKILLed (crash guard
on). For each: the time until every process leads E/P +- 1, the moves
(BALANCE_MOVES), the longest time any election was without a leader (from
the sampled spans), and the overlaps of two leaders over the whole run.
Like the fenced part, its section of LATEST.md is its own, and
`--only balance` runs it alone.

The idle part (bench/idle_cost.py) counts what ZooKeeper writes and
receives while one session leads E = 1, 100 and 1,000 elections at rest,
for each library, then libzkelect's heir and third in line on the same
elections; --idle-100k adds libzkelect alone at E = 100,000 (Curator and
kazoo would take many minutes to join; three sessions of 100,000 nodes
want --zk-heap 1g).

The crash group (crash-pause-herd50) also runs libzkelect's crash test alone
three more times (CRASH_VARIANTS, issue 37): with crash.guard=off (the
session timeout, as the peers wait for it), and with the guard against
SIGSEGV and SIGABRT instead of SIGKILL; the crash section shows them beside
the peers.

The operations group (--groups operations, issue 32; run last, on an
ensemble of its own per library since it restarts the servers):
bench/rolling_restart.py restarts the 3 servers in turn (followers first,
the quorum's leader last, each down 2 s) under 3 participants of each
library, at T = 6 s and 2 s, twice each (once with --quick), and measures
the quorum's own unavailability in the same run with a bare session probe.
--upgrade adds a rolling upgrade from Debian's 3.8 to the newest 3.9. Run
alone (`--only libzkelect,curator,kazoo --groups operations`) it starts no
shared ensemble and writes a report of its own; either way LATEST.md keeps
it as a section of its own (a run without it keeps the last one).

--wan MS[,MS...]: the side-by-side bench on a wide-area bed instead (see
run_wan): every client link (the three libraries' participants and the C
client floors alike) goes through one fault proxy per server
(tests/bed/faultproxy.py) holding each byte MS each way, one MS after the
other on one ensemble. --geo MS[,...] delays the links between the servers
by MS each way too (zkbed's peer_links), so a commit costs a round trip
between servers as well. The WAN report has its own tables (figures, their
floors through the same proxies, and round trips of 2 x MS); it is written
to bench/results/<stamp>.md and, as its own section, into LATEST.md, whose
loopback part it leaves as it was (a loopback run in turn keeps the WAN
sections of LATEST.md).
"""
import argparse
import datetime
import glob
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The operations group (bench/rolling_restart.py, issue 32): a rolling
# restart of the 3 servers, each down OPS_DOWN_S, at each session timeout,
# OPS_REPEATS times per library; --upgrade adds a rolling upgrade from
# Debian's 3.8 to UPGRADE_TO (bed/zkdist.py's newest 3.9).
OPS_GROUP = "operations"
OPS_TIMEOUTS_MS = (6000, 2000)
OPS_REPEATS = 2
OPS_DOWN_S = 2.0
UPGRADE_TO = "3.9"
REPO = os.path.dirname(HERE)
IMPLS = ["libzkelect", "curator", "kazoo"]
# The crash group's extra runs of libzkelect alone (issue 37): the crash
# guard off (what every peer does: wait for the session timeout), and the
# guard (the default) against the other signals a crash is. Each is a
# driver run of its own: name -> (options of `zkelect candidate`, signal).
CRASH_GROUP = "crash-pause-herd50"
CRASH_VARIANTS = {
    "libzkelect-guard-off": (["--set", "crash.guard=off"], "KILL"),
    "libzkelect-sigsegv": ([], "SEGV"),
    "libzkelect-sigabrt": ([], "ABRT"),
}
PARTS = IMPLS + ["floor", "micro", "scale", "idle", "endpoint", "fenced", "balance"]
# The fenced part (issue 54): a fenced write (bench/fenced.c) against a plain
# set of the same size (bench/zkset.c), in FENCED_ROUNDS rounds of the two
# programs one after the other, after a warm-up round (a drift of the shared
# machine's load falls on both), FENCED_COUNT timed writes each (fewer with
# --quick). Target: the
# fenced write's median at most FENCED_TARGET x the plain set's.
FENCED = "fenced"
FENCED_BYTES = (100, 10000)
FENCED_ROUNDS = 5
FENCED_COUNT = 200
FENCED_TARGET = 1.1
# The balance part (issue 56, bench/balance.py): BALANCE_E elections (with
# --quick BALANCE_E_QUICK) in 3, then 4, 3 and 2 processes of one group,
# sessions of BALANCE_T_MS. Targets: even (E/P +- 1) within BALANCE_EVEN_S
# of a join or a leave; a 4th join's moves at most E/4 + E/300 (760 of
# 3,000); a graceful leave leaves no election without a leader for longer
# than one graceful handover, here BALANCE_GAP_MS: a handover is
# milliseconds, the rest is the samplers' rounds (4 Python processes each
# sampling E handles round after round) on a loaded machine; after a
# SIGKILL even within BALANCE_KILL_S plus the time of its moves at the 4th
# join's pace; no overlap.
BALANCE = "balance"
BALANCE_E = 3000
BALANCE_E_QUICK = 300
BALANCE_T_MS = 4000
BALANCE_EVEN_S = 10.0
BALANCE_GAP_MS = 1000.0
BALANCE_KILL_S = 1.0
TICK_MS = 500  # the bench ensemble's tickTime
FLOOR_PLACEMENT = "ensemble: full connect string (random, like the participants)"
# The same, with the ensemble left idle before each delete, as it is before
# a graceful failover (the driver's gap); a delete after idling is slower.
IDLE_FLOOR_MS = 100
# N of the convergence burst floor (bench/zkjoin.c).
JOIN_FLOOR_NS = (10, 50, 100)
# The scale part's elections on one session, each on a path of its own
# (issue 35); --quick runs the first only.
SHARD_ES = (1000, 10000)
# --shards-100k adds this many, without an event fd each (--poll 1: they
# would pass a usual RLIMIT_NOFILE), keeping no events (events.queue.max=0,
# as a program that only polls is_leader() would set it) and torn down
# resign-first only (one by one is 100,000 round trips).
SHARD_BIG = 100000
# The handover runs of the scale part (issue 35, bench/handover.c): a leader
# process and a standby process on the same E elections, each on its path,
# over 1 and over HANDOVER_SESSIONS[1] sessions each; the leader is
# SIGKILLed (with the crash guard, the default, and without it) or leaves
# gracefully; HANDOVER_REPEATS times (1 with --quick), each repeat with the
# floor (bench/zkbulk.c) for E of its own. --shards-100k adds E = 100,000 on
# one session.
HANDOVER_ES = (1000, 10000)
HANDOVER_SESSIONS = (1, 10)
HANDOVER_MODES = ("crash", "crash-guard-off", "graceful")
HANDOVER_REPEATS = 3
HANDOVER_T_MS = 10000  # the session timeout both processes ask for (bench/scale.c's)
# From this many elections on one session the bench's clients set
# zk.session.nodes.max.bytes to 0 (no bound): the library's default, 1,000,000
# bytes of candidate node paths, refuses a volunteer past some 10,000 of the
# bench's paths (the session's closing transaction would pass the servers'
# jute.maxbuffer; docs/limits.md). The E = 100,000 runs are graceful only
# for that reason (a crash's closing transaction takes the ensemble down).
UNBOUNDED_PER_SESSION = 5000


def nodes_bound_args(elections, sessions):
    """scale.c's and handover.c's option for E elections over S sessions."""
    return ["--nodes-max-bytes", "0"] if elections // sessions >= UNBOUNDED_PER_SESSION else []
# The scale part's sets (--scale-sets): scale.c's candidacies on one path,
# the handover runs, scale.c's shards (E on one session, each on a path of
# its own, and the floor), and the peers' holders.
SCALE_SETS = ["candidacies", "handover", "shards", "peers"]
PEER_LIMIT_S = 120  # the peers' join, and then their teardown, each within this
IDLE_FLOOR_PLACEMENT = "ensemble idle %d ms before each delete" % IDLE_FLOOR_MS


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def start_ensemble(peer_links=False, version=None, heap="256m"):
    """The bench ensemble: ZooKeeper's defaults where the test bed relaxes
    them (fsync, preallocation), sessions up to the herd test's 20 s.
    peer_links: the links between servers go through proxies (geo mode).
    version: the server release (zkbed's Ensemble(version=...)).
    heap: each server's Java heap (-Xmx); 256m holds the scale part up to
    E = 10,000, not 100,000 elections with a standby (--zk-heap)."""
    try:
        from bed.zkbed import Ensemble
    except ImportError as e:
        sys.exit("bench: %s: tests/ must be on PYTHONPATH (./dev bench sets it)" % e)
    ens = Ensemble(n=3, tick_ms=TICK_MS, init_limit=10, sync_limit=5, peer_links=peer_links, version=version,
                   heap=heap,
                   extra_cfg={"maxSessionTimeout": 40 * TICK_MS, "forceSync": "yes",
                              "preAllocSize": 65536})
    ens.start()
    return ens


# --------------------------------------------------------------------------
# plan: the driver runs, same options for every implementation

def driver_groups(quick):
    if quick:
        return [
            ("convergence", ["--tests", "convergence", "--n", "2,10,50,100", "--conv-repeats", "1"]),
            ("graceful", ["--tests", "graceful", "--n", "10,50", "--trials", "10", "--warmup", "2"]),
            (CRASH_GROUP, ["--tests", "crash,pause,herd", "--crash-trials", "3",
                                    "--pause-trials", "2", "--herd-n", "50", "--herd-trials", "2"]),
            ("herd100", ["--tests", "herd", "--herd-n", "100", "--herd-trials", "2"]),
            ("transfer", ["--tests", "transfer", "--transfer-n", "10", "--transfer-trials", "3",
                          "--warmup", "1"]),
        ]
    return [
        ("convergence", ["--tests", "convergence", "--n", "2,10,50,100", "--conv-repeats", "7"]),
        ("graceful", ["--tests", "graceful", "--n", "10,50", "--trials", "30", "--warmup", "3"]),
        (CRASH_GROUP, ["--tests", "crash,pause,herd", "--crash-trials", "10",
                                "--pause-trials", "5", "--herd-n", "50", "--herd-trials", "5"]),
        ("herd100", ["--tests", "herd", "--herd-n", "100", "--herd-trials", "5"]),
        ("transfer", ["--tests", "transfer", "--transfer-n", "10", "--transfer-trials", "10",
                      "--warmup", "2"]),
    ]


# Groups of what only libzkelect offers: Curator and kazoo have no transfer.
ZKELECT_ONLY_GROUPS = {"transfer"}


def run_logged(cmd, logpath, timeout, env=None, stdout_path=None):
    """Run cmd, stderr (and stdout unless stdout_path) teed to logpath; returns rc."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    with open(logpath, "a") as lf:
        out = open(stdout_path, "w") if stdout_path else subprocess.PIPE
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT if not stdout_path else subprocess.PIPE,
                                 text=True, env=env, start_new_session=True)
            stream = p.stdout if not stdout_path else p.stderr
            deadline = time.monotonic() + timeout
            for line in stream:
                lf.write(line)
                lf.flush()
                sys.stderr.write("    " + line)
                if time.monotonic() > deadline:
                    break
            try:
                p.wait(max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            if p.poll() is None:
                log("timeout after %d s: killing process group %d" % (timeout, p.pid))
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(30)
                return -9
            return p.returncode
        finally:
            if stdout_path:
                out.close()


def c_programs(build):
    progs = {name: os.path.join(build, "bench", "zkelect-bench-" + name)
             for name in ("isleader", "memcand", "scale", "pausecheck", "idlehold", "handover", "fenced")}
    progs["zkfloor"] = os.path.join(build, "bench", "zkfloor")
    progs["zkjoin"] = os.path.join(build, "bench", "zkjoin")
    progs["zkbulk"] = os.path.join(build, "bench", "zkbulk")
    progs["zkset"] = os.path.join(build, "bench", "zkset")
    missing = [p for p in progs.values() if not os.access(p, os.X_OK)]
    if missing:
        sys.exit("bench: %s missing (ninja -C %s builds them)" % (", ".join(missing), build))
    return progs


# The Curator compared (bench/participants/curator/run.sh): Debian's unless
# $CURATOR_CLASSPATH names another release's jars
# (python3 tests/bed/curatordist.py classpath 5.9.0).
CURATOR_CP = (os.environ.get("CURATOR_CLASSPATH")
              or "/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-simple.jar")


def prepare_curator(tmp):
    """Build the Curator participant into tmp (nothing is written into the
    source tree); returns its command and environment."""
    classes = os.path.join(tmp, "curator")
    subprocess.run([os.path.join(HERE, "participants", "curator", "build.sh"), classes], check=True)
    env = dict(os.environ, CURATOR_CLASSES=classes)
    return os.path.join(HERE, "participants", "curator", "run.sh"), env


def run_groups(groups, active, impl_cmd, impl_env, connect, outdir, logdir, runlog, meta, label=""):
    """The driver (election_bench.py) for each group and implementation,
    results to outdir/<impl>-<group>.json; a driver that fails is noted."""
    for gi, (group, gargs) in enumerate(groups):
        # rotate the order so slow drift of the machine's load is shared out
        order = active[gi % len(active):] + active[:gi % len(active)] if active else []
        for impl in order:
            if group in ZKELECT_ONLY_GROUPS and impl != "libzkelect":
                continue
            out = os.path.join(outdir, "%s-%s.json" % (impl, group))
            cmd = ["/usr/bin/python3", os.path.join(HERE, "election_bench.py"),
                   "--impl-cmd", impl_cmd[impl], "--name", impl,
                   "--connect", connect, "--json", out, "--log-dir", logdir] + gargs
            rc = run_logged(cmd, runlog, 3600, env=impl_env.get(impl))
            if rc != 0:
                meta["failures"].append("%s%s %s: driver exited %d" % (label, impl, group, rc))
        if group == CRASH_GROUP and "libzkelect" in active and not label:
            trials = gargs[gargs.index("--crash-trials") + 1]
            for name, (extra, sig) in CRASH_VARIANTS.items():
                cmd = ["/usr/bin/python3", os.path.join(HERE, "election_bench.py"),
                       "--impl-cmd", shlex.join(shlex.split(impl_cmd["libzkelect"]) + extra),
                       "--name", name, "--connect", connect,
                       "--json", os.path.join(outdir, "%s-crash.json" % name), "--log-dir", logdir,
                       "--tests", "crash", "--crash-trials", trials, "--crash-signal", sig]
                rc = run_logged(cmd, runlog, 1800)
                if rc != 0:
                    meta["failures"].append("%s crash: driver exited %d" % (name, rc))


def new_run(a, parts, **extra):
    """A run's stamp, folders and metadata: (stamp, raw, tmp, runlog, logdir,
    build, zkelect, meta). Event logs go to logdir, outside the results:
    too big to commit, but what a failover is dissected from."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    raw = os.path.join(a.out, "raw", stamp)
    os.makedirs(raw)
    tmp = tempfile.mkdtemp(prefix="zkelect-bench-")
    runlog = os.path.join(raw, "run.log")
    logdir = os.path.join(tempfile.gettempdir(), "zkelect-bench-logs", stamp)
    build = os.path.abspath(a.build)
    zkelect = os.path.join(build, "tools", "zkelect")
    if "libzkelect" in parts and not os.access(zkelect, os.X_OK):
        sys.exit("bench: %s is missing (build first)" % zkelect)
    meta = {"stamp": stamp, "quick": a.quick, "parts": parts, "build": build, **extra,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "load_start": os.getloadavg(), "cpus": os.cpu_count(), "failures": [],
            "commit": git_describe()}
    return stamp, raw, tmp, runlog, logdir, build, zkelect, meta


def run_all(a):
    parts = [p.strip() for p in a.only.split(",")] if a.only else PARTS
    bad = [p for p in parts if p not in PARTS]
    if bad:
        sys.exit("bench: --only takes %s (not %s)" % (",".join(PARTS), ",".join(bad)))
    sets = [x.strip() for x in a.scale_sets.split(",")] if a.scale_sets else SCALE_SETS
    bad = [x for x in sets if x not in SCALE_SETS]
    if bad:
        sys.exit("bench: --scale-sets takes %s (not %s)" % (",".join(SCALE_SETS), ",".join(bad)))
    groups = driver_groups(a.quick)
    names = [name for name, _ in groups] + [OPS_GROUP]
    want = [g.strip() for g in a.groups.split(",")] if a.groups else names
    bad = [g for g in want if g not in names]
    if bad:
        sys.exit("bench: --groups takes %s (not %s)" % (",".join(names), ",".join(bad)))
    groups = [(name, args) for name, args in groups if name in want]
    active = [i for i in IMPLS if i in parts]
    ops = OPS_GROUP in want and bool(active)
    if a.upgrade and not ops:
        sys.exit("bench: --upgrade is a variant of the %s group (select it and a library)" % OPS_GROUP)
    # Only the operations group: it starts ensembles of its own, and the
    # report is its section alone (LATEST.md keeps the rest as it was).
    ops_only = ops and not (groups and active) and not [p for p in parts if p not in IMPLS]
    # The fenced part alone, or the balance part: its section of LATEST.md,
    # the rest kept.
    fenced_only = parts == [FENCED]
    balance_only = parts == [BALANCE]
    stamp, raw, tmp, runlog, logdir, build, zkelect, meta = new_run(
        a, parts, groups=want, ops_only=ops_only, fenced_only=fenced_only, balance_only=balance_only,
        upgrade=a.upgrade, zk_heap=a.zk_heap)

    progs = c_programs(build)
    kazoo = os.path.join(HERE, "participants", "kazoo", "kazoo_participant.py")
    impl_cmd = {"libzkelect": shlex.join([zkelect, "candidate"]),
                "kazoo": shlex.join(["/usr/bin/python3", kazoo])}
    impl_env = {}
    if "curator" in parts or "idle" in parts or ("scale" in parts and "peers" in sets):
        cmd, impl_env["curator"] = prepare_curator(tmp)
        impl_cmd["curator"] = shlex.quote(cmd)

    ens = None

    def on_term(signum, frame):
        raise SystemExit("bench: signal %d" % signum)

    old = signal.signal(signal.SIGTERM, on_term)
    t_start = time.monotonic()
    try:
        if not a.connect and not ops_only:
            log("starting the bench ensemble")
            ens = start_ensemble(heap=a.zk_heap)
            log("ensemble up: %s" % ens.connect_string)
        connect = a.connect or (ens.connect_string if ens else None)

        def prog(name, args, timeout, out_name=None):
            out = os.path.join(raw, (out_name or name) + ".json")
            rc = run_logged([progs[name], "--connect", connect] + args, runlog, timeout,
                            stdout_path=out)
            if rc != 0:
                meta["failures"].append("%s exited %d" % (name, rc))

        if "micro" in parts:
            q = a.quick
            prog("isleader", ["--calls", "500000" if q else "2000000", "--repeats", "3" if q else "9"], 600)
            prog("memcand", ["--sessions", "10", "--per-round", "1000", "--rounds", "3" if q else "5"], 900)
            prog("pausecheck", ["--trials", "2" if q else "5"], 600)

        if FENCED in parts:
            run_fenced(progs, connect, raw, runlog, meta, a.quick)
        if BALANCE in parts:
            run_balance(build, connect, raw, runlog, meta, a.quick)

        if active and groups:
            # The first library to run would otherwise meet servers whose
            # request path has not been compiled yet (the JIT), and the
            # convergence group always starts with the same library: a
            # burst of the bare C client first, its figures thrown away.
            rc = run_logged([progs["zkjoin"], "--connect", connect, "--n", "50", "--repeats", "3",
                             "--warmup", "2", "--label", "warm-up"], runlog, 300,
                            stdout_path=os.devnull)
            if rc != 0:
                meta["failures"].append("the ensemble's warm-up (zkjoin) exited %d" % rc)
        run_groups(groups, active, impl_cmd, impl_env, connect, raw, logdir, runlog, meta)

        if "floor" in parts:
            n, w = (300, 60) if a.quick else (1000, 200)
            rc = run_logged([progs["zkfloor"], "--connect", connect, "--count", str(n),
                             "--warmup", str(w), "--label", FLOOR_PLACEMENT], runlog, 1200,
                            stdout_path=os.path.join(raw, "floor.txt"))
            if rc != 0:
                meta["failures"].append("floor exited %d" % rc)
            rc = run_logged([progs["zkfloor"], "--connect", connect, "--count", "40" if a.quick else "100",
                             "--warmup", "5", "--idle-ms", str(IDLE_FLOOR_MS),
                             "--label", IDLE_FLOOR_PLACEMENT], runlog, 1200,
                            stdout_path=os.path.join(raw, "floor_idle.txt"))
            if rc != 0:
                meta["failures"].append("idle floor exited %d" % rc)
            # The burst floor of convergence: N contenders of the bare C
            # client, as many repeats as the driver's convergence.
            for n in JOIN_FLOOR_NS:
                rc = run_logged([progs["zkjoin"], "--connect", connect, "--n", str(n),
                                 "--repeats", "3" if a.quick else "7", "--label", FLOOR_PLACEMENT],
                                runlog, 600, stdout_path=os.path.join(raw, "floor_join%d.txt" % n))
                if rc != 0:
                    meta["failures"].append("join floor N=%d exited %d" % (n, rc))
        if "idle" in parts:
            # One session leading E elections at rest: what ZooKeeper writes.
            classes = impl_env["curator"]["CURATOR_CLASSES"]
            holders = {
                "libzkelect": shlex.join([progs["idlehold"]]),
                "curator": shlex.join(["java", "-XX:+UseSerialGC", "-Xmx512m",
                                       "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
                                       classes + ":" + CURATOR_CP, "CuratorIdle"]),
                "kazoo": shlex.join(["/usr/bin/python3",
                                     os.path.join(HERE, "participants", "kazoo", "kazoo_idle.py")]),
            }
            # srvr is asked of every server named in the connect string.
            ports = ",".join(h.rsplit(":", 1)[1] for h in connect.split("/")[0].split(","))
            cmd = ["/usr/bin/python3", os.path.join(HERE, "idle_cost.py"), "--connect", connect,
                   "--zk-ports", ports, "--json", os.path.join(raw, "idle.json"),
                   "--elections", "1,100" if a.quick else "1,100,1000",
                   "--window", "4" if a.quick else "8", "--session-timeout-ms", "10000"]
            if a.idle_100k:
                cmd += ["--more-elections", "libzkelect=%d" % SHARD_BIG]
            for name, hcmd in holders.items():
                cmd += ["--holder", "%s=%s" % (name, hcmd)]
            # libzkelect's waiting sessions too: an heir and a third in line
            # in each of the E elections (issue 50 finding 8).
            cmd += ["--follow-holder", "libzkelect=%s" % holders["libzkelect"]]
            rc = run_logged(cmd, runlog, 3600 if a.idle_100k else 1800)
            if rc != 0:
                meta["failures"].append("idle_cost exited %d" % rc)
        if "endpoint" in parts:
            # What zkelect run's GET /leader costs its metrics server under
            # a load balancer's probes (issue 55).
            rc = run_logged(["/usr/bin/python3", os.path.join(HERE, "leader_endpoint.py"),
                             "--build", a.build, "--connect", connect,
                             "--seconds", "5" if a.quick else "10",
                             "--json", os.path.join(raw, "endpoint.json")], runlog, 300)
            if rc != 0:
                meta["failures"].append("leader_endpoint exited %d" % rc)
        if "scale" in parts and "candidacies" in sets:
            n, s = (2000, 20) if a.quick else (a.scale_candidacies, a.scale_sessions)
            prog("scale", ["--candidacies", str(n), "--sessions", str(s),
                           "--failovers", "3" if a.quick else "10"] + nodes_bound_args(n, s), 1800)
            # The teardown docs/limits.md advises for many candidacies:
            # each session resigns all its own, then destroys them.
            prog("scale", ["--candidacies", str(n), "--sessions", str(s), "--failovers", "0",
                           "--teardown", "resign-first"] + nodes_bound_args(n, s), 1800,
                 out_name="scale_resign_first")
        if "scale" in parts and "handover" in sets:
            # Issue 35: a leader process and a standby process on the same
            # E elections; crash (SIGKILL) and graceful handover.
            if a.handover_es:
                es = tuple(int(x) for x in a.handover_es.split(","))
            else:
                es = HANDOVER_ES[:1] if a.quick else HANDOVER_ES + ((SHARD_BIG,) if a.shards_100k else ())
            reps = 1 if a.quick else a.handover_repeats
            modes = tuple(x.strip() for x in a.handover_modes.split(",")) if a.handover_modes else HANDOVER_MODES
            if [x for x in modes if x not in HANDOVER_MODES]:
                sys.exit("bench: --handover-modes takes %s" % ",".join(HANDOVER_MODES))
            for rep in range(reps):
                for e in es:
                    rc = run_logged([progs["zkbulk"], "--connect", connect, "--count", str(e),
                                     "--label", FLOOR_PLACEMENT], runlog, 900,
                                    stdout_path=os.path.join(raw, "bulk_handover_%d_%d.txt" % (e, rep)))
                    if rc != 0:
                        meta["failures"].append("zkbulk --count %d exited %d" % (e, rc))
                    if a.handover_sessions:
                        ss = tuple(int(x) for x in a.handover_sessions.split(","))
                    else:
                        ss = HANDOVER_SESSIONS if e != SHARD_BIG else HANDOVER_SESSIONS[:1]
                    for s in ss:
                        # At E = 100,000 on one session a crash ends the
                        # session in one closeSession transaction listing
                        # every ephemeral path (10.5 MB), which took the
                        # bench's ensemble down (docs/limits.md): only the
                        # graceful handover there, unless asked for.
                        for mode in modes if a.handover_modes or e != SHARD_BIG else ("graceful",):
                            r = handover_run(progs["handover"], connect, e, s, mode, rep, runlog)
                            with open(os.path.join(raw, "handover_%d_%d_%s_%d.json" % (e, s, mode, rep)), "w") as out:
                                json.dump(r, out, indent=1)
                            if not r.get("ok"):
                                meta["failures"].append("handover E=%d S=%d %s #%d: %s" % (
                                    e, s, mode, rep, r.get("failed", "?")))
        if "scale" in parts and "shards" in sets:
            # Issue 35: E elections, each alone on a path of its own, on ONE
            # session (per-shard leadership), torn down both ways; beside it
            # the floor, as many creates and deletes pipelined by the bare
            # C client on one session.
            shard_es = SHARD_ES[:1] if a.quick else SHARD_ES + ((SHARD_BIG,) if a.shards_100k else ())
            for e in shard_es:
                big = e == SHARD_BIG
                # shutdown: one zkelect_client_shutdown (issue 56).
                for td in ("resign-first", "shutdown") if big else ("destroy", "resign-first", "shutdown"):
                    prog("scale", ["--candidacies", str(e), "--sessions", "1", "--own-paths", "1",
                                   "--teardown", td] + (["--poll", "1", "--events-queue-max", "0", "--timeout-ms", "900000"]
                                                      if big else [])
                         + nodes_bound_args(e, 1),
                         1800, out_name="shards_%d_%s" % (e, td))
                rc = run_logged([progs["zkbulk"], "--connect", connect, "--count", str(e),
                                 "--label", FLOOR_PLACEMENT, "--paths", "1"], runlog, 900,
                                stdout_path=os.path.join(raw, "bulk_%d.txt" % e))
                if rc != 0:
                    meta["failures"].append("zkbulk --count %d exited %d" % (e, rc))
        if "scale" in parts and "peers" in sets:
            # The peers as far as they get within PEER_LIMIT_S a phase: the
            # idle bench's holders (E elections on one session each).
            classes = impl_env["curator"]["CURATOR_CLASSES"]
            peers = {
                "curator": ["java", "-XX:+UseSerialGC", "-Xmx1g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                            "-cp", classes + ":" + CURATOR_CP,
                            "CuratorIdle"],
                "kazoo": ["/usr/bin/python3", os.path.join(HERE, "participants", "kazoo", "kazoo_idle.py")],
            }
            got = []
            for name, cmd in peers.items():
                for e in SHARD_ES[:1] if a.quick else SHARD_ES:
                    r = hold_peer(name, cmd, connect, e, runlog)
                    got.append(r)
                    if not r.get("joined"):
                        break  # a larger E gets no further
            with open(os.path.join(raw, "shards_peers.json"), "w") as out:
                json.dump(got, out, indent=1)
        if ops:
            # Last: it starts an ensemble of its own per library (its
            # servers are restarted), which the shared one would slow.
            t_ops = time.monotonic()
            variants = [None] + ([UPGRADE_TO] if a.upgrade else [])
            for vi, upgrade_to in enumerate(variants):
                for impl in active[vi % len(active):] + active[:vi % len(active)]:
                    tag = "upgrade" if upgrade_to else "ops"
                    cmd = ["/usr/bin/python3", os.path.join(HERE, "rolling_restart.py"),
                           "--impl-cmd", impl_cmd[impl], "--name", impl,
                           "--json", os.path.join(raw, "%s-%s.json" % (impl, tag)), "--log-dir", logdir,
                           "--timeouts", ",".join(str(t) for t in OPS_TIMEOUTS_MS),
                           "--repeats", "1" if a.quick else str(OPS_REPEATS), "--down", str(OPS_DOWN_S)]
                    if upgrade_to:
                        cmd += ["--upgrade-to", upgrade_to]
                    rc = run_logged(cmd, runlog, 1800, env=impl_env.get(impl))
                    if rc != 0:
                        meta["failures"].append("%s %s: rolling_restart.py exited %d" % (impl, tag, rc))
            meta["operations_elapsed_s"] = time.monotonic() - t_ops

    finally:
        signal.signal(signal.SIGTERM, old)
        if ens is not None:
            log("stopping the bench ensemble")
            ens.stop()
        end_run(raw, tmp, meta, t_start)
    write_report(raw, a.out)


def run_fenced(progs, connect, raw, runlog, meta, quick):
    """bench/fenced.c and bench/zkset.c in turn, each size FENCED_ROUNDS
    times, both on the first server of connect: a follower forwards a write
    to the quorum's leader, a leader does not, and the two must pay alike."""
    hosts = connect.split("/")[0]
    one = hosts.split(",")[0] + connect[len(hosts):]
    meta["fenced_server"] = one
    try:
        from bed.zkbed import four_quiet
        mode = [x[6:].strip() for x in four_quiet(int(one.split("/")[0].rsplit(":", 1)[1]), "srvr").splitlines()
                if x.startswith("Mode: ")]
        meta["fenced_server_mode"] = mode[0] if mode else None
    except (ImportError, OSError, ValueError):
        meta["fenced_server_mode"] = None
    count, warmup = (FENCED_COUNT // 2, 20) if quick else (FENCED_COUNT, 50)
    # Round -1 warms the servers' request paths up (the JIT: the first
    # program of a run otherwise paid 3 x), its figures thrown away; the
    # rounds after it take turns at which program goes first.
    for r in range(-1, 2 if quick else FENCED_ROUNDS):
        for size in FENCED_BYTES:
            for name in ("fenced", "zkset") if r % 2 == 0 else ("zkset", "fenced"):
                out = os.path.join(raw, "fenced_%s_%d_%d.json" % (name, size, r)) if r >= 0 else os.devnull
                rc = run_logged([progs[name], "--connect", one, "--bytes", str(size),
                                 "--count", str(count if r >= 0 else warmup), "--warmup", str(warmup)],
                                runlog, 600, stdout_path=out)
                if rc != 0:
                    meta["failures"].append("%s --bytes %d (round %d) exited %d" % (name, size, r, rc))


def run_balance(build, connect, raw, runlog, meta, quick):
    """bench/balance.py on the bench's ensemble: its JSON in raw/balance.json."""
    env = dict(os.environ, ZKELECT_BUILD_DIR=build)
    guard = os.path.join(build, "guard", "zkelect-guard")
    if "ZKELECT_GUARD" not in env and os.access(guard, os.X_OK):
        env["ZKELECT_GUARD"] = guard
    meta["balance_e"] = BALANCE_E_QUICK if quick else BALANCE_E
    rc = run_logged(["/usr/bin/python3", os.path.join(HERE, "balance.py"), "--connect", connect,
                     "--count", str(meta["balance_e"]), "--session-ms", str(BALANCE_T_MS),
                     "--json", os.path.join(raw, "balance.json")], runlog, 1800, env=env)
    if rc != 0:
        meta["failures"].append("balance.py exited %d" % rc)


def end_run(raw, tmp, meta, t_start):
    """What every run ends with, also on failure: meta.json, tmp removed."""
    meta["elapsed_s"] = time.monotonic() - t_start
    meta["load_end"] = os.getloadavg()
    with open(os.path.join(raw, "meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)


def git_describe():
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "cxx", "capi", "tools"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + (" (engine sources modified)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# --------------------------------------------------------------------------
# report

def pct(xs, q):
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)] if s else None


def load_raw(raw):
    res = {i: {} for i in IMPLS + list(CRASH_VARIANTS)}
    for p in sorted(glob.glob(os.path.join(raw, "*.json"))):
        try:
            d = json.load(open(p))
        except ValueError:
            continue  # a program that died before writing its JSON (see run.log)
        if "impl" in d and d["impl"] in res:
            r = res[d["impl"]]
            for k, v in d["results"].items():
                if k == "herd":
                    r.setdefault("herd", {})[v["n"]] = v
                elif isinstance(v, list):
                    r.setdefault(k, []).extend(v)
                else:
                    r[k] = v
    other = {}
    for name in ("isleader", "memcand", "scale", "scale_resign_first", "pausecheck", "idle", "endpoint",
                 "meta"):
        p = os.path.join(raw, name + ".json")
        if os.path.exists(p):
            try:
                other[name] = json.load(open(p))
            except ValueError:
                other[name] = None  # the program died before its JSON was complete
    floor = parse_floor(os.path.join(raw, "floor.txt"))
    floor.update(parse_floor(os.path.join(raw, "floor_idle.txt")))
    for n in JOIN_FLOOR_NS:
        for placement, rows in parse_floor(os.path.join(raw, "floor_join%d.txt" % n)).items():
            floor.setdefault(placement, {}).update(rows)
    return res, other, floor


def parse_floor(path):
    """{placement: {key: (median_ms, p90_ms)}} of the C client rows."""
    out, cur = {}, None
    if not os.path.exists(path):
        return out
    keys = {"read": "read", "write": "write", "delete RTT": "delete", "watch fired": "watch",
            "getChildren": "getchildren"}
    keys.update(("join N=%d " % n, "join%d" % n) for n in JOIN_FLOOR_NS)
    for line in open(path):
        if line.startswith("## "):
            cur = line[3:].strip()
            cur = None if cur.endswith("[Java client]") else cur
            if cur:
                out[cur] = {}
            continue
        m = re.match(r"FLOOR (.*?)\s+n=\d+ min=([\d.]+) median=([\d.]+) p90=([\d.]+)", line)
        if m and cur:
            k = next((v for k, v in keys.items() if k in m.group(1)), None)
            if k:
                out[cur][k] = (float(m.group(3)) / 1e3, float(m.group(4)) / 1e3)
    return out


def f(x, nd=1):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return ("%." + str(nd) + "f") % x


def ratio(a, b, nd=2):
    if a is None or b is None or b == 0:
        return "-"
    return ("%." + str(nd) + "f") % (a / b)


class Report:
    def __init__(self):
        self.lines = []
        self.targets = []

    def p(self, s=""):
        self.lines.append(s)

    def table(self, head, rows):
        self.p("| " + " | ".join(head) + " |")
        self.p("|" + "---|" * len(head))
        for r in rows:
            self.p("| " + " | ".join(r) + " |")
        self.p()

    def target(self, ok, text):
        self.targets.append("- **%s**: %s" % ("MET" if ok else ("NOT MET" if ok is False else "NOT MEASURED"),
                                              text))


# Each section of the report is measured first (its rows, and its target,
# since the targets lead the document) and written later, in document order.

def convergence_rows(R, res, floor):
    """The convergence table's rows; adds the N=50 target."""
    L, C, K = res["libzkelect"], res["curator"], res["kazoo"]
    fl = floor.get(FLOOR_PLACEMENT, {})
    fl_conv = (fl["write"][0] + fl["read"][0]) if "write" in fl and "read" in fl else None

    def conv(r, n):
        for c in r.get("convergence", []):
            if c["n"] == n:
                return c["converge_ms"].get("median")
        return None

    rows = []
    for n in (2, 10, 50, 100):
        l, c, k = conv(L, n), conv(C, n), conv(K, n)
        burst = fl.get("join%d" % n, (None, None))[0]
        rows.append([str(n), f(l), f(c), f(k), f(fl_conv, 2), f(burst, 1), ratio(l, fl_conv, 1),
                     ratio(l, burst), ratio(burst, k), ratio(l, c), ratio(l, k)])
    l50, k50 = conv(L, 50), conv(K, 50)
    b50 = fl.get("join50", (None, None))[0]
    R.target(None if l50 is None or k50 is None else l50 <= k50 / 2,
             "convergence at N=50 <= 1/2 of kazoo's: libzkelect %s ms, kazoo %s ms (ratio %s); "
             "the bare C client's burst floor %s ms (%s x kazoo's)"
             % (f(l50), f(k50), ratio(l50, k50), f(b50), ratio(b50, k50)))
    return rows


def graceful_rows(R, res, floor):
    """The graceful failover table's rows; adds the median and p90 targets."""
    L, C, K = res["libzkelect"], res["curator"], res["kazoo"]
    fl = floor.get(FLOOR_PLACEMENT, {})
    fl_watch = fl.get("watch", (None, None))
    fl_idle = floor.get(IDLE_FLOOR_PLACEMENT, {}).get("watch", (None, None))
    fl_gc = fl.get("getchildren", (None, None))

    def grace(r, n):
        for g in r.get("graceful", []):
            if g["n"] == n:
                return g
        return None

    grows, gmet, p90met, gtxt, p90txt = [], True, True, [], []
    for n in (10, 50):
        gl, gc, gk = grace(L, n), grace(C, n), grace(K, n)
        for stat, flv in (("median", fl_watch[0]), ("p90", fl_watch[1])):
            v = lambda g: g["failover_ms"].get(stat) if g else None
            fli = fl_idle[0] if stat == "median" else fl_idle[1]
            grows.append(["%d" % n, stat, f(v(gl), 2), f(v(gc), 2), f(v(gk), 2), f(flv, 2),
                          f(fl_gc[0] if stat == "median" else fl_gc[1], 2), f(fli, 2),
                          ratio(v(gl), flv), ratio(v(gl), fli), ratio(v(gl), v(gc)), ratio(v(gl), v(gk))])
        ml = gl["failover_ms"].get("median") if gl else None
        mc = gc["failover_ms"].get("median") if gc else None
        mk = gk["failover_ms"].get("median") if gk else None
        if None in (ml, mc, mk):
            gmet = None if gmet is not False else False
        else:
            gmet = gmet and ml <= mk / 2
        gtxt.append("N=%d: %s ms vs kazoo %s (x%s), Curator %s (x%s)"
                    % (n, f(ml, 2), f(mk, 2), ratio(ml, mk), f(mc, 2), ratio(ml, mc)))
        pl = gl["failover_ms"].get("p90") if gl else None
        if pl is None or fl_watch[0] is None:
            p90met = None if p90met is not False else False
        else:
            p90met = p90met and pl <= 2 * fl_watch[0]
        p90txt.append("N=%d: p90 %s ms vs 2 x %s = %s ms (the floor after %d ms idle: p90 %s ms)"
                      % (n, f(pl, 2), f(fl_watch[0], 2), f(2 * fl_watch[0] if fl_watch[0] else None, 2),
                         IDLE_FLOOR_MS, f(fl_idle[1], 2)))
    R.target(gmet, "graceful failover median <= 1/2 kazoo's (every failover of a rotation): "
             + "; ".join(gtxt))
    R.target(p90met, "graceful failover p90 <= 2 x the delete -> watch fired floor: " + "; ".join(p90txt))
    return grows


def guard_delay_ms():
    """crash.guard.delay.ms's default, from the vocabulary (its one source)."""
    import tomllib
    with open(os.path.join(REPO, "gen", "vocabulary.toml"), "rb") as fh:
        keys = tomllib.load(fh)["key"]
    return int(next(k["default"] for k in keys if k["name"] == "crash.guard.delay.ms"))


def crash_rows(R, res):
    """The crash failover tables' rows (the peers beside libzkelect with and
    without the crash guard; libzkelect per signal); adds the session
    timeout target and the crash guard's (issue 37)."""
    def crash(r):
        c = r.get("crash")
        if not c or not c.get("samples_ms"):
            return None, None, None, None
        t = c["negotiated_session_timeout_ms"]
        return c["failover_ms"]["median"], c["failover_ms"]["p90"], t, c["failover_ms"]["median"] / t

    cl_, co_, cc_, ck_ = (crash(res[i]) for i in ("libzkelect", "libzkelect-guard-off", "curator", "kazoo"))
    t = cl_[2] or co_[2]
    crows = [["median (ms)"] + [f(x[0], 0) for x in (cl_, co_, cc_, ck_)] + [f(t, 0) if t else "-",
                                                                            ratio(cl_[0], t), ratio(co_[0], t),
                                                                            ratio(cl_[0], cc_[0]),
                                                                            ratio(cl_[0], ck_[0])],
             ["p90 (ms)"] + [f(x[1], 0) for x in (cl_, co_, cc_, ck_)] + ["-", ratio(cl_[1], t), ratio(co_[1], t),
                                                                          ratio(cl_[1], cc_[1]), ratio(cl_[1], ck_[1])],
             ["median / negotiated session timeout"] + [f(x[3], 2) for x in (cl_, co_, cc_, ck_)]
             + ["1.00", "-", "-", "-", "-"]]
    R.target(None if co_[0] is None else co_[0] <= co_[2] + TICK_MS,
             "crash failover without the crash guard (crash.guard=off) <= session timeout + one tick (%d ms): "
             "median %s ms, T = %s ms, ratio %s" % (TICK_MS, f(co_[0], 0), f(co_[2], 0), f(co_[3], 2)))
    delay = guard_delay_ms()
    srows, met, txt = [], True, []
    for name, sig in (("libzkelect", "SIGKILL"), ("libzkelect-sigsegv", "SIGSEGV"),
                      ("libzkelect-sigabrt", "SIGABRT"), ("libzkelect-guard-off", "SIGKILL, crash.guard=off")):
        c = res[name].get("crash")
        if not c or not c.get("samples_ms"):
            srows.append([sig, "0", "-", "-", "-", "-", "-"])
            if name != "libzkelect-guard-off" and met is not False:
                met = None  # not measured, unless another signal already missed it
            continue
        fo, neg = c["failover_ms"], c["negotiated_session_timeout_ms"]
        srows.append([sig, str(fo["n"]), f(fo["min"], 0), f(fo["median"], 0), f(fo["p90"], 0), f(fo["max"], 0),
                      ratio(fo["median"], neg, 3)])
        if name != "libzkelect-guard-off":
            ok = fo["median"] <= delay + 20 and fo["max"] <= 200
            met = False if not ok else met
            txt.append("%s median %s ms, max %s ms" % (sig, f(fo["median"], 0), f(fo["max"], 0)))
    R.target(met, "crash failover with the crash guard (the default) <= crash.guard.delay.ms (%d ms) + 20 ms "
                  "(median) and <= 200 ms (max), T = %s ms: %s" % (delay, f(t, 0), "; ".join(txt) or "not run"))
    return crows, srows


def pause_rows(R, res, pc):
    """The paused leader table's rows; adds the zombie window target
    (with the in-process check, pausecheck.json's pc)."""
    def pause(r):
        q = r.get("pause")
        if not q or not q["samples"]["zombie_ms"]:
            return None
        z = q["samples"]["zombie_ms"]
        return {"zmed": statistics.median(z), "zmax": max(z), "n": len(z),
                "elect": statistics.median(q["samples"]["stop_to_new_leader_ms"]),
                "rejoined": "%d/%d" % (q["rejoined_by_itself"], len(z))}

    pl_, pc_, pk_ = pause(res["libzkelect"]), pause(res["curator"]), pause(res["kazoo"])
    g = lambda d, k, nd=2: f(d[k], nd) if d else "-"
    prow = [["zombie window SIGCONT -> LOST, median (ms)", g(pl_, "zmed", 3), g(pc_, "zmed"), g(pk_, "zmed"), "0",
             "-", ratio(pl_ and pl_["zmed"], pc_ and pc_["zmed"], 4), ratio(pl_ and pl_["zmed"], pk_ and pk_["zmed"], 3)],
            ["zombie window, max (ms)", g(pl_, "zmax", 3), g(pc_, "zmax"), g(pk_, "zmax"), "0", "-", "-", "-"],
            ["SIGSTOP -> new LEADER, median (ms)", g(pl_, "elect", 0), g(pc_, "elect", 0), g(pk_, "elect", 0),
             "-", "-", "-", "-"],
            ["old leader re-joined by itself", g(pl_, "rejoined"), g(pc_, "rejoined"), g(pk_, "rejoined"),
             "-", "-", "-", "-"]]
    first0 = None
    if pc and pc.get("trials"):
        first0 = pc["first_answer_zero"] == len(pc["trials"])
    R.target(None if pl_ is None else (pl_["zmed"] <= 0.2 and first0 is True),
             "zombie window <= 0.2 ms and the resumed leader's first is_leader answers 0: driver median %s ms "
             "(max %s ms, %s trials); first is_leader after resume = 0 in %s"
             % (g(pl_, "zmed", 3), g(pl_, "zmax", 3), pl_["n"] if pl_ else 0,
                "%d/%d pausecheck trials" % (pc["first_answer_zero"], len(pc["trials"])) if pc else "- (not run)"))
    return prow


def herd_rows(R, res):
    """{N: rows} of the ZooKeeper cost tables; adds the per-failover cost target."""
    L, C, K = res["libzkelect"], res["curator"], res["kazoo"]
    tables, hmet, htxt = {}, True, []
    hkeys = [("reads_net", "reads"), ("writes_net", "writes"), ("requests_per_failover", "requests"),
             ("watch_notifications_net", "watch notifications"), ("packets_received_net", "packets received (net)"),
             ("packets_sent_net", "packets sent (net)"), ("watches", "watches held"),
             ("max_watchers_per_znode", "max watchers on one znode")]
    floor_ref = {"requests_per_failover": 5, "watch_notifications_net": 1, "max_watchers_per_znode": 1}
    for n in (50, 100):
        hl, hc, hk = (r.get("herd", {}).get(n) for r in (L, C, K))
        rows = []
        for key, label in hkeys:
            v = lambda h: h.get(key) if h else None
            fr = floor_ref.get(key)
            rows.append([label, f(v(hl), 0), f(v(hc), 0), f(v(hk), 0), f(fr, 0) if fr else "-",
                         ratio(v(hl), fr), ratio(v(hl), v(hc)), ratio(v(hl), v(hk))])
        tables[n] = rows
        if hl is None or hc is None:
            hmet = None if hmet is not False else False
            htxt.append("N=%d: not measured" % n)
            continue
        ok = (hl["watch_notifications_net"] <= 3 and hl["requests_per_failover"] <= 2 * hc["requests_per_failover"]
              and hl["max_watchers_per_znode"] <= 3)
        hmet = hmet and ok
        htxt.append("N=%d: %s notification(s), %s requests (Curator %s), max %s watcher(s) on a znode"
                    % (n, f(hl["watch_notifications_net"], 0), f(hl["requests_per_failover"], 0),
                       f(hc["requests_per_failover"], 0), f(hl["max_watchers_per_znode"], 0)))
    R.target(hmet, "per failover: <= 3 notifications, requests <= 2 x Curator's, <= 3 watchers on any node: "
             + "; ".join(htxt))
    return tables


def isleader_targets(R, il):
    """The is_leader cost target, and the stats snapshot's when measured."""
    if il:
        il1 = next((r for r in il["runs"] if r["role"] == "leader" and r["threads"] == 1), None)
        nolock = all(r["lock_calls"] == 0 for r in il["runs"]) and il["lock_control_next_event_100_calls"] > 0
        R.target(il1 is not None and il1["ns_per_call_median"] <= 50 and nolock,
                 "zkelect_is_leader <= 50 ns with no lock: %s ns on a leader (1 thread, CPU time; "
                 "the CLOCK_BOOTTIME read alone costs %s ns); pthread lock calls during the loops: %d "
                 "(interposition check: next_event took %d)"
                 % (f(il1["ns_per_call_median"], 1) if il1 else "-", f(il["clock_boottime_ns_per_call"], 1),
                    sum(r["lock_calls"] for r in il["runs"]), il["lock_control_next_event_100_calls"]))
    else:
        R.target(None, "zkelect_is_leader <= 50 ns with no lock: not run")
    st = (il or {}).get("stats")
    if st:
        # The snapshot is meant to be taken every second or so; 100 us would
        # still be 0.01% of one core at that rate.
        R.target(st["election_stats_leader_ns"] <= 100000
                 and st["is_leader_during_snapshots_lock_calls"] == 0,
                 "zkelect_election_stats (+ json + destroy) <= 100 us: %s ns on a leader, %s ns "
                 "on a follower (%d bytes of JSON); zkelect_client_stats with 2 elections %s ns; "
                 "is_leader while another thread snapshots the same candidacy: %s ns, %d lock calls"
                 % (f(st["election_stats_leader_ns"], 0), f(st["election_stats_follower_ns"], 0),
                    st["election_json_bytes"], f(st["client_stats_2_elections_ns"], 0),
                    f(st["is_leader_during_snapshots_ns"], 1),
                    st["is_leader_during_snapshots_lock_calls"]))


def memory_target(R, mc):
    if mc and mc.get("rounds"):
        later = mc["rounds"][1:] or mc["rounds"]
        per_cand = statistics.median(r["heap_growth_kib"] for r in later) * 1024 / mc["per_round"]
        rss_slope = ((mc["rounds"][-1]["rss_kib"] - mc["rounds"][0]["rss_kib"]) * 1024
                     / (mc["per_round"] * max(1, len(mc["rounds"]) - 1)))
        R.target(per_cand <= 4096, "memory per candidacy <= 4 KiB beyond its session: %.0f bytes of heap per "
                 "enrolled candidacy (median of rounds 2..%d of %d); RSS slope %.0f bytes"
                 % (per_cand, len(mc["rounds"]), mc["per_round"], rss_slope))
    else:
        R.target(None, "memory per candidacy <= 4 KiB: not run")


def scale_target(R, sc):
    """Adds the scale target; returns sc, or None when the run did not
    converge (then its table is left out)."""
    if sc and sc.get("converged") is False:
        R.target(False, "%d candidacies over %d sessions did not converge within %d ms: %d ELECTED, "
                 "%d FOLLOWING, %d ERROR events" % (sc["candidacies"], sc["sessions"], sc["timeout_ms"],
                                                   sc["elected"], sc["following"], sc["errors"]))
        sc = None
    elif sc:
        R.target(sc.get("correct") is True and sc["candidacies"] >= 10000,
                 ("" if sc["candidacies"] >= 10000 else "(smaller than the target's 10,000 in this run) ") +
                 "%d candidacies over %d sessions converge and fail over correctly: converged in %s ms, "
                 "failover median %s ms over %d, exactly one is_leader at the end: %s"
                 % (sc["candidacies"], sc["sessions"], f(sc["converge_ms"], 0),
                    f(statistics.median(sc["failover_ms"]), 2) if sc["failover_ms"] else "-",
                    len(sc["failover_ms"]), sc.get("is_leader_count_at_end") == 1))
    else:
        R.target(None, "10,000 candidacies converge and fail over correctly: not run (or failed)")
    return sc


def run_rows(meta):
    """The first rows of a report's table: which commit, when, how loaded."""
    return [
        ["commit", "`%s`" % meta.get("commit", "?")],
        ["started (UTC)", meta.get("started", "?")],
        ["elapsed", "%.0f s" % meta.get("elapsed_s", 0)],
        ["CPUs / load average at start, end", "%s / %s, %s" % (
            meta.get("cpus"), " ".join("%.1f" % x for x in meta.get("load_start", [])),
            " ".join("%.1f" % x for x in meta.get("load_end", [])))],
    ]


def raw_ref(stamp):
    """Where a report says its raw results are: beside it where the run was
    made (OUT/raw/STAMP), which git ignores: the report and LATEST.md copy
    every table, so the raw files stay on the machine that ran it."""
    return "`raw/%s/` (beside this file where the run was made; raw results are not kept in the repository)" % stamp


def write_heading(R, stamp, meta):
    """Title, what was run where, notes and failures."""
    R.p("# libzkelect benchmark: %s%s" % (stamp, " (quick smoke run: fewer trials)" if meta.get("quick") else ""))
    R.p()
    R.p("Generated by `./dev bench` (bench/run.py) from the raw results in %s. Same machine, same "
        "3-server ZooKeeper 3.8 ensemble on loopback (tickTime %d ms), same driver options for every "
        "library, in one run; only ratios inside this run are meaningful (shared 2-core machine)." % (raw_ref(stamp), TICK_MS))
    R.p()
    R.table(["item", "value"], run_rows(meta) + [
        ["session timeout", "2000 ms requested (20000 ms in the herd test)"],
        ["servers' Java heap", meta.get("zk_heap", "256m")],
        ["participants", "libzkelect: `zkelect candidate` (release build); Curator 5.4 LeaderLatch; kazoo 2.8 Election; "
                         "1 per process for N <= 10, else N/5 per process"],
        ["floor", "ZooKeeper C client, both sessions on the full connect string (`%s`)" % FLOOR_PLACEMENT],
    ])
    for n in meta.get("notes", []):
        R.p("**Note:** " + n)
        R.p()
    if meta.get("failures"):
        R.p("**Failures in this run:** " + "; ".join(meta["failures"]) + " (see `raw/%s/run.log`)." % stamp)
        R.p()


def write_targets(R):
    """The targets added so far; one added later (idle cost) reaches only
    the summary printed at the end."""
    R.p("## Targets (issue 15; the others as issue 5 set them)")
    R.p()
    R.lines += R.targets
    R.p()


def write_convergence(R, conv_rows):
    R.p("## Convergence: `join` -> exactly 1 LEADER + N-1 FOLLOWER (ms, median of repeats)")
    R.p()
    R.p("Floors: one contender's create + getChildren (write RTT + read RTT), which does not depend on N; "
        "and the burst: N sessions of the bare C client in one process, each sending create + getChildren "
        "at once, then exists() with a watch on its predecessor, until the last knows its role "
        "(`bench/zkjoin`, median of as many repeats). The burst is what any client of the recipe pays here "
        "at the very least; burst/kazoo is the lowest ratio to kazoo that one could reach.")
    R.p()
    R.table(["N", "libzkelect", "Curator", "kazoo", "floor", "burst floor", "libzkelect/floor",
             "libzkelect/burst", "burst/kazoo", "libzkelect/Curator", "libzkelect/kazoo"], conv_rows)


def write_graceful(R, grows):
    R.p("## Graceful failover: old leader's RESIGNED -> new leader's LEADER (ms)")
    R.p()
    R.p("Floor: delete -> watch fired (and -> getChildren) in another session, deletes back to back; ratios "
        "use the watch-fired floor (median for the median row, p90 for the p90 row). The idle floor is the "
        "same delete after the ensemble sat idle %d ms (`zkfloor --idle-ms`), as it does before each graceful "
        "failover of the driver." % IDLE_FLOOR_MS)
    R.p()
    R.table(["N", "stat", "libzkelect", "Curator", "kazoo", "floor: watch fired", "floor: + getChildren",
             "floor: watch fired after idle", "libzkelect/floor", "libzkelect/idle floor", "libzkelect/Curator",
             "libzkelect/kazoo"], grows)


def write_crash(R, crows):
    crows, srows = crows
    R.p("## Crash failover: SIGKILL of the leader's process -> LEADER elsewhere")
    R.p()
    R.p("Floor: the negotiated session timeout T (ZooKeeper must expire the session first; it checks on a %d ms "
        "tick grid). libzkelect runs with its crash guard (crash.guard=auto, the default: a helper process "
        "closes a dead process's session once what that process sent over TCP is acknowledged, waiting at "
        "most crash.guard.delay.ms, %d ms), and again with crash.guard=off, "
        "which waits for T as Curator and kazoo do. libzkelect/floor and guard off/floor are ratios to T."
        % (TICK_MS, guard_delay_ms()))
    R.p()
    R.table(["measure", "libzkelect", "libzkelect, guard off", "Curator", "kazoo", "floor (T)", "libzkelect/floor",
             "guard off/floor", "libzkelect/Curator", "libzkelect/kazoo"], crows)
    R.p("libzkelect alone, one driver run per signal, as many trials as above (the guard's drain, at most "
        "the delay, is part of every figure with the guard):")
    R.p()
    R.table(["signal to the leader's process", "n", "min (ms)", "median (ms)", "p90 (ms)", "max (ms)",
             "median / T"], srows)


def write_transfer(R, res):
    t = res["libzkelect"].get("transfer")
    if not t:
        return
    R.p("## Leadership transfer (libzkelect only), N = %d, each candidate in its own process" % t["n"])
    R.p()
    R.p("`transfer <leader> <target>` (zkelect_transfer) to the candidate 2nd, 5th and last in line, "
        "and `zkelect transfer --to` (zkelect_client_transfer, a process that is not a candidate) to "
        "the 5th, interleaved with a `resign` of the same election. Command -> the target's LEADER, and the "
        "old leader's RESIGNED (its term's end) -> the target's LEADER. Curator and kazoo have no "
        "transfer; their way to move leadership is a resign, whose figures are the graceful table's. "
        "%d trials after %d warm-up; failed transfers: %d; safety violations: %d."
        % (t["trials"], t["warmup"], len(t.get("failed", [])), t.get("safety_violations", 0)))
    R.p()
    rows = []
    for k, v in t["cmd_to_leader_ms"].items():
        g = t["resigned_to_leader_ms"][k]
        nth = k.rsplit("_", 1)[-1]
        nth += {"2": "nd", "3": "rd"}.get(nth, "th")
        what = ("resign -> next in line" if k == "resign" else
                "`zkelect transfer` from outside to the %s (its start and connect included)" % nth
                if k.startswith("outside") else "transfer to the %s" % nth)
        rows.append([what, f(v.get("median"), 1), f(v.get("p90"), 1), f(g.get("median"), 1),
                     f(g.get("p90"), 1)])
    R.table(["what", "command -> LEADER median (ms)", "p90", "RESIGNED -> LEADER median (ms)", "p90"],
            rows)


def write_pause(R, prow, pc):
    R.p("## Paused leader: SIGSTOP until another leads, then SIGCONT")
    R.p()
    R.p("The zombie window is how long the resumed old leader keeps claiming leadership after SIGCONT "
        "(until it prints LOST). Ideal: 0.")
    R.p()
    R.table(["measure", "libzkelect", "Curator", "kazoo", "floor", "libzkelect/floor", "libzkelect/Curator",
             "libzkelect/kazoo"], prow)
    if pc and pc.get("trials"):
        R.p("In-process check (`bench/pausecheck.c`): the leader's process spins on `zkelect_is_leader()`; "
            "it is SIGSTOPped until a candidacy in another process is ELECTED, then SIGCONTed.")
        R.p()
        R.table(["trial", "stopped (ms)", "first is_leader after resume", "kept answering 1 for (ms)"],
                [[str(i + 1), f(t["stop_to_other_elected_ms"], 0), str(t["first_is_leader_after_resume"]),
                  f(t["claimed_after_resume_ms"], 3)] for i, t in enumerate(pc["trials"])])


def write_herd(R, herd_rows):
    for n in (50, 100):
        R.p("## ZooKeeper cost of one graceful failover (resign + re-join), N = %d (median over trials)" % n)
        R.p()
        R.p("Floor: the recipe's minimum (delete, the successor's getChildren, the re-join's create + "
            "getChildren + watch on the predecessor = 5 requests), 1 notification, 1 watcher per znode.")
        R.p()
        R.table(["measure", "libzkelect", "Curator", "kazoo", "floor", "libzkelect/floor",
                 "libzkelect/Curator", "libzkelect/kazoo"], herd_rows[n])


def write_safety(R, res):
    R.p("## Safety: overlapping LEADER claims (pause test excluded: it overlaps by construction)")
    R.p()
    srows = []
    for name, r in (("libzkelect", res["libzkelect"]), ("curator", res["curator"]), ("kazoo", res["kazoo"])):
        items = r.get("convergence", []) + r.get("graceful", []) + ([r["crash"]] if "crash" in r else []) + \
            list(r.get("herd", {}).values())
        if name == "libzkelect":
            items += [res[v]["crash"] for v in CRASH_VARIANTS if "crash" in res[v]]
        srows.append([name, str(sum(x.get("leader_intervals", 0) for x in items)),
                      str(sum(x.get("safety_violations", 0) for x in items))])
    R.table(["impl", "leadership terms", "violations"], srows)


def write_in_process(R, il, mc, sc, srf=None):
    """The C programs of this folder: is_leader's cost, memory, scale."""
    R.p("## libzkelect in one process (bench/*.c, public header only)")
    R.p()
    if il:
        R.p("`zkelect_is_leader()`: thread CPU time per call, median of %d repeats of %d calls per thread "
            "(`bench/isleader.c`). Lock check: pthread mutex/rwlock/spin entry points interposed, calls counted "
            "inside the loops (positive control: 100 `zkelect_next_event()` calls took %d)."
            % (il["repeats"], il["calls_per_thread"], il["lock_control_next_event_100_calls"]))
        R.p()
        R.table(["role", "threads", "ns per call", "lock calls", "answers correct"],
                [[r["role"], str(r["threads"]), f(r["ns_per_call_median"], 1), str(r["lock_calls"]),
                  "yes" if r["answers_correct"] else "NO"] for r in il["runs"]]
                + [["(clock_gettime(CLOCK_BOOTTIME) alone)", "1", f(il["clock_boottime_ns_per_call"], 1), "-", "-"]])
    if mc and mc.get("rounds"):
        R.p("Memory (`bench/memcand.c`): %d sessions opened first (RSS %d KiB, heap %d KiB), then rounds of %d "
            "candidacies on one path, each round enrolled before measuring." % (
                mc["sessions"], mc["rss_kib_sessions_only"], mc["heap_kib_sessions_only"], mc["per_round"]))
        R.p()
        R.table(["candidacies", "RSS KiB", "RSS growth KiB", "heap growth KiB", "of which handles only (heap KiB)",
                 "enrol time (ms)"],
                [[str(r["total"]), str(r["rss_kib"]), str(r["rss_growth_kib"]), str(r["heap_growth_kib"]),
                  str(r["heap_growth_handles_only_kib"]), f(r["enroll_ms"], 0)] for r in mc["rounds"]])
    if sc:
        fo = sc["failover_ms"]
        R.p("Scale (`bench/scale.c`): %d candidacies over %d sessions, one path, one process." % (
            sc["candidacies"], sc["sessions"]))
        R.p()
        R.table(["measure", "value"], [
            ["sessions connected", "%s ms" % f(sc["connect_ms"], 0)],
            ["handles created", "%s ms" % f(sc["create_handles_ms"], 0)],
            ["volunteer -> first ELECTED", "%s ms" % f(sc["first_elected_ms"], 0)],
            ["volunteer -> 1 ELECTED + %d FOLLOWING" % (sc["candidacies"] - 1), "%s ms" % f(sc["converge_ms"], 0)],
            ["ZooKeeper requests to converge", "%d (%.1f per candidacy)" % (
                sc["converge_requests"], sc["converge_requests"] / sc["candidacies"])],
            ["failover under load (resign -> next ELECTED), median / max",
             "%s / %s ms over %d" % (f(statistics.median(fo), 2) if fo else "-", f(max(fo), 2) if fo else "-", len(fo))],
            ["resigned leader re-enrolled (resign -> FOLLOWING), median",
             "%s ms" % (f(statistics.median(sc["rejoin_ms"]), 1) if sc["rejoin_ms"] else "-")],
            ["ZooKeeper requests per failover (incl. re-join)", ", ".join(str(x) for x in sc["failover_requests"])],
            ["exactly one leader (events and is_leader) throughout", "yes" if sc.get("correct") else "NO"],
            ["RSS before volunteering / at the end", "%d / %d KiB" % (sc["rss_kib_before_volunteer"], sc["rss_kib_end"])],
            ["teardown (destroy all, one thread per session)", "%s ms" % f(sc.get("teardown_ms"), 0)],
            ["teardown (resign all, then destroy all, one thread per session; a second run)",
             "%s ms" % f((srf or {}).get("teardown_ms"), 0)],
        ])


def hold_peer(name, cmd, connect, e, runlog):
    """One peer holder leading e elections on one session, each on a path
    of its own: its join, teardown and resident set, or how far it got
    within PEER_LIMIT_S a phase."""
    argv = cmd + ["--connect", connect, "--path", "/bench_shards_%s_%d_%d" % (name, os.getpid(), e),
                  "--elections", str(e), "--session-timeout-ms", "10000"]
    log("$ %s" % shlex.join(argv))
    res = {"impl": name, "elections": e, "limit_s": PEER_LIMIT_S, "joined": False}
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)

    def line_within(timeout):
        got = []
        t = threading.Thread(target=lambda: got.append(p.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        return got[0].strip() if got else None
    try:
        line = line_within(PEER_LIMIT_S)
        if not line or not line.startswith("READY"):
            res["said"] = line
            return res
        kv = dict(x.split("=", 1) for x in line.split()[2:])
        res.update(joined=True, join_ms=float(kv["join_ms"]),
                   rss_bytes_per_election=(int(kv["rss_kib"]) - int(kv["rss0_kib"])) * 1024.0 / e)
        p.stdin.close()
        for _ in range(e + 2):     # LOST lines, then TEARDOWN
            line = line_within(PEER_LIMIT_S)
            if not line:
                break
            if line.startswith("LOST"):
                res["lost"] = res.get("lost", 0) + 1
            if line.startswith("TEARDOWN"):
                res["teardown_ms"] = float(line.split("=", 1)[1])
                break
        return res
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(30)
        with open(runlog, "a") as f:
            f.write("    %s E=%d: %s\n" % (name, e, json.dumps(res)))


def proc_status(pid):
    """(VmRSS KiB, Threads) of a live process, else (None, None)."""
    rss = thr = None
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                thr = int(line.split()[1])
    except OSError:
        pass
    return rss, thr


def handover_run(prog, connect, e, s, mode, rep, runlog):
    """One handover of e elections over s sessions (bench/handover.c): the
    leader process joins alone, the standby process joins behind it, then
    the leader is SIGKILLed (mode crash: the crash guard on, as by default;
    crash-guard-off: the session timeout) or leaves gracefully (resigns all,
    destroys them and its clients); the standby says when it leads all e,
    then tears down. Returns what each process said, with both processes'
    resident set and threads (from /proc) after each step."""
    prefix = "/bench_handover_%d_%d_%d_%s_%d" % (os.getpid(), e, s, mode, rep)
    base = [prog, "--connect", connect, "--prefix", prefix, "--elections", str(e), "--sessions", str(s),
            "--session-timeout-ms", str(HANDOVER_T_MS), "--guard", "off" if mode == "crash-guard-off" else "auto"
            ] + nodes_bound_args(e, s)
    res = {"elections": e, "sessions": s, "mode": mode, "repeat": rep, "session_timeout_ms": HANDOVER_T_MS,
           "ok": False, "steps": {}}
    limit = 300 if e < SHARD_BIG else 900
    procs = {}
    lf = open(runlog, "a")

    def start(role):
        argv = base + ["--role", role]
        log("$ %s" % shlex.join(argv))
        procs[role] = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=lf,
                                       text=True, start_new_session=True)

    def expect(role, word):
        p = procs[role]
        got = []
        t = threading.Thread(target=lambda: got.append(p.stdout.readline()), daemon=True)
        t.start()
        t.join(limit)
        line = got[0].strip() if got else ""
        lf.write("    handover E=%d S=%d %s #%d %s: %s\n" % (e, s, mode, rep, role, line or "(nothing)"))
        lf.flush()
        if not line.startswith(word + " "):
            raise RuntimeError("%s: wanted %s, got %r" % (role, word, line[:200]))
        kv = {}
        for x in line.split()[1:]:
            k, v = x.split("=", 1)
            try:
                kv[k] = float(v)
            except ValueError:
                kv[k] = v
        return kv

    def snap(step):
        res["steps"][step] = {role: proc_status(p.pid) for role, p in procs.items() if p.poll() is None}

    def tell(role, text):
        procs[role].stdin.write(text + "\n")
        procs[role].stdin.flush()
    try:
        start("leader")
        res["leader_connected"] = expect("leader", "CONNECTED")
        res["leader_joined"] = expect("leader", "JOINED")
        snap("leader joined")
        start("standby")
        res["standby_connected"] = expect("standby", "CONNECTED")
        res["standby_following"] = expect("standby", "FOLLOWING")
        snap("standby following")
        t0 = time.time_ns()
        if mode.startswith("crash"):
            os.kill(procs["leader"].pid, signal.SIGKILL)
        else:
            tell("leader", "graceful")
        tell("standby", "T0 %d" % t0)
        res["standby_led"] = expect("standby", "LED")
        if mode == "graceful":
            res["leader_graceful"] = expect("leader", "GRACEFUL")
        snap("standby leads all")
        tell("standby", "teardown")
        res["standby_teardown"] = expect("standby", "TEARDOWN")
        snap("standby torn down")
        res["ok"] = res["standby_led"].get("is_leader") == e
        if not res["ok"]:
            res["failed"] = "is_leader answered 1 on %s of %d" % (res["standby_led"].get("is_leader"), e)
    except (RuntimeError, OSError, ValueError) as x:
        res["failed"] = str(x)
        log("handover E=%d S=%d %s #%d: %s" % (e, s, mode, rep, x))
    finally:
        for role, p in procs.items():
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(30)
        lf.close()
    return res


def read_handover(raw):
    """[(handover JSON, {creates_ms, deletes_ms} of its repeat's floor)]."""
    out = []
    for p in sorted(glob.glob(os.path.join(raw, "handover_*.json"))):
        try:
            r = json.load(open(p))
        except ValueError:
            continue
        bulk = {}
        bp = os.path.join(raw, "bulk_handover_%d_%d.txt" % (r["elections"], r["repeat"]))
        if os.path.exists(bp):
            for line in open(bp):
                m = re.match(r"BULK (creates|deletes) n=\d+ ms=([0-9.]+)", line)
                if m:
                    bulk[m.group(1) + "_ms"] = float(m.group(2))
        out.append((r, bulk))
    return out


def write_handover(R, runs):
    """The handover of E elections between two processes, against the
    targets of issue 35."""
    if not runs:
        return
    R.p("## Handover of E elections between two processes (issue 35)")
    R.p()
    T = runs[0][0].get("session_timeout_ms", HANDOVER_T_MS)
    R.p("`bench/handover.c`: a leader process volunteers E elections, each alone on a path of its own, spread "
        "over S sessions, until it leads all (join alone); a standby process volunteers for the same E until "
        "all are FOLLOWING (join behind it); then the leader is SIGKILLed (crash: with the crash guard, "
        "`crash.guard` auto, the default; and with `crash.guard=off`, where the session timeout T = %d ms "
        "ends it), or leaves gracefully (`zkelect_resign()` all, then `zkelect_election_destroy()` each and "
        "`zkelect_client_destroy()`, a thread per session); handover: from just before the kill or the "
        "graceful call until the standby's last ELECTED (the events' own times). Then the standby tears down "
        "(resign all, destroy each, destroy the clients). Targets: crash, T + 1.5 x the floor's E creates "
        "(the standby's claims); graceful, 1.5 x the floor's E deletes (the leader's deletes); the floor is "
        "`bench/zkbulk.c` for E in the same repeat. Medians over the repeats; `ok`: runs where the standby "
        "led all E and `zkelect_is_leader()` answered 1 on every handle." % T)
    R.p()
    groups = {}
    for r, b in runs:
        groups.setdefault((r["elections"], r["sessions"], r["mode"]), []).append((r, b))

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    def g(r, *ks):
        for k in ks:
            r = r.get(k) if isinstance(r, dict) else None
        return r
    rows, mrows = [], []
    for (e, s, mode), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], HANDOVER_MODES.index(kv[0][2])
                                                                   if kv[0][2] in HANDOVER_MODES else 9)):
        ok = [r for r, _ in rs if r.get("ok")]
        hand = med([g(r, "standby_led", "ms") for r in ok])
        if mode.startswith("crash"):
            tgt = [T + 1.5 * b["creates_ms"] for r, b in rs if r.get("ok") and b.get("creates_ms")]
        else:
            tgt = [1.5 * b["deletes_ms"] for r, b in rs if r.get("ok") and b.get("deletes_ms")]
        met = [g(r, "standby_led", "ms") <= t for (r, b), t in zip([x for x in rs if x[0].get("ok")], tgt)]
        rows.append([
            "{:,}".format(e), str(s), mode, "%d/%d" % (len(ok), len(rs)),
            "%s ms" % f(med([g(r, "leader_joined", "ms") for r in ok]), 0),
            "%s ms" % f(med([g(r, "standby_following", "ms") for r in ok]), 0),
            "%s ms" % f(med([b.get("creates_ms") for r, b in rs]), 0),
            "%s ms" % f(med([g(r, "leader_graceful", "ms") for r in ok]), 0) if mode == "graceful" else "-",
            "%s ms" % f(hand, 0), "%s ms" % f(med([g(r, "standby_led", "first_ms") for r in ok]), 0),
            "%s ms" % f(med(tgt), 0),
            ("met %d/%d" % (sum(met), len(met))) if met else "-",
            "%s ms" % f(med([g(r, "standby_teardown", "ms") for r in ok]), 0),
            "%s ms" % f(med([b.get("deletes_ms") for r, b in rs]), 0)])

        def mem(step, role):
            v = med([g(r, "steps", step, role) and g(r, "steps", step, role)[0] for r in ok])
            return None if v is None else v / 1024.0

        def thr(step, role):
            v = med([g(r, "steps", step, role) and g(r, "steps", step, role)[1] for r in ok])
            return "-" if v is None else "%d" % v

        def conn(role):
            return med([g(r, role + "_connected", "rss_kib") for r in ok])
        lj, sc = mem("leader joined", "leader"), conn("standby")
        mrows.append([
            "{:,}".format(e), str(s), mode,
            "%s MB" % f((conn("leader") or 0) / 1024.0, 1),
            "%s MB / %s" % (f(lj, 1), thr("leader joined", "leader")),
            "%s KB" % f((lj * 1024 - conn("leader")) * 1.024 / e, 1) if lj and conn("leader") else "-",
            "%s MB / %s" % (f(mem("standby following", "leader"), 1), thr("standby following", "leader")),
            "%s MB / %s" % (f(mem("standby following", "standby"), 1), thr("standby following", "standby")),
            "%s KB" % f((mem("standby following", "standby") * 1024 - sc) * 1.024 / e, 1)
            if mem("standby following", "standby") and sc else "-",
            "%s MB / %s" % (f(mem("standby leads all", "standby"), 1), thr("standby leads all", "standby")),
            "%s MB / %s" % (f(mem("standby torn down", "standby"), 1), thr("standby torn down", "standby"))])
    R.table(["E", "sessions", "mode", "ok", "join alone (leader)", "join behind it (standby FOLLOWING)",
             "floor: E creates", "graceful leave (leader)", "handover: standby leads all",
             "first led", "target", "handover vs target", "teardown (standby)", "floor: E deletes"], rows)
    R.p("Resident set (VmRSS) and threads of each process at each step (median; the crash guard, "
        "`zkelect-guard`, is a process of its own and not counted; per election: each process's growth from "
        "its clients' connection to the end of its join, in KB of 1,000 bytes):")
    R.p()
    R.table(["E", "sessions", "mode", "leader connected", "leader joined (RSS / threads)", "per election",
             "leader, standby following", "standby following", "per election", "standby leads all",
             "standby torn down"], mrows)


def read_shards(raw):
    """{E: {"destroy": scale JSON, "resign-first": ..., "shutdown": ...,
    "bulk": {creates_ms, deletes_ms}}} of the shards runs (issue 35, 56)."""
    out = {}
    for e in SHARD_ES + (SHARD_BIG,):
        row = {}
        for td in ("destroy", "resign-first", "shutdown"):
            p = os.path.join(raw, "shards_%d_%s.json" % (e, td))
            if os.path.exists(p):
                try:
                    row[td] = json.load(open(p))
                except ValueError:
                    pass
        p = os.path.join(raw, "bulk_%d.txt" % e)
        if os.path.exists(p):
            for line in open(p):
                m = re.match(r"BULK (creates|deletes|pathcreates) n=\d+ ms=([0-9.]+)", line)
                if m:
                    row.setdefault("bulk", {})[m.group(1) + "_ms"] = float(m.group(2))
        if row:
            out[e] = row
    p = os.path.join(raw, "shards_peers.json")
    if os.path.exists(p):
        try:
            out["peers"] = json.load(open(p))
        except ValueError:
            pass
    return out


def teardown_target(R, sh):
    """Issue 56: E elections on one client end with one call in at most
    1.5 s at E = 10,000, and within 1.5 x the floor of E pipelined deletes
    at E = 100,000 (when measured)."""
    s10 = ((sh.get(10000) or {}).get("shutdown") or {}).get("teardown_ms")
    R.target(None if s10 is None else s10 <= 1500,
             "teardown of 10,000 elections on one client (zkelect_client_shutdown, then every destroy) "
             "<= 1,500 ms: %s ms (destroying each: %s ms)" % (
                 f(s10, 0), f(((sh.get(10000) or {}).get("destroy") or {}).get("teardown_ms"), 0)))
    big = sh.get(SHARD_BIG) or {}
    sb, fb = (big.get("shutdown") or {}).get("teardown_ms"), (big.get("bulk") or {}).get("deletes_ms")
    if sb is not None:
        R.target(None if fb is None else sb <= 1.5 * fb,
                 "teardown of %s elections on one client <= 1.5 x the floor of as many pipelined deletes: "
                 "%s ms, floor %s ms (x%s)" % ("{:,}".format(SHARD_BIG), f(sb, 0), f(fb, 0), ratio(sb, fb)))


def write_teardown(R, sh):
    """The teardown rows (issue 56): one shutdown call beside destroying
    each, resigning first, and the floor."""
    rows = []
    for e, row in sorted((k, v) for k, v in sh.items() if k != "peers"):
        sd = (row.get("shutdown") or {}).get("teardown_ms")
        if sd is None:
            continue
        d = (row.get("destroy") or {}).get("teardown_ms")
        r = (row.get("resign-first") or {}).get("teardown_ms")
        fl = (row.get("bulk") or {}).get("deletes_ms")
        call = (row.get("shutdown") or {}).get("shutdown_call_ms")
        rows.append(["{:,}".format(e), "%s ms" % f(sd, 0), "%s ms" % f(call, 0), "%s ms" % f(d, 0), "%s ms" % f(r, 0),
                     "%s ms" % f(fl, 0), ratio(sd, fl), ratio(d, sd)])
    if not rows:
        return
    R.p("### Teardown (issue 56)")
    R.p()
    R.p("The same client's E elections ended three ways, each from the join's end until the client is "
        "destroyed: `zkelect_client_shutdown()` (every delete sent at once, then the session closed) and "
        "then each `zkelect_election_destroy()`; destroying each (every destroy waits for its own delete: "
        "the one-by-one floor of the library's own API); resigning all first. Floor: E deletes pipelined by "
        "ZooKeeper's C client (`bench/zkbulk.c`).")
    R.p()
    R.table(["E", "teardown: client shutdown", "of which the call", "teardown: destroy each", "teardown: resign all, then destroy",
             "floor: E deletes", "shutdown / floor", "destroy each / shutdown"], rows)
    R.p()


def write_shards(R, sh):
    """E elections, each alone on its path, on one session, beside the
    floor (bench/zkbulk.c)."""
    if not sh:
        return
    R.p("## Many elections on one session (issue 35)")
    R.p()
    R.p("`bench/scale.c --own-paths 1 --sessions 1`: one client volunteers E candidacies, each alone on a path "
        "of its own, until every one is ELECTED (join), then destroys them one by one, or resigns them all "
        "first and then destroys them (teardown); resident memory beyond the session's, per election, at the "
        "end of the join. Floor: `bench/zkbulk.c`, E creates then E deletes pipelined by ZooKeeper's C client "
        "on one session (a join needs at least one create per election, a teardown one delete); and, as many "
        "writes as a join on paths nobody made yet needs at the least, E paths each with its node, the same "
        "way (2E creates).")
    R.p()
    rows = []
    for e, row in sorted((k, v) for k, v in sh.items() if k != "peers"):
        d, r, b = row.get("destroy") or {}, row.get("resign-first") or {}, row.get("bulk") or {}
        base = d or r

        def ratio(x, y):
            return "%.1f x" % (x / y) if x and y else "-"
        rows.append([
            "{:,}".format(e),
            "%s ms" % f(base.get("converge_ms"), 0), "%s ms" % f(b.get("creates_ms"), 0),
            ratio(base.get("converge_ms"), b.get("creates_ms")),
            "%s ms" % f(b.get("pathcreates_ms"), 0), ratio(base.get("converge_ms"), b.get("pathcreates_ms")),
            "%s ms" % f(d.get("teardown_ms"), 0), "%s ms" % f(r.get("teardown_ms"), 0),
            "%s ms" % f(b.get("deletes_ms"), 0), ratio(r.get("teardown_ms"), b.get("deletes_ms")),
            "%s B" % f(base.get("rss_bytes_per_candidacy"), 0),
            "yes" if base.get("correct") else "NO"])
    R.table(["E", "join", "floor: E creates", "join / floor", "floor: E paths + E nodes", "join / that floor",
             "teardown: destroy each",
             "teardown: resign all, then destroy", "floor: E deletes", "resign-first / floor",
             "RSS per election", "all lead, is_leader agrees"], rows)
    R.p()
    peers = sh.get("peers")
    if peers:
        R.p("The peers, the idle bench's holders (`CuratorIdle`: LeaderLatch on one CuratorFramework; "
            "`kazoo_idle.py`: kazoo's Lock, the recipe under its Election, on one client), as far as each gets "
            "within %d s a phase; a larger E is not tried after one that did not finish. Teardown: every latch "
            "or lock closed, then the client; RSS per election: the process's growth during the join." % PEER_LIMIT_S)
        R.p()
        R.table(["library", "E", "join", "teardown", "RSS per election"],
                [[r["impl"], "{:,}".format(r["elections"]),
                  "%s ms" % f(r.get("join_ms"), 0) if r.get("joined") else "not within %d s" % r["limit_s"],
                  "%s ms" % f(r.get("teardown_ms"), 0) if r.get("teardown_ms") is not None else "-",
                  "%s B" % f(r.get("rss_bytes_per_election"), 0) if r.get("joined") else "-"]
                 for r in peers])
        R.p()


def write_endpoint(R, ep):
    """zkelect run's /metrics beside a /leader probe (bench/leader_endpoint.py)."""
    if not ep:
        return
    a, w = ep["alone"], ep["with_leader_probe"]
    R.p("## The leader endpoint (`bench/leader_endpoint.py`)")
    R.p()
    R.p("One `zkelect run --metrics-listen` leads; /metrics is scraped 20 times a second for %s s, "
        "alone, then while a probe asks GET /leader at %d/s on one kept-alive connection."
        % (f(ep["seconds"], 0), ep["rate_asked"]))
    R.p()
    R.table(["/metrics, 20/s", "median ms", "p99 ms", "zkelect run CPU ms/s"],
            [["alone", f(a["metrics_median_ms"], 2), f(a["metrics_p99_ms"], 2),
              f(a["run_cpu_ms_per_s"], 1)],
             ["with /leader at %d/s" % ep["rate_asked"], f(w["metrics_median_ms"], 2),
              f(w["metrics_p99_ms"], 2), f(w["run_cpu_ms_per_s"], 1)]])
    R.p("/metrics median with/alone: %s. /leader reached %s/s, median %s ms, p99 %s ms."
        % (f(ep["metrics_median_ratio"], 2), f(w["leader_rate"], 0), f(w["leader_median_ms"], 2),
           f(w["leader_p99_ms"], 2)))
    R.p()


def write_idle(R, idle):
    """The idle cost table, and its target (after the targets were written:
    see write_targets)."""
    if not (idle and idle.get("results")):
        return
    R.p("## Idle cost (`bench/idle_cost.py`)")
    R.p()
    R.p("One session leads E elections on distinct paths and does nothing else; T = %d ms. "
        "ZooKeeper writes per second over a %s s window (growth of the quorum's zxid). "
        "\"held\" says whether every election was still led at the end. With no holder at all "
        "the ensemble wrote %s/s. Each holder's paths are deleted before the next one starts."
        % (idle["session_timeout_ms"], f(idle["window_s"], 0),
           f(idle.get("baseline_writes_per_s"), 2)))
    R.p()
    es = sorted({r["elections"] for rs in idle["results"].values() for r in rs})
    rows = []
    for name in ("libzkelect", "curator", "kazoo"):
        rs = {r["elections"]: r for r in idle["results"].get(name, [])}
        cells = []
        for e in es:
            r = rs.get(e)
            if r is None:   # not run for this holder (--idle-100k: libzkelect alone)
                cells.append("-")
                continue
            cells.append("error" if "error" in r else "%s (held: %s)" % (
                f(r.get("writes_per_s"), 2), "yes" if r.get("held_throughout") else "NO"))
        rows.append([name] + cells)
    R.table(["writes/s at rest"] + ["E = %d" % e for e in es], rows)
    # The sessions that wait: libzkelect's heir and third (bench/idle_cost.py
    # --follow-holder), each its window less the window before.
    lzr = {r["elections"]: r for r in idle["results"].get("libzkelect", [])}
    if any("roles" in r for r in lzr.values()):
        R.p()
        R.p("The same at rest by role, libzkelect: the leader's session alone, then a second "
            "session waiting as heir in each of the E elections, then a third behind it (each "
            "row its window less the window before). Requests: packets the servers received "
            "(`srvr`'s Received, pings included); with no holder at all %s/s."
            % f(idle.get("baseline_requests_per_s"), 2))
        R.p()
        rrows = []
        for role in ("leader", "heir", "third"):
            cells = []
            for e in es:
                ro = lzr.get(e, {}).get("roles", {}).get(role)
                cells.append("-" if not ro else "%s / %s" % (f(ro.get("requests_per_s"), 2),
                                                              f(ro.get("writes_per_s"), 2)))
            rrows.append([role] + cells)
        R.table(["libzkelect requests/s / writes/s at rest"] + ["E = %d" % e for e in es], rrows)
        fol = {e: max(r["roles"][k]["requests_per_s"] for k in ("heir", "third")
                      if k in r["roles"]) for e, r in lzr.items()
               if len(r.get("roles", {})) == 3}
        # Flat in E: a waiting session sends a probe every T/3 or (the heir)
        # a keepalive every T/6, and one re-check per T for all its elections.
        per_t = 1000.0 / idle["session_timeout_ms"]
        R.target(None if len(fol) < 2
                 else max(fol.values()) <= min(fol.values()) + 2 * per_t + 1.0 / idle["window_s"],
                 "idle cost of waiting: a follower session's requests at rest do not grow with E "
                 "(within two per T of E = %d): %s" % (
                     min(fol), ", ".join("E=%d %s/s" % (e, f(v, 2)) for e, v in sorted(fol.items()))))
    lz = {r["elections"]: r.get("writes_per_s") for r in idle["results"].get("libzkelect", [])}
    per_period = 6000.0 / idle["session_timeout_ms"]
    # One write more or less falls into a window by where it starts.
    R.target(None if not lz or None in lz.values()
             else max(lz.values()) <= per_period + 1.0 / idle["window_s"],
             "idle cost: at most one keepalive per T/6 per session whatever E "
             "(%s/s at T = %d ms): libzkelect %s" % (
                 f(per_period, 2), idle["session_timeout_ms"],
                 ", ".join("E=%d %s/s" % (e, f(v, 2)) for e, v in sorted(lz.items()))))


def write_floor(R, floor):
    if not floor:
        return
    R.p("## Floor (ZooKeeper C client; median / p90 ms)")
    R.p()
    R.table(["placement", "read RTT", "write RTT", "delete RTT", "delete -> watch fired",
             "delete -> watch -> getChildren"],
            [[pl] + ["%s / %s" % (f(v[k][0], 2), f(v[k][1], 2)) if k in v else "-"
                     for k in ("read", "write", "delete", "watch", "getchildren")] for pl, v in floor.items()])


# --------------------------------------------------------------------------
# operations: the rolling restart (bench/rolling_restart.py)

OPS_NAMES = {"libzkelect": "libzkelect", "curator": "Curator", "kazoo": "kazoo"}


def ops_runs(res, key):
    """{impl: {T: [run]}} of one variant ("operations" or "upgrade")."""
    out = {}
    for i in IMPLS:
        for r in res[i].get(key, []):
            out.setdefault(i, {}).setdefault(r["T_ms"], []).append(r)
    return out


def ops_cells(runs):
    """lost, changes, longest without a leader, overlaps, the quorum's
    longest unavailability: each run's value,
    runs apart by " / "; "error" for a run that did not finish."""
    def each(fn):
        return " / ".join("error" if "error" in r else fn(r) for r in runs) if runs else "-"
    return [each(lambda r: "%d%s" % (r["lost"], " (regained %d)" % r["regained"] if r["lost"] else "")),
            each(lambda r: str(r["changes"])),
            each(lambda r: "%.0f" % r["longest_no_leader_ms"]),
            each(lambda r: str(r["overlaps"])),
            each(lambda r: "%.0f" % r["quorum_unavailable_ms"])]


def ops_section(R, res, meta, h):
    """The operations tables and their targets (h: the heading prefix);
    returns the target lines."""
    targets = []

    def target(ok, text):
        targets.append("- **%s**: %s" % ("MET" if ok else ("NOT MET" if ok is False else "NOT MEASURED"), text))
    body = Report()
    for key, title in (("operations", "rolling restart"), ("upgrade", "rolling upgrade")):
        by = ops_runs(res, key)
        if not by:
            continue
        Ts = sorted({t for v in by.values() for t in v}, reverse=True)
        all_runs = [r for v in by.values() for rs in v.values() for r in rs if "error" not in r]
        rel = ""
        if key == "upgrade":
            ups = sorted({r.get("upgrade_to") for r in all_runs if r.get("upgrade_to")})
            says = sorted({(x.get("srvr_version") or "?").split("-")[0] for r in all_runs for x in r["restarts"]})
            rel = (" from Debian's 3.8.0 to %s, one server at a time (the restarted servers' srvr: %s; "
                   "the ensemble runs mixed versions until the last restart)" % (", ".join(ups), ", ".join(says)))
        down = all_runs[0]["down_s"] if all_runs else OPS_DOWN_S
        body.p("%s Operations: %s" % (h, title))
        body.p()
        body.p("`./dev bench --groups %s%s` (bench/rolling_restart.py): 3 participants of each library "
               "(one process and one session each) elect a leader on a fresh ensemble of the bench's "
               "configuration (tickTime %d ms, fsync on); then every server is restarted in turn%s, the "
               "followers first and the quorum's leader last, each stopped (SIGTERM), down %.0f s and "
               "started again, the next once the quorum serves again; then T more seconds. From the "
               "participants' own lines between the first stop and the end: leadership lost (LOST lines "
               "of the first leader; regained: its own LEADER lines after), changes (LEADER lines of "
               "another participant), the longest time with no participant leading, and overlaps (two "
               "leading at once by their stamps); and the quorum's own longest unavailability in the same "
               "run (below). One value per run, runs apart by \" / \"."
               % (OPS_GROUP, " --upgrade" if key == "upgrade" else "", TICK_MS, rel, down))
        body.p()
        head = ["library"]
        for t in Ts:
            head += ["T = %g s: %s" % (t / 1000.0, c) for c in
                     ("leadership lost", "changes", "longest without a leader (ms)", "overlaps",
                      "quorum unavailable (ms)")]
        rows = []
        for i in IMPLS:
            if i not in by:
                continue
            row = [OPS_NAMES[i]]
            for t in Ts:
                row += ops_cells(by[i].get(t, []))
            rows.append(row)
        body.table(head, rows)
        body.p("The quorum's own unavailability in the same runs: a bare session (connect, exists, "
               "closeSession) tried every %.0f ms on the first server that takes it; for each restart, its "
               "longest outage: a stretch of probes that no server served, from the end of the last success "
               "before it (or the stop, if later) to the end of the first success after it; 0 when none failed. "
               "Milliseconds per run, the three restarts in order (follower, follower, the quorum's "
               "leader); the round trip is the probes' median exists round trip."
               % (all_runs[0]["probe_every_ms"] if all_runs else 25))
        body.p()
        qrows = []
        for i in IMPLS:
            for t in Ts:
                for r in by.get(i, {}).get(t, []):
                    if "error" in r:
                        qrows.append([OPS_NAMES[i], "%g s" % (t / 1000.0), str(r["repeat"]), "error", "-", "-", "-"])
                        continue
                    qrows.append([OPS_NAMES[i], "%g s" % (t / 1000.0), str(r["repeat"]),
                                  ", ".join("%.0f" % x["unavailable_ms"] for x in r["restarts"]),
                                  f(r["probe_rt_ms"], 2),
                                  ", ".join("%.0f at %.1f s" % (g["ms"], g["at_ms"] / 1000) for g in r["gaps"]) or "none",
                                  ", ".join("%.1f-%.1f s" % (x["at_ms"] / 1000, x["back_ms"] / 1000)
                                            for x in r["restarts"])])
        body.table(["library", "T", "run", "quorum unavailable per restart (ms)", "round trip (ms)",
                    "times without a leader (ms, at s from the first stop)",
                    "restarts (stop - quorum serving again, s)"], qrows)
        # Targets for libzkelect (lease mode), issue 32.
        lz = by.get("libzkelect", {})
        what = title
        for t in Ts:
            rs = lz.get(t, [])
            if not rs:
                target(None, "%s, T = %g s: libzkelect not run" % (what, t / 1000.0))
                continue
            err = any("error" in r for r in rs)
            ok_rs = [r for r in rs if "error" not in r]
            if t >= 6000:
                ok = not err and all(r["lost"] == 0 and r["changes"] == 0 and r["overlaps"] == 0 for r in ok_rs)
                target(ok, "%s, T = %g s: no loss, no change, no overlap: lost %s, changes %s, overlaps %s "
                       "over %d run(s)%s" % (what, t / 1000.0, sum(r["lost"] for r in ok_rs),
                                             sum(r["changes"] for r in ok_rs), sum(r["overlaps"] for r in ok_rs),
                                             len(rs), " (a run failed)" if err else ""))
            else:
                within = [r["longest_no_leader_ms"] <= r["quorum_unavailable_ms"] + (r["probe_rt_ms"] or 0)
                          for r in ok_rs]
                ok = not err and all(r["changes"] == 0 and r["overlaps"] == 0 for r in ok_rs) and all(within)
                target(ok, "%s, T = %g s: never another candidate, never an overlap, no leader for at most "
                       "the quorum's unavailability + one round trip: changes %s, overlaps %s, longest "
                       "without a leader vs the quorum's longest unavailability + round trip: %s%s"
                       % (what, t / 1000.0, sum(r["changes"] for r in ok_rs), sum(r["overlaps"] for r in ok_rs),
                          "; ".join("%.0f vs %.0f + %.1f ms" % (r["longest_no_leader_ms"], r["quorum_unavailable_ms"],
                                                                 r["probe_rt_ms"] or 0) for r in ok_rs),
                          " (a run failed)" if err else ""))
    if meta.get("operations_elapsed_s"):
        body.p("The operations group took %.0f s in this run (%s)." % (
            meta["operations_elapsed_s"], "with the upgrade" if meta.get("upgrade") else "restarts only"))
        body.p()
    if not targets:
        return []
    R.p("%s Targets (issue 32, libzkelect in lease mode)" % h)
    R.p()
    R.lines += targets
    R.p()
    R.lines += body.lines
    return targets


def read_fenced(raw):
    """{bytes: {"fenced", "set", "multi": every sample (us), "rounds":
    [(fenced median, set median)]}} of the fenced part's JSON files."""
    out = {}
    for p in sorted(glob.glob(os.path.join(raw, "fenced_*_*_*.json"))):
        name, size, rnd = os.path.basename(p)[len("fenced_"):-len(".json")].rsplit("_", 2)
        try:
            d = json.load(open(p))
        except ValueError:
            continue  # the program died before its JSON (see run.log)
        e = out.setdefault(int(size), {"fenced": [], "set": [], "multi": [], "by_round": {}})
        got = {"fenced": d.get("fenced_us", [])} if name == "fenced" else \
            {"set": d.get("set_us", []), "multi": d.get("multi_us", [])}
        for k, v in got.items():
            e[k].extend(v)
            if v:
                e["by_round"].setdefault(int(rnd), {})[k] = statistics.median(v)
    return out


def fenced_section(R, fe, meta, h):
    """The fenced write against a plain set of the same size; returns its
    target (MET when every size's median ratio is within FENCED_TARGET)."""
    R.p("%s Fenced write vs plain set (`bench/fenced.c`, `bench/zkset.c`)" % h)
    R.p()
    R.p("A fenced write: one candidacy leads, then writes one set of B bytes a batch, timed from "
        "`zkelect_fenced_ops_new()` to `zkelect_fenced_ops_destroy()` (the batch built, "
        "`zkelect_fenced_commit()`, freed), back to back. Plain set: the bare C client's synchronous "
        "`zoo_set()` of B bytes. Floor: the bare C client's synchronous `zoo_multi()` of a version check "
        "of an ephemeral node and the same set, what a fenced write sends. Both sessions on %s (%s), "
        "the two programs one after the other in each round (taking turns at going first), after a "
        "warm-up round not counted; medians and p90 over every write of every round, in ms." % (meta.get("fenced_server", "?"), meta.get("fenced_server_mode") or "mode unknown"))
    R.p()
    rows, oks = [], []
    for size in sorted(fe):
        e = fe[size]
        if not (e["fenced"] and e["set"]):
            continue
        fm, sm = statistics.median(e["fenced"]) / 1e3, statistics.median(e["set"]) / 1e3
        mm = statistics.median(e["multi"]) / 1e3 if e["multi"] else None
        per = [r["fenced"] / r["set"] for r in e["by_round"].values() if "fenced" in r and "set" in r]
        oks.append(fm / sm <= FENCED_TARGET)
        rows.append(["{:,}".format(size), "%d x %d" % (len(per), len(e["fenced"]) // max(1, len(per))),
                     f(fm, 3), f(pct(e["fenced"], 0.9) / 1e3, 3), f(sm, 3), f(pct(e["set"], 0.9) / 1e3, 3),
                     ratio(fm, sm, 3), "%.2f-%.2f" % (min(per), max(per)) if per else "-",
                     f(mm, 3), f(pct(e["multi"], 0.9) / 1e3 if e["multi"] else None, 3), ratio(fm, mm),
                     ratio(mm, sm)])
    R.table(["bytes", "rounds x writes", "fenced median", "fenced p90", "plain set median", "plain set p90",
             "fenced / set", "fenced / set by round", "floor: check + set median", "floor p90",
             "fenced / floor", "floor / set"], rows)
    text = "fenced write median <= %.1f x a plain set of the same size (issue 54): %s" % (
        FENCED_TARGET, "; ".join("%s B: %s ms vs %s ms (x%s)" % (r[0], r[2], r[4], r[6]) for r in rows)
        or "no results")
    R.target(all(oks) if oks else None, text)
    R.p(R.targets[-1])
    R.p()
    return R.targets


def write_fenced_report(raw, outdir, meta, stamp, fe):
    """The report of a run of the fenced part alone."""
    def body(h):
        R = Report()
        R.p("Generated by `./dev bench --only %s%s` (bench/run.py) from %s; the bench's 3-server "
            "ensemble on loopback (tickTime %d ms, fsync on); shared 2-core machine: only the ratios "
            "inside this run mean something." % (FENCED, " --quick" if meta.get("quick") else "", raw_ref(stamp), TICK_MS))
        R.p()
        R.table(["item", "value"], run_rows(meta))
        if meta.get("failures"):
            R.p("**Failures in this run:** " + "; ".join(meta["failures"]) + " (see `raw/%s/run.log`)." % stamp)
            R.p()
        return R, fenced_section(R, fe, meta, h + "#")

    title = "libzkelect fenced write benchmark: %s%s" % (stamp, " (quick)" if meta.get("quick") else "")
    R, targets = body("#")
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, stamp + ".md"), "w") as fh:
        fh.write("# %s\n\n" % title + "\n".join(R.lines) + "\n")
    R2, _ = body("##")
    update_latest(outdir, fenced="## %s (`%s.md`)\n\n" % (title, stamp) + "\n".join(R2.lines) + "\n")
    log("report: %s (and its section of LATEST.md)" % os.path.join(outdir, stamp + ".md"))
    print("\n".join(targets))


def read_balance(raw):
    try:
        return json.load(open(os.path.join(raw, "balance.json")))
    except (OSError, ValueError):
        return None


def balance_section(R, ba, meta, h):
    """The balance part's phases and its targets (issue 56)."""
    E = ba["count"]
    ph = ba["phases"]
    R.p("%s Balanced groups: 3, 4, 3, 2 processes x %s elections (`bench/balance.py`)" % (h, "{:,}".format(E)))
    R.p()
    R.p("Each process (`tests/bed/balance_member.py`) is one client with `balance.group` set and "
        "`zk.session_timeout_ms` = %d, holding a candidacy on each of the E elections, and a thread "
        "sampling `zkelect_is_leader()` of every handle round after round (spans of each term, "
        "CLOCK_BOOTTIME). Even: every live process leads E/P +- 1 and all E are led (polled every "
        "0.1 s), and every process within the band for %s s on end; time to even: to the start of that stretch (and to the first "
        "even look), from the last join's READY (its E candidacies volunteered), the graceful leave's "
        "`zkelect_client_shutdown()` asked, the SIGKILL. Moves: the processes' BALANCE_MOVES counters "
        "over the phase, read once they settle. Longest without a leader: of any election, from one "
        "term's last sample to the next term's first, by the phase it ended in; an over-estimate by "
        "up to a sampler round at each end (rounds: mean %s ms, longest %s ms over the processes)."
        % (ba["session_ms"], f((ph.get("joins") or {}).get("hold_s"), 0), f(mean_round(ba), 0),
           f(max_round(ba), 0)))
    R.p()
    names = [("joins", "3 join"), ("join4", "a 4th joins"), ("leave", "the 4th leaves gracefully"),
             ("kill", "one of 3 SIGKILLed")]
    rows = []
    for key, what in names:
        p = ph.get(key)
        if not p:
            rows.append([what] + ["-"] * 9)
            continue
        g = p.get("longest_gap")
        rows.append([what, str(p["processes"]), "%d..%d" % tuple(p["band"]), f(all_led(p, E), 1),
                     f(p.get("first_s"), 2),
                     f(p.get("took_s"), 2), str(p.get("moves", p.get("moves_total", "-"))),
                     f(needed(p, key, E), 0),
                     gap_text(g),
                     ", ".join(str(c) for c in p.get("counts") or []) or "-"])
    R.table(["phase", "processes", "even band", "all E led (s)", "first even look (s)", "time to even (s)", "moves",
             "moves needed", "longest without a leader (ms)", "counts at the end"], rows)
    R.p("All E led: the first look at which every election had a leader (a join's READY comes when its "
        "E candidacies are asked for, before they are made). Moves needed (for a join): the fewest that even the phase out, from its first look with all E "
        "led, the newcomer at 0 (the leaderships above the band). The 3 joins' moves are all of the run "
        "so far (the 2nd and 3rd join each evened out).")
    R.p()
    if ba.get("failures"):
        R.p("**Balance failures:** " + "; ".join(ba["failures"]))
        R.p()
    for key, what in names:
        p = ph.get(key)
        n = needed(p, key, E)
        if p and (p.get("took_s") is None or p["took_s"] > BALANCE_EVEN_S or p["took_s"] - p["first_s"] > 0.2
                  or n is not None and p.get("moves", 0) > n + E // 300):
            R.p("%s: %s; counts (and moves counters) over time, a change a second at most: %s; member nodes "
                "at the end: %s"
                % (what, "never even for %s s" % p.get("hold_s") if p.get("took_s") is None
                   else "even at %.2f s, for good from %.2f s" % (p["first_s"], p["took_s"]),
                   "; ".join("%.1f s %s (%s)" % (h[0], h[1], h[2]) for h in changes(p.get("history", []))),
                   ", ".join("`%s`" % (x[1],) for x in p.get("group", []))))
            R.p()
    balance_targets(R, ba)
    for t in R.targets:
        R.p(t)
    R.p()
    return R.targets


def needed(p, key, total):
    """The fewest moves that even a join's phase out: at its first look
    with all `total` led (the newcomer still at 0), the leaderships above
    the band's top. None for a leave or a crash: by their first look the
    balancer has been at work already."""
    if not p or key not in ("joins", "join4"):
        return None
    for h in p.get("history", []):
        if sum(h[1]) == total:
            return sum(max(0, n - p["band"][1]) for n in h[1])
    return None


def changes(history):
    """The looks of a phase's history whose counts differ from the look before."""
    out, last = [], None
    for h in history:
        if len(h) > 2 and h[1] != last and (not out or h[0] - out[-1][0] >= 1.0 or h is history[-1]):
            out.append(h)
            last = h[1]
    return out


def gap_text(g):
    """A phase's longest time without a leader: ms, which election, from
    whom to whom (the same term again: a lapse of is_leader() within it)."""
    if not g:
        return "none"
    how = " (same term)" if len(g) > 4 and g[2] == g[3] and g[4] == g[5] else ""
    return "%.0f (election %d, %s -> %s%s)" % (g[0], g[1], g[2], g[3], how)


def all_led(p, total):
    """The first look of a phase at which all `total` elections were led."""
    for h in (p or {}).get("history", []):
        if sum(h[1]) == total:
            return h[0]
    return None


def mean_round(ba):
    rs = [r for r in (ba.get("sampler_rounds") or {}).values() if r]
    return sum(r[1] for r in rs) / len(rs) if rs else None


def max_round(ba):
    rs = [r for r in (ba.get("sampler_rounds") or {}).values() if r]
    return max(r[2] for r in rs) if rs else None


def balance_targets(R, ba):
    E, ph = ba["count"], ba["phases"]
    j, j4, lv, k = (ph.get(x) or {} for x in ("joins", "join4", "leave", "kill"))

    def within(p, s):
        return None if not p else (p.get("took_s") is not None and p["took_s"] <= s)

    def gap(p):
        g = p.get("longest_gap") if p else None
        return g[0] if g else 0.0

    R.target(within(j, BALANCE_EVEN_S), "3 processes x %s elections: each leads %d +- 1 within %g s of the last "
             "join (issue 56): %s s, %s moves" % ("{:,}".format(E), E // 3, BALANCE_EVEN_S, f(j.get("took_s"), 2),
                                                 j.get("moves_total", "-")))
    cap = E // 4 + E // 300
    ok = within(j4, BALANCE_EVEN_S)
    R.target(None if ok is None else ok and j4.get("moves", cap + 1) <= cap,
             "a 4th joins: %d +- 1 each within %g s, at most %d moves: %s s, %s moves"
             % (E // 4, BALANCE_EVEN_S, cap, f(j4.get("took_s"), 2), j4.get("moves", "-")))
    R.target(within(lv, BALANCE_EVEN_S), "the 4th leaves gracefully: even again within %g s: %s s, %s moves"
             % (BALANCE_EVEN_S, f(lv.get("took_s"), 2), lv.get("moves", "-")))
    R.target(None if not lv else gap(lv) <= BALANCE_GAP_MS,
             "the graceful leave: no election without a leader longer than one graceful handover (%.0f ms, "
             "sampling included): longest %s ms (a 4th join's transfers: %s ms)"
             % (BALANCE_GAP_MS, f(gap(lv), 0), f(gap(j4), 0)))
    # The pace of moves: the 4th join's needed moves over its time to the
    # first even look (what the balancer does when it does not overshoot).
    n4, nk = needed(j4, "join4", E), k.get("moves")
    per_move = j4["first_s"] / n4 if j4.get("first_s") and n4 else None
    bound = BALANCE_KILL_S + (nk * per_move if per_move and nk is not None else 0)
    R.target(within(k, bound) if per_move and nk is not None else None,
             "one SIGKILLed (crash guard on): even again within %g s plus its moves at the 4th join's pace "
             "(%s): %s s, %s moves; longest without a leader %s ms (T = %d ms)"
             % (BALANCE_KILL_S, "%s moves x %s ms = %s s" % (f(nk, 0), f(per_move * 1e3, 1), f(bound, 2))
                if per_move and nk is not None else "no pace: the 4th join did not even out",
                f(k.get("took_s"), 2), k.get("moves", "-"), f(gap(k), 0), ba["session_ms"]))
    n = ba.get("overlaps")
    R.target(None if n is None else n == 0, "an is_leader() sampler over every handle sees no two leaders of one "
             "election at once: %s overlaps" % ("-" if n is None else n))


def write_balance_report(raw, outdir, meta, stamp, ba):
    """The report of a run of the balance part alone."""
    def body(h):
        R = Report()
        R.p("Generated by `./dev bench --only %s%s` (bench/run.py, bench/balance.py) from %s; the "
            "bench's 3-server ensemble on loopback (tickTime %d ms, fsync on); shared 2-core machine."
            % (BALANCE, " --quick" if meta.get("quick") else "", raw_ref(stamp), TICK_MS))
        R.p()
        R.table(["item", "value"], run_rows(meta))
        if meta.get("failures"):
            R.p("**Failures in this run:** " + "; ".join(meta["failures"]) + " (see `raw/%s/run.log`)." % stamp)
            R.p()
        return R, balance_section(R, ba, meta, h + "#") if ba else []

    title = "libzkelect balanced groups benchmark: %s%s" % (stamp, " (quick)" if meta.get("quick") else "")
    R, targets = body("#")
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, stamp + ".md"), "w") as fh:
        fh.write("# %s\n\n" % title + "\n".join(R.lines) + "\n")
    R2, _ = body("##")
    update_latest(outdir, balance="## %s (`%s.md`)\n\n" % (title, stamp) + "\n".join(R2.lines) + "\n")
    log("report: %s (and its section of LATEST.md)" % os.path.join(outdir, stamp + ".md"))
    print("\n".join(targets))


def write_ops_report(raw, outdir, res, meta, stamp):
    """The report of a run of the operations group alone."""
    def body(h):
        R = Report()
        R.p("Generated by `./dev bench --only %s --groups %s%s%s` (bench/run.py) from %s; shared "
            "2-core machine: the counts mean more than the milliseconds."
            % (",".join(i for i in IMPLS if i in meta.get("parts", IMPLS)), OPS_GROUP,
               " --upgrade" if meta.get("upgrade") else "", " --quick" if meta.get("quick") else "", raw_ref(stamp)))
        R.p()
        R.table(["item", "value"], run_rows(meta) + [
            ["participants", "libzkelect: `zkelect candidate` (release build, lease mode); Curator 5.4 "
                             "LeaderLatch; kazoo 2.8 Election"],
        ])
        if meta.get("failures"):
            R.p("**Failures in this run:** " + "; ".join(meta["failures"]) + " (see `raw/%s/run.log`)." % stamp)
            R.p()
        targets = ops_section(R, res, meta, h + "#")
        return R, targets

    title = "libzkelect operations benchmark: %s%s" % (stamp, " (quick: one run each)" if meta.get("quick") else "")
    R, targets = body("#")
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, stamp + ".md"), "w") as fh:
        fh.write("# %s\n\n" % title + "\n".join(R.lines) + "\n")
    R2, _ = body("##")
    update_latest(outdir, ops="## %s (`%s.md`)\n\n" % (title, stamp) + "\n".join(R2.lines) + "\n")
    log("report: %s (and its section of LATEST.md)" % os.path.join(outdir, stamp + ".md"))
    print("\n".join(targets))


def write_report(raw, outdir):
    res, other, floor = load_raw(raw)
    meta = other.get("meta") or {}
    stamp = os.path.basename(raw.rstrip("/"))
    if meta.get("ops_only"):
        write_ops_report(raw, outdir, res, meta, stamp)
        return
    fe = read_fenced(raw)
    if meta.get("fenced_only"):
        write_fenced_report(raw, outdir, meta, stamp, fe)
        return
    ba = read_balance(raw)
    if meta.get("balance_only"):
        write_balance_report(raw, outdir, meta, stamp, ba)
        return
    pc, il, mc = other.get("pausecheck"), other.get("isleader"), other.get("memcand")
    R = Report()
    conv_rows = convergence_rows(R, res, floor)
    grows = graceful_rows(R, res, floor)
    crows = crash_rows(R, res)
    prow = pause_rows(R, res, pc)
    hrows = herd_rows(R, res)
    isleader_targets(R, il)
    memory_target(R, mc)
    sc = scale_target(R, other.get("scale"))
    shards = read_shards(raw)
    teardown_target(R, shards)

    write_heading(R, stamp, meta)
    write_targets(R)
    write_convergence(R, conv_rows)
    write_graceful(R, grows)
    write_crash(R, crows)
    write_pause(R, prow, pc)
    write_transfer(R, res)
    write_herd(R, hrows)
    write_safety(R, res)
    write_in_process(R, il, mc, sc, other.get("scale_resign_first"))
    write_shards(R, shards)
    write_teardown(R, shards)
    write_handover(R, read_handover(raw))
    write_idle(R, other.get("idle"))
    write_endpoint(R, other.get("endpoint"))
    write_floor(R, floor)
    if os.path.exists(os.path.join(HERE, "results", "ANALYSIS.md")):
        R.p("Where the time goes and what would fix it: see [ANALYSIS.md](ANALYSIS.md) (profiles, written by hand).")
        R.p()
    text = "\n".join(R.lines) + "\n"
    # The operations group, when it ran: the end of this report, and its own
    # section of LATEST.md (kept by runs without it).
    O = Report()
    ops_targets = ops_section(O, res, meta, "##")
    O2 = Report()
    ops_section(O2, res, meta, "###")
    # The fenced part, likewise: the end of this report, its own section.
    F, F2 = Report(), Report()
    fenced_targets = fenced_section(F, fe, meta, "##") if fe else []
    if fe:
        fenced_section(F2, fe, meta, "###")
    B, B2 = Report(), Report()
    balance_targets_ = balance_section(B, ba, meta, "##") if ba else []
    if ba:
        balance_section(B2, ba, meta, "###")
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, stamp + ".md"), "w") as fh:
        fh.write(text + ("\n".join(O.lines) + "\n" if ops_targets else "")
                 + ("\n".join(F.lines) + "\n" if fe else "") + ("\n".join(B.lines) + "\n" if ba else ""))
    ops = None
    if ops_targets:
        ops = "## libzkelect operations benchmark: %s (`%s.md`)\n\n" % (stamp, stamp) + "\n".join(O2.lines) + "\n"
    fenced = None
    if fe:
        fenced = "## libzkelect fenced write benchmark: %s (`%s.md`)\n\n" % (stamp, stamp) + "\n".join(F2.lines) + "\n"
    balance = None
    if ba:
        balance = "## libzkelect balanced groups benchmark: %s (`%s.md`)\n\n" % (stamp, stamp) \
            + "\n".join(B2.lines) + "\n"
    # keeps LATEST.md's other sections
    update_latest(outdir, loopback=text, ops=ops, fenced=fenced, balance=balance)
    log("report: %s (and LATEST.md)" % os.path.join(outdir, stamp + ".md"))
    print("\n".join(R.targets + ops_targets + fenced_targets + balance_targets_))


# --------------------------------------------------------------------------
# WAN: the same bench with every client link (and in geo mode every link
# between servers) held MS each way by the fault proxy

# N of the convergence runs and of the burst floor on the WAN bed.
WAN_CONV_NS = (10, 50)
WAN_GRACEFUL_N = 10
WAN_JOIN_N = 3
WAN_FLOOR_NS = (10, 50)


def wan_groups(quick):
    """The driver's groups on the WAN bed: what a round trip changes
    (convergence, graceful failover, join, crash); the herd's counters and
    the pause test do not depend on the link."""
    n = ",".join(str(x) for x in WAN_CONV_NS)
    if quick:
        return [
            ("convergence", ["--tests", "convergence", "--n", n, "--conv-repeats", "1"]),
            ("graceful", ["--tests", "graceful", "--n", str(WAN_GRACEFUL_N), "--trials", "6",
                          "--warmup", "2"]),
            ("join-crash", ["--tests", "join,crash", "--join-n", str(WAN_JOIN_N), "--join-trials", "3",
                            "--crash-trials", "2"]),
        ]
    return [
        ("convergence", ["--tests", "convergence", "--n", n, "--conv-repeats", "5"]),
        ("graceful", ["--tests", "graceful", "--n", str(WAN_GRACEFUL_N), "--trials", "20",
                      "--warmup", "3"]),
        ("join-crash", ["--tests", "join,crash", "--join-n", str(WAN_JOIN_N), "--join-trials", "8",
                        "--crash-trials", "6"]),
    ]


def parse_ms_list(text, opt):
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        sys.exit("bench: %s takes milliseconds, e.g. 10,40 (not %r)" % (opt, text))
    if not vals or any(v <= 0 or v > 1000 for v in vals):
        sys.exit("bench: %s takes 1..1000 ms each way (not %r)" % (opt, text))
    return vals


def run_wan(a):
    """One ensemble; for each MS: the proxies' delay set, a warm-up burst,
    the driver's WAN groups for every library and the C client floors, all
    on the proxies' connect string. raw/<stamp>/wan<MS>/ holds each MS."""
    geo = bool(a.geo)
    mss = parse_ms_list(a.geo or a.wan, "--geo" if geo else "--wan")
    parts = [p.strip() for p in a.only.split(",")] if a.only else IMPLS + ["floor"]
    bad = [p for p in parts if p not in IMPLS + ["floor"]]
    if bad:
        sys.exit("bench: with --wan/--geo, --only takes %s (not %s)"
                 % (",".join(IMPLS + ["floor"]), ",".join(bad)))
    try:
        from bed.faultproxy import ProxiedEnsemble
    except ImportError as e:
        sys.exit("bench: %s: tests/ must be on PYTHONPATH (./dev bench sets it)" % e)
    stamp, raw, tmp, runlog, logdir, build, zkelect, meta = new_run(
        a, parts, mode="geo" if geo else "wan", delays_ms=mss)
    progs = c_programs(build)
    kazoo = os.path.join(HERE, "participants", "kazoo", "kazoo_participant.py")
    impl_cmd = {"libzkelect": shlex.join([zkelect, "candidate"]),
                "kazoo": shlex.join(["/usr/bin/python3", kazoo])}
    impl_env = {}
    if "curator" in parts:
        cmd, impl_env["curator"] = prepare_curator(tmp)
        impl_cmd["curator"] = shlex.quote(cmd)

    ens = proxies = None

    def on_term(signum, frame):
        raise SystemExit("bench: signal %d" % signum)

    old = signal.signal(signal.SIGTERM, on_term)
    t_start = time.monotonic()
    try:
        log("starting the bench ensemble%s" % (" (links between servers through proxies)" if geo else ""))
        ens = start_ensemble(peer_links=geo)
        proxies = ProxiedEnsemble([ens.client_port(i) for i in range(ens.n)])
        connect = proxies.connect_string
        log("ensemble up: %s, clients through %s" % (ens.connect_string, connect))
        active = [i for i in IMPLS if i in parts]
        groups = wan_groups(a.quick)
        if a.groups:
            want = [g.strip() for g in a.groups.split(",")]
            bad = [g for g in want if g not in [name for name, _ in groups]]
            if bad:
                sys.exit("bench: with --wan/--geo, --groups takes %s (not %s)"
                         % (",".join(name for name, _ in groups), ",".join(bad)))
            groups = [(name, args) for name, args in groups if name in want]
        for ms in mss:
            sub = os.path.join(raw, "wan%d" % ms)
            os.makedirs(sub)
            log("client links +%d ms each way%s" % (ms, ", links between servers too" if geo else ""))
            proxies.delay(ms)
            if geo:
                ens.delay_links(ms)
            # Every session of the last MS is gone; the servers warm up on
            # a burst of the bare C client through the new delay.
            rc = run_logged([progs["zkjoin"], "--connect", connect, "--n", "50", "--repeats", "2",
                             "--warmup", "1", "--label", "warm-up"], runlog, 300,
                            stdout_path=os.devnull)
            if rc != 0:
                meta["failures"].append("+%d ms: the warm-up (zkjoin) exited %d" % (ms, rc))
            run_groups(groups, active, impl_cmd, impl_env, connect, sub, logdir, runlog, meta,
                       label="+%d ms: " % ms)
            if "floor" in parts:
                # Once through each server: what a write costs depends on
                # whether the session's server is the quorum's leader (a
                # follower forwards it: one more trip between servers in
                # geo mode), and the participants' sessions land on any.
                # The floor is the median over the servers. Every iteration
                # of zkfloor is several round trips: fewer than on loopback.
                n, w = (15, 3) if a.quick else (40, 5)
                lead = ens.leader_index()
                for i, px in enumerate(proxies.proxies):
                    rc = run_logged([progs["zkfloor"], "--connect", px.address, "--count", str(n),
                                     "--warmup", str(w), "--label", wan_floor_label(i, i == lead)],
                                    runlog, 1200, stdout_path=os.path.join(sub, "floor_server%d.txt" % i))
                    if rc != 0:
                        meta["failures"].append("+%d ms: floor through server %d exited %d" % (ms, i, rc))
                # The burst twice: the recipe's least (2-3 requests per
                # contender), and with libzkelect's requests (5-7: zkjoin
                # --like-libzkelect), the fair floor of its convergence.
                for n in WAN_FLOOR_NS:
                    for like, name in ((False, "floor_join%d.txt"), (True, "floor_joinlike%d.txt")):
                        rc = run_logged([progs["zkjoin"], "--connect", connect, "--n", str(n),
                                         "--repeats", "2" if a.quick else "5", "--label", FLOOR_PLACEMENT]
                                        + (["--like-libzkelect"] if like else []),
                                        runlog, 600, stdout_path=os.path.join(sub, name % n))
                        if rc != 0:
                            meta["failures"].append("+%d ms: join floor N=%d%s exited %d"
                                                    % (ms, n, " (libzkelect's requests)" if like else "", rc))
    finally:
        signal.signal(signal.SIGTERM, old)
        if proxies is not None:
            proxies.close()
        if ens is not None:
            log("stopping the bench ensemble")
            ens.stop()
        end_run(raw, tmp, meta, t_start)
    write_wan_report(raw, a.out)


def wan_floor_label(i, leader):
    return "through server %d only (the quorum's %s)" % (i, "leader" if leader else "follower")


def wan_floors(sub):
    """The C client's floors of one delay: ({placement: {key: (median,
    p90)}}, their combination): per key the median over the servers of the
    medians and of the p90s; the bursts as they are."""
    floor = {}
    for p in sorted(glob.glob(os.path.join(sub, "floor_server*.txt"))):
        floor.update(parse_floor(p))
    comb = {}
    for k in ("read", "write", "delete", "watch", "getchildren"):
        vals = [v[k] for v in floor.values() if k in v]
        if vals:
            comb[k] = (statistics.median(m for m, _ in vals), statistics.median(q for _, q in vals))
    for n in WAN_FLOOR_NS:
        for rows in parse_floor(os.path.join(sub, "floor_join%d.txt" % n)).values():
            comb.update((k, v) for k, v in rows.items() if k.startswith("join"))
        # zkjoin --like-libzkelect (absent in runs before it): joinlike<N>
        for rows in parse_floor(os.path.join(sub, "floor_joinlike%d.txt" % n)).values():
            comb.update(("joinlike" + k[4:], v) for k, v in rows.items() if k.startswith("join"))
    return floor, comb


def wan_figures(res, floors, ms):
    """{measure: {impl: ms, "floor": ms, ...}} of one delay, from the
    driver's results and the C client's floors (wan_floors)."""
    placements, fl = floors
    med = lambda k, d=fl: d.get(k, (None, None))[0]
    p90 = lambda k, d=fl: d.get(k, (None, None))[1]
    two_rt = med("write") + med("read") if med("write") is not None and med("read") is not None else None

    def get(r, test, n=None):
        v = r.get(test)
        if isinstance(v, list):
            v = next((x for x in v if x["n"] == n), None)
        return v

    out = {}
    g = {i: get(res[i], "graceful", WAN_GRACEFUL_N) for i in IMPLS}
    out["graceful median"] = {i: g[i]["failover_ms"].get("median") if g[i] else None for i in IMPLS}
    out["graceful median"]["floor"] = med("watch")
    out["graceful p90"] = {i: g[i]["failover_ms"].get("p90") if g[i] else None for i in IMPLS}
    out["graceful p90"]["floor"] = p90("watch")
    out["graceful lost"] = {i: g[i].get("lost") if g[i] else None for i in IMPLS}
    out["resign -> follower"] = {i: g[i].get("resign_to_follower_ms", {}).get("median") if g[i] else None
                                 for i in IMPLS}
    # the delete's round trip, then the create + listing and the read that
    # sets the watch: what the recipe needs at least
    out["resign -> follower"]["floor"] = (med("delete") + two_rt
                                          if med("delete") is not None and two_rt is not None else None)
    for n in WAN_CONV_NS:
        c = {i: get(res[i], "convergence", n) for i in IMPLS}
        out["convergence N=%d" % n] = {i: c[i]["converge_ms"].get("median") if c[i] else None for i in IMPLS}
        out["convergence N=%d" % n].update(floor=two_rt, burst=med("join%d" % n),
                                           burst_like=med("joinlike%d" % n))
    j = {i: res[i].get("join") for i in IMPLS}
    out["join"] = {i: j[i]["join_to_follower_ms"].get("median") if j[i] and j[i].get("samples_ms") else None
                   for i in IMPLS}
    out["join"]["floor"] = two_rt
    c = {i: res[i].get("crash") for i in IMPLS}
    out["crash"] = {i: c[i]["failover_ms"]["median"] if c[i] and c[i].get("samples_ms") else None for i in IMPLS}
    t = next((c[i]["negotiated_session_timeout_ms"] for i in IMPLS if c[i]), None)
    # ZooKeeper expires the session (after T, on its tick grid), then the
    # notification travels to the heir: half a round trip.
    out["crash"]["floor"] = t + ms if t else None
    out["crash"]["T"] = t
    # Each library's round trips beyond its own negotiated T (the servers
    # may grant the three different timeouts).
    out["crash"]["T_by"] = {i: c[i]["negotiated_session_timeout_ms"] for i in IMPLS if c[i]}
    # libzkelect's own (its crash guard, on by default, issue 37): once
    # nothing the dead process sent is unacknowledged (the drain: at once
    # here, where every link ends in the local proxy) the guard connects with
    # the session's credentials (a round trip: the floor's read RTT), its
    # closeSession reaches a server, is committed, and the notification
    # travels to the heir as a write's reply would (the floor's write RTT):
    # 2 RT + a commit. In geo a reconnect to a follower also waits for the
    # quorum's leader to revalidate the session (a round trip between
    # servers), which no floor here includes.
    out["crash guard"] = {"libzkelect": out["crash"]["libzkelect"], "curator": None, "kazoo": None,
                          "floor": two_rt, "T": 0}
    names = (("read", "read RTT (exists)"), ("write", "write RTT (setData)"), ("delete", "delete RTT"),
             ("watch", "delete -> watch fired in another session"),
             ("getchildren", "delete -> watch fired -> getChildren"))
    out["floor"] = {label: (med(k), p90(k)) for k, label in names}
    out["floor_by_server"] = {pl: {label: v[k] for k, label in names if k in v}
                              for pl, v in sorted(placements.items())}
    for n in WAN_FLOOR_NS:
        out["floor"]["burst of N = %d (create + getChildren, then exists on the predecessor)" % n] = (
            med("join%d" % n), p90("join%d" % n))
        if med("joinlike%d" % n) is not None:
            out["floor"]["burst of N = %d with libzkelect's requests (zkjoin --like-libzkelect)" % n] = (
                med("joinlike%d" % n), p90("joinlike%d" % n))
    return out


def rts(x, ms, minus=0):
    """x in round trips of the client link (2 x ms)."""
    return "-" if x is None else "%.1f" % ((x - minus) / (2.0 * ms))


WAN_ROWS = [
    ("graceful median", "graceful failover, N = %d, median: RESIGNED -> LEADER" % WAN_GRACEFUL_N,
     "delete -> watch fired"),
    ("graceful p90", "graceful failover, N = %d, p90" % WAN_GRACEFUL_N, "delete -> watch fired (p90)"),
    ("resign -> follower", "the resigned leader back in line, N = %d: RESIGNED -> its FOLLOWER"
     % WAN_GRACEFUL_N, "delete RTT + write RTT + read RTT"),
    ("convergence N=10", "convergence, N = 10: join -> 1 LEADER + 9 FOLLOWER", "write RTT + read RTT"),
    ("convergence N=50", "convergence, N = 50", "write RTT + read RTT"),
    ("join", "join of one candidate to an election of %d with a leader: join -> FOLLOWER" % WAN_JOIN_N,
     "write RTT + read RTT"),
    ("crash", "crash failover, N = 3, median: SIGKILL -> LEADER", "T + one way"),
    ("crash guard", "... libzkelect's with its crash guard (the default)", "read RTT + write RTT"),
]


def wan_section(R, ms, fig, geo, h):
    """One delay's tables and targets (h: the heading prefix)."""
    link = "client links +%d ms each way (client round trip +%d ms)" % (ms, 2 * ms)
    if geo:
        link += ", links between servers +%d ms each way (a commit +%d ms)" % (ms, 2 * ms)
    R.p("%s %s" % (h, link[0].upper() + link[1:]))
    R.p()
    R.p("Milliseconds (median unless said), and in round trips (RT) of the client link, "
        "figure / %d ms. The crash row counts the round trips beyond the negotiated session "
        "timeout T; ZooKeeper expires sessions on its %d ms tick grid, so that row spreads over "
        "a tick and its RT count means little over few trials. libzkelect's crash guard "
        "(crash.guard, on by default) closes the dead leader's session instead, once what the dead "
        "process sent is acknowledged (at most crash.guard.delay.ms, %d ms; at once here): the next "
        "row counts all its round trips." % (2 * ms, TICK_MS, guard_delay_ms()))
    R.p()
    rows = []
    for key, label, flabel in WAN_ROWS:
        v = fig[key]
        minus = v.get("T") or 0
        fl = v.get("floor")
        rts_row = [rts(v[i], ms, v.get("T_by", {}).get(i, minus)) for i in IMPLS]
        if key == "crash":
            rts_row[0] = "-"  # guarded: before T, counted in the next row
        rows.append([label, f(v["libzkelect"]), f(v["curator"]), f(v["kazoo"]),
                     "%s (%s)" % (f(fl), flabel), ratio(v["libzkelect"], fl), ratio(v["libzkelect"], v["curator"]),
                     ratio(v["libzkelect"], v["kazoo"])]
                    + rts_row + [rts(fl, ms, minus)])
        if key.startswith("convergence"):
            b = v.get("burst")
            rows.append(["... the bare C client's burst (same N)", "-", "-", "-", f(b),
                         ratio(v["libzkelect"], b), "-", "-", "-", "-", "-", rts(b, ms)])
            bl = v.get("burst_like")
            if bl is not None:
                rows.append(["... the same burst with libzkelect's requests (5-7 per contender, not 2-3)",
                             "-", "-", "-", f(bl), ratio(v["libzkelect"], bl), "-", "-", "-", "-", "-",
                             rts(bl, ms)])
    R.table(["measure", "libzkelect", "Curator", "kazoo", "floor", "libzkelect/floor", "libzkelect/Curator",
             "libzkelect/kazoo", "RT libzkelect", "RT Curator", "RT kazoo", "RT floor"], rows)
    lost = fig.get("graceful lost", {})
    if any(lost.get(i) for i in IMPLS):
        R.p("**Leaders that gave up unasked (LOST) during the graceful rotation:** %s. Each left the "
            "election without a leader until it or another led again; the next trial waited for that."
            % ", ".join("%s %s" % (i, "-" if lost.get(i) is None else lost[i]) for i in IMPLS))
        R.p()
    R.p("What FOLLOWER marks differs (the participants print what each library lets them see): "
        "libzkelect's comes once the watch on the predecessor is set (create + listing, then the "
        "read that sets the watch); kazoo's once a listing shows a predecessor, before its watch is "
        "set (after kazoo's exists on the path, its create and the listing); Curator's once its "
        "node's name is known (its create has returned; it has not listed or watched yet): Curator's join and "
        "convergence rows stop earlier in its recipe than the others'.")
    R.p()
    R.p("Floors: the ZooKeeper C client through the same proxies, both of its sessions through one "
        "server, once per server (a write that reaches a follower is forwarded to the quorum's leader); "
        "the floor is the median over the servers. The bursts spread their sessions over the servers "
        "as the participants do. Median / p90 ms, and the median in RT:")
    R.p()
    byserver = list(fig.get("floor_by_server", {}).items())
    R.table(["measure", "floor (median over the servers)", "RT"] + [pl for pl, _ in byserver],
            [[k, "%s / %s" % (f(m, 2), f(p, 2)), rts(m, ms)]
             + ["%s / %s" % (f(v[k][0], 2), f(v[k][1], 2)) if k in v else "-" for _, v in byserver]
             for k, (m, p) in fig["floor"].items()])

    g, c10, c50, j = (fig[k] for k in ("graceful median", "convergence N=10", "convergence N=50", "join"))
    out = []

    def target(ok, text):
        out.append("- **%s** (+%d ms): %s" % ("MET" if ok else ("NOT MET" if ok is False else "NOT MEASURED"),
                                               ms, text))
    L = lambda v: v["libzkelect"]
    ok = None if None in (L(g), g["floor"], g["kazoo"]) else L(g) <= 1.1 * g["floor"] and L(g) <= 0.55 * g["kazoo"]
    target(ok, "graceful median <= 1.1 x the floor and <= 0.55 x kazoo's: %s ms, floor %s ms (x%s), kazoo %s ms "
           "(x%s)" % (f(L(g)), f(g["floor"]), ratio(L(g), g["floor"]), f(g["kazoo"]), ratio(L(g), g["kazoo"])))
    for n, cv in ((10, c10), (50, c50)):
        ok = None if None in (L(cv), cv["floor"], cv["kazoo"]) else \
            L(cv) <= 1.2 * cv["floor"] and L(cv) <= 0.4 * cv["kazoo"]
        target(ok, "convergence N=%d <= 1.2 x the recipe's floor (write RTT + read RTT) and <= 0.4 x kazoo's: "
               "%s ms, floor %s ms (x%s), the C client's burst %s ms (x%s)%s, kazoo %s ms (x%s)"
               % (n, f(L(cv)), f(cv["floor"]), ratio(L(cv), cv["floor"]), f(cv["burst"]),
                  ratio(L(cv), cv["burst"]),
                  "" if cv.get("burst_like") is None else ", with libzkelect's requests %s ms (x%s)"
                  % (f(cv["burst_like"]), ratio(L(cv), cv["burst_like"])),
                  f(cv["kazoo"]), ratio(L(cv), cv["kazoo"])))
    # Two round trips, one of them a write: the floor's write RTT + read RTT.
    ok = None if None in (L(j), j["floor"]) else L(j) <= 1.1 * j["floor"]
    target(ok, "join -> FOLLOWER within two round trips (the floor's write RTT + read RTT = %s ms, "
           "+10%%): %s ms (%s RT)" % (f(j["floor"]), f(L(j)), rts(L(j), ms)))
    # Issue 37: 2 round trips + a commit, i.e. the floor's read RTT + write
    # RTT (whose commit is a round trip between servers in geo mode, next to
    # nothing on loopback), +20 ms for the scheduling the loopback target
    # allows too. The drain ends at once on this bed.
    cg = fig["crash guard"]
    bound = None if cg["floor"] is None else cg["floor"] + 20
    ok = None if L(cg) is None or bound is None else L(cg) <= bound
    target(ok, "crash with libzkelect's crash guard: a new leader within 2 round trips + "
           "a commit (the floor's read RTT + write RTT, +20 ms), %s ms: %s ms (%s RT)"
           % (f(bound, 0), f(L(cg), 0), rts(L(cg), ms)))
    return out


def write_wan_report(raw, outdir):
    meta = json.load(open(os.path.join(raw, "meta.json")))
    geo = meta.get("mode") == "geo"
    stamp = os.path.basename(raw.rstrip("/"))
    figs = {}
    for ms in meta["delays_ms"]:
        sub = os.path.join(raw, "wan%d" % ms)
        res, _, _ = load_raw(sub)
        figs[ms] = wan_figures(res, wan_floors(sub), ms)
    with open(os.path.join(raw, "wan.json"), "w") as fh:
        json.dump({str(k): v for k, v in figs.items()}, fh, indent=1)

    def body(h):
        R = Report()
        opt = "--%s %s" % (meta["mode"], ",".join(str(x) for x in meta["delays_ms"]))
        R.p("Generated by `./dev bench %s%s` (bench/run.py) from %s: the 3-server ensemble of the "
            "loopback bench (tickTime %d ms), every client connection (the participants of all three "
            "libraries and the C client floors) through one fault proxy per server "
            "(tests/bed/faultproxy.py) that holds every byte the given time each way%s. Same driver "
            "options for every library, in one run; shared 2-core machine, so only ratios inside the "
            "run mean much."
            % (opt, " --quick" if meta.get("quick") else "", raw_ref(stamp), TICK_MS,
               "; the links between the servers are held as long (a quorum spread over distant sites)"
               if geo else ""))
        R.p()
        R.table(["item", "value"], run_rows(meta) + [["session timeout", "2000 ms requested"]])
        if meta.get("failures"):
            R.p("**Failures in this run:** " + "; ".join(meta["failures"]) + " (see `raw/%s/run.log`)." % stamp)
            R.p()
        targets, sections = [], []
        for ms in meta["delays_ms"]:
            S = Report()
            targets += wan_section(S, ms, figs[ms], geo, h + "#")
            sections += S.lines
        R.p("%s# Targets (issue 31)" % h)
        R.p()
        R.lines += targets
        R.p()
        R.lines += sections
        return R, targets

    R, targets = body("#")
    title = "libzkelect %s benchmark: %s%s" % ("geo" if geo else "WAN", stamp,
                                               " (quick smoke run: fewer trials)" if meta.get("quick") else "")
    text = "# %s\n\n" % title + "\n".join(R.lines) + "\n"
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, stamp + ".md"), "w") as fh:
        fh.write(text)
    # In LATEST.md, one section per mode, after the loopback report.
    R2, _ = body("##")
    block = "## %s (`%s.md`)\n\n" % (title, stamp) + "\n".join(R2.lines) + "\n"
    update_latest(outdir, wan={meta["mode"]: block})
    log("report: %s (and its section of LATEST.md)" % os.path.join(outdir, stamp + ".md"))
    print("\n".join(targets))


WAN_MODES = ("wan", "geo")
SECURE = "secure"
# LATEST.md's sections between markers: each WAN mode's, the operations
# group's, the secure ensemble's, the fenced part's, the balance part's.
SECTIONS = WAN_MODES + (OPS_GROUP, SECURE, FENCED, BALANCE)


def run_secure(a):
    """`--secure`: bench/secure_cost.py (connect, join, graceful and crash
    failover over plain TCP, TLS, and TLS with SASL, on one ensemble that
    offers both), its samples in raw/STAMP/secure.json, and the report."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    raw = os.path.join(a.out, "raw", stamp)
    os.makedirs(raw, exist_ok=True)
    repeats = 3 if a.quick else 7
    meta = {"mode": SECURE, "commit": git_describe(), "started": time.strftime("%Y-%m-%dT%H:%M:%S+00:00",
                                                                           time.gmtime()),
            "load_start": os.getloadavg(), "quick": a.quick}
    t0 = time.monotonic()
    rc = run_logged([sys.executable, os.path.join(HERE, "secure_cost.py"), "--build", os.path.abspath(a.build),
                     "--repeats", str(repeats), "--json", os.path.join(raw, "secure.json")],
                    os.path.join(raw, "secure.log"), 1800)
    meta.update(elapsed_s=round(time.monotonic() - t0), load_end=os.getloadavg())
    with open(os.path.join(raw, "meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    if rc != 0:
        sys.exit("bench: secure_cost.py exited %d (its log: %s)" % (rc, os.path.join(raw, "secure.log")))
    write_secure_report(raw, a.out)


def write_secure_report(raw, outdir):
    meta = json.load(open(os.path.join(raw, "meta.json")))
    d = json.load(open(os.path.join(raw, "secure.json")))
    stamp = os.path.basename(raw.rstrip("/"))
    plain = list(d["modes"])[0]

    def body(h):
        R = Report()
        R.p("Generated by `./dev bench --secure%s` (bench/run.py, bench/secure_cost.py) from %s: "
            "three `zkelect candidate` processes on one 3-server ensemble that offers a plain and a TLS "
            "port and takes SASL (DIGEST-MD5) without requiring it, so every mode runs against the same "
            "servers, interleaved, %d times; T = %d ms. Commit `%s`, started %s, %d s, load average %s at "
            "the start. Connect includes the library's own TLS handshake before the session's and the SASL "
            "exchange; crash is a SIGKILL of the leader's process -> the next LEADER (the crash guard "
            "cannot reconnect over TLS nor close a session of a server that requires SASL: there T "
            "bounds it)." % (" --quick" if meta.get("quick") else "", raw_ref(stamp), d["repeats"], d["session_ms"],
                              meta["commit"], meta["started"], meta["elapsed_s"],
                              " ".join("%.1f" % x for x in meta["load_start"])))
        R.p()
        rows = []
        for m, samples in d["modes"].items():
            cols = list(zip(*samples))
            base = list(zip(*d["modes"][plain]))
            row = [m]
            for k, c in enumerate(cols):
                med_c = statistics.median(c)
                row.append("%s / %s" % (f(med_c), f(max(c))))
                if k < 3:
                    row.append(ratio(med_c, statistics.median(base[k])))
            rows.append(row)
        R.table(["mode", "connect ms (median / max)", "x plain", "join ms", "x plain", "graceful failover ms",
                 "x plain", "crash failover ms"], rows)
        return R

    title = "libzkelect over TLS and SASL: %s" % stamp
    R = body("#")
    with open(os.path.join(outdir, stamp + ".md"), "w") as fh:
        fh.write("# %s\n\n" % title + "\n".join(R.lines) + "\n")
    block = "## %s (`%s.md`)\n\n" % (title, stamp) + "\n".join(body("##").lines) + "\n"
    update_latest(outdir, secure=block)
    log("report: %s (and its section of LATEST.md)" % os.path.join(outdir, stamp + ".md"))


def update_latest(outdir, loopback=None, wan=None, ops=None, secure=None, fenced=None, balance=None):
    """Rewrite LATEST.md: the loopback report (given, or the one there) and
    one section per WAN mode, one of the operations group, one of the secure
    run, one of the fenced part and one of the balance part (each given, or
    the one there), each
    between markers so the next run of any kind can keep
    the others'."""
    path = os.path.join(outdir, "LATEST.md")
    old = open(path).read() if os.path.exists(path) else ""
    blocks = {}
    for mode in SECTIONS:
        m = re.search(r"\n?<!-- bench:%s begin -->\n(.*?)<!-- bench:%s end -->\n" % (mode, mode), old, re.S)
        if m:
            blocks[mode] = m.group(1)
            old = old[:m.start()] + old[m.end():]
    base = loopback if loopback is not None else old
    blocks.update(wan or {})
    if ops is not None:
        blocks[OPS_GROUP] = ops
    if secure is not None:
        blocks[SECURE] = secure
    if fenced is not None:
        blocks[FENCED] = fenced
    if balance is not None:
        blocks[BALANCE] = balance
    text = base
    for mode in SECTIONS:
        if mode in blocks:
            text += "\n<!-- bench:%s begin -->\n%s<!-- bench:%s end -->\n" % (mode, blocks[mode], mode)
    with open(path, "w") as fh:
        fh.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="meson build dir holding tools/zkelect and capi/libzkelect.so")
    ap.add_argument("--quick", action="store_true", help="fewer trials: a smoke run of a few minutes")
    ap.add_argument("--only", help="comma list of: " + ",".join(PARTS)
                    + "; with --wan/--geo: " + ",".join(IMPLS + ["floor"]))
    ap.add_argument("--groups", help="comma list of the groups to run (default all): "
                    + ",".join(name for name, _ in driver_groups(False)) + "," + OPS_GROUP
                    + "; with --wan/--geo: " + ",".join(name for name, _ in wan_groups(False)))
    ap.add_argument("--connect", help="use this running ensemble instead of starting one (its "
                    "servers must answer the four-letter words mntr, wchs and wchp)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--scale-candidacies", type=int, default=10000)
    ap.add_argument("--scale-sessions", type=int, default=100)
    ap.add_argument("--scale-sets", help="the scale part's sets to run, comma list of: %s (default all)"
                    % ",".join(SCALE_SETS))
    ap.add_argument("--handover-repeats", type=int, default=HANDOVER_REPEATS,
                    help="repeats of each handover run of the scale part (default %d)" % HANDOVER_REPEATS)
    ap.add_argument("--handover-es", metavar="E[,E...]",
                    help="the handover runs' numbers of elections (default %s, and %d with --shards-100k)"
                    % (",".join(str(e) for e in HANDOVER_ES), SHARD_BIG))
    ap.add_argument("--handover-sessions", metavar="S[,S...]",
                    help="the handover runs' numbers of sessions per process (default %s; %d only at E = %d)"
                    % (",".join(str(x) for x in HANDOVER_SESSIONS), HANDOVER_SESSIONS[0], SHARD_BIG))
    ap.add_argument("--handover-modes", metavar="MODE[,MODE...]",
                    help="the handover runs' modes (default all: %s)" % ",".join(HANDOVER_MODES))
    ap.add_argument("--zk-heap", default="256m",
                    help="each bench server's Java heap (default 256m; the scale part's 100,000 elections "
                         "with a standby need more: 1g)")
    ap.add_argument("--shards-100k", action="store_true",
                    help="the scale part also runs 100,000 elections on one session (minutes; the "
                         "handover runs there want --zk-heap 1g)")
    ap.add_argument("--idle-100k", action="store_true",
                    help="the idle part also holds %d elections per session, libzkelect only "
                         "(leader, heir and third: %d nodes; with --zk-heap 1g)" % (SHARD_BIG, 3 * SHARD_BIG))
    ap.add_argument("--wan", metavar="MS[,MS...]",
                    help="the WAN bench: every client link delayed MS each way, for each MS")
    ap.add_argument("--geo", metavar="MS[,MS...]",
                    help="the WAN bench with the links between servers delayed MS each way too")
    ap.add_argument("--upgrade", action="store_true",
                    help="the %s group also runs a rolling upgrade from Debian's 3.8 to the newest %s"
                    % (OPS_GROUP, UPGRADE_TO))
    ap.add_argument("--secure", action="store_true",
                    help="connect, join, graceful and crash failover over plain TCP, TLS and TLS + SASL "
                         "(bench/secure_cost.py; issue 36)")
    ap.add_argument("--report-only", metavar="RAW_DIR", help="rewrite the report from a raw results folder")
    a = ap.parse_args()
    if a.report_only:
        raw = os.path.abspath(a.report_only)
        mp = os.path.join(raw, "meta.json")
        if os.path.exists(mp) and json.load(open(mp)).get("mode") in WAN_MODES:
            write_wan_report(raw, a.out)
        elif os.path.exists(mp) and json.load(open(mp)).get("mode") == SECURE:
            write_secure_report(raw, a.out)
        else:
            write_report(raw, a.out)
        return
    if not a.build:
        ap.error("--build is required")
    if a.wan and a.geo:
        ap.error("--wan and --geo are two runs: give one")
    if a.upgrade and (a.wan or a.geo):
        ap.error("--upgrade belongs to the loopback bench's %s group" % OPS_GROUP)
    if a.connect and (a.wan or a.geo):
        ap.error("--wan/--geo start their own ensemble (not --connect)")
    if a.secure and (a.wan or a.geo or a.connect):
        ap.error("--secure starts its own ensemble, alone")
    if a.wan or a.geo:
        run_wan(a)
    elif a.secure:
        run_secure(a)
    else:
        run_all(a)


if __name__ == "__main__":
    main()

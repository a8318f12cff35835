#!/usr/bin/python3
"""The explorer over real processes (issue 29): seeded fault schedules against
real candidate processes on a real 3-server ensemble, and a checker over what
the processes saw.

A run is made from a seed alone: random.Random(seed) writes a schedule (a list
of timed steps: link, process, server, operator and user actions) before
anything starts; the run carries it out against P participant processes
(explore_part.c), each with C clients (one session and one fault-proxy link
each) holding one candidacy on each of E shared election paths. After the
schedule, every fault is healed, every candidacy volunteers, and the run waits
(bounded) for one leader per path. The participants then stop and the checker
reads their merged history:

  safety   no two handles answer is_leader 1 for one path at one instant
           (runs of 1 on CLOCK_MONOTONIC, stamps taken around the calls, as
           tests/fault/inproc.py merges them); fencing tokens strictly
           increase from term to term of a path; RESIGNED only once no node
           of the candidacy is left (the path is listed when RESIGNED is
           read); ELECTED and DEPOSED alternate per handle
  liveness within LIVENESS_S of the heal, every path has exactly one handle
           answering 1, it owns the path's first node, every live candidacy
           has exactly one node and no node is left that no live candidacy
           owns

Every step is logged; a failure prints the seed and the schedule; --seed
replays it (the same schedule; real processes and real time, so a replay
reaches the same interleaving often, not always). On a violation the
schedule is shrunk (steps dropped while the run still fails the same way,
within --shrink-minutes) and the shortest is written to explore/real/cases/
(replayed by tests/explore/test_explore.py).

    explore.py [--seed S] [--minutes M | --runs N] [--workers W] [--build DIR]
               [--duration R] [--case FILE] [--shrink-minutes K] [--json OUT]

The build (--build, default $ZKELECT_BUILD_DIR or build/) supplies
libzkelect.so.1 (LD_LIBRARY_PATH) and the header the participant program is
compiled against (pkg-config of its meson-uninstalled directory).
"""

from __future__ import annotations

import argparse
import heapq
import json
import logging
import multiprocessing
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

from bed.faultproxy import ProxiedEnsemble
from bed.lines import LinePump
from bed.zkbed import Ensemble

T_MS = 1500
P, C, E = 3, 2, 3
DURATION_S = 45.0
LIVENESS_S = 4 * T_MS / 1000 + 20   # after the heal (servers back and serving)
# Deleting a leader's node by hand is outside the guarantee (docs/semantics.md):
# the old leader learns of it from its own-node watch, or at the latest when
# its lease (T/2 - T/20) runs out without a keepalive that saw the node, while
# the heir may claim at once. Two leaders within this long after an operator
# deleted one of their nodes (or the path) are excused; longer is a violation.
# A non-blocking call may still wait for the scheduler on a loaded machine.
CALL_SLACK_NS = 2_000_000_000
# After the heal every destroy is quick; a participant that has not said BYE
# this long after quit is stuck, and gdb takes its stacks (at most this long).
QUIT_S = 15
GDB_TIMEOUT_S = 30
# No documented call lasts this long (an outside transfer's bound is its
# timeout plus 3 T): a command begun this long before the end of the calm,
# stops of its process not counted, is a call that does not return.
STUCK_S = (T_MS + 4 * T_MS) / 1000 + 10
EXCUSE_NS = int((T_MS / 2 + 250) * 1e6)
# In a deletion's ids: the operator deleted whatever node was there (a
# recursive delete of the path lists it itself).
ANY_NODE = "*"
DROP_OPS = ["create", "getChildren", "getData", "exists", "multi", "delete", "sync"]
CANDIDATE = re.compile(r"^_c_[0-9a-f-]{36}-latch-\d{10}$")
CROWD = "crowd-"          # the `crowd` step's children (crowd-latch-N are candidates)
CROWD_BATCH = 1000        # creates or deletes in one multi: well under 1 MB
CROWD_MAX = 20000         # children of crowds on one path at a time

# Step kinds and their weights in a schedule. A kind's parameters are drawn
# when the schedule is written, so the schedule alone replays the run.
KINDS = {
    "drop": 14,        # link: drop the reply to the next request of an opcode
    "reset": 4,        # link: RST every connection
    "blackhole": 4,    # link: partition for 0.1-2 T
    "delay": 2,        # link: delay + jitter for a while
    "pstop": 2,        # process: SIGSTOP for 0.1-2 T
    "pkill": 1,        # process: SIGKILL, restart
    "skill": 0.5,      # server: kill, restart
    "sstop": 0.5,      # server: SIGSTOP for 0.1-2 T
    "odel": 6,         # operator: delete a candidate node
    "opath": 0.5,      # operator: delete the election path
    "foreign": 1,      # operator: a foreign child
    "crowd": 2,        # operator: thousands of children on a path for a while
    "acl": 1,          # operator: ACL of the path or a node, restored later
    "vol": 6,          # user
    "res": 4,
    "resleader": 6,    # user: the current leader of a path resigns
    "resall": 1.5,     # user: every candidacy of a path resigns, the leader first
    "resstop": 1.5,    # user: as resall while one process is stopped; its own resigns as it resumes
    "des": 1.5,
    "cbres": 1,        # user: resign from inside the next ELECTED callback
    "dcl": 0.5,        # user: destroy a client with its elections, a new one later
    "cbdes": 1,        # user: a callback dispatches (nested), then destroys its own handle
    "fork": 1,         # user: the process forks; the child asks its copies is_leader
    "logstall": 1,     # user: the log callback sleeps (and calls the library) for a while
    "shrink": 1,       # server: the next reconnect of a link is granted less than T
    "zero": 0.5,       # server: the next reconnect is answered with the live id, timeout 0
    "sclose": 1,       # operator: another client closes a participant's session
    "xfer": 2,         # user: the leader of a path transfers to another of its candidates
    "oxfer": 1,        # user: a client asks the leader of a path from outside to transfer
}
# Issue 50's steps, drawn from a generator of their own (make_schedule) so
# that every older seed keeps the schedule it had, with these added:
#   ddis  a link goes dark (0.3-2 T) and, a moment into it, its process
#         destroys one of the link's handles, or resigns it and volunteers
#         again at once (a requeue), while it cannot reach ZooKeeper;
#   xdis  a client of another process asks path e's leader from outside for
#         a transfer (timeout T); 50-300 ms later the leader's link goes
#         dark for T plus 0.3-2 T, so the transfer's deadline meets the cut;
#         just after the deadline the leader is destroyed or requeued
#         (finding 1's route: the hand-over waiting for a session).
#   aclp  READ alone, or DELETE alone, off the election path for 0.2-2 T.
EXTRA_KINDS = {"ddis": 2, "xdis": 2, "aclp": 2}   # steps per 45 s, on average
# Issue 54's step, from a generator of its own as well:
#   fwrite  every handle that answers 1 makes n (1-3) fenced writes to its
#           path's data node PATH.fdata, each with a record node
#           PATH.flog/w-<token>-... in the same batch; the checker orders
#           the records by czxid: no term's write after a later term's.
FENCED_KINDS = {"fwrite": 30}                     # steps per 45 s, on average
# Issue 54's PostgreSQL step (the shipped guard, fencing/fencing.sql), from a
# generator of its own too:
#   pgwrite  every handle that answers 1 makes n (1-3) writes to the run's
#            PostgreSQL server, a transaction each: zkelect.fence(PATH,
#            token), then a record row; the checker orders the rows of a
#            path by their id (commit order under the fence's row lock). A
#            third of the time one process that leads a path is stopped
#            (SIGSTOP, 1.5-2.5 T) inside its first write, after reading its
#            token or after its fence call, while the other processes'
#            leaders write every 0.3 s from T on (its sessions expire, new
#            leaders are elected and write); resumed, it finishes that write
#            late: the fence must refuse it, or make the next term wait.
PG_KINDS = {"pgwrite": 12}                        # steps per 45 s, on average
BALANCE_KINDS = {"balanced": 1}                   # a world, not a step: one run in three
# What a fenced write may answer: committed (OK), refused with nothing
# committed (the rest of FENCED_REFUSED), or unknown (FENCED_UNKNOWN).
FENCED_REFUSED = {"ZKELECT_EFENCED", "ZKELECT_ENOTLEADER", "ZKELECT_EZK", "ZKELECT_EAUTH"}
FENCED_UNKNOWN = {"ZKELECT_ECONNLOSS", "ZKELECT_ESESSION_EXPIRED", "ZKELECT_ETIMEDOUT",
                  "ZKELECT_ECLOSED"}
# The PostgreSQL writes' records (one table per explorer process). The id is
# taken by the INSERT, after zkelect.fence() in the same transaction: the
# fence holds its resource's row lock (the INSERT ... ON CONFLICT's) until
# the transaction ends, so a later transaction of the same path takes its id
# only after an earlier one committed or rolled back, and the ids of one
# path's committed rows are their commit order.
PG_TABLE = """CREATE TABLE explore_pg (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    path     text   NOT NULL,
    token    bigint NOT NULL,
    part     text   NOT NULL,
    client   int    NOT NULL,
    election int    NOT NULL,
    handle   int    NOT NULL,
    wid      text   NOT NULL UNIQUE);
CREATE INDEX explore_pg_path ON explore_pg (path, id);"""
# --pg-unfenced: the guard with its check taken out (as
# tests/fencing/test_postgresql.py's NO_CHECK): every token passes and no
# row lock is held, so a late write lands and the checker must say so.
PG_NO_CHECK = """CREATE OR REPLACE FUNCTION zkelect.fence(p_resource text, p_token bigint)
RETURNS bigint LANGUAGE sql AS $$ SELECT p_token $$;"""
# A participant's PG line (explore_part.c, pgall), parsed whole.
PG_LINE = re.compile(r"PG ([0-7]) ([0-7]) (\d{1,9}) (-?\d{1,19}) ([A-Za-z0-9.-]{1,100}) "
                     r"(OK|ZKE01|UNKNOWN|LOST|NOCONN|NONE|ERR-[A-Za-z0-9]{1,8}) (\d{1,19}) "
                     r"(\d{1,19}) (-|tok|fence)")
# Not committed, by what the participant saw: refused by the fence, or
# failed before COMMIT was sent (the server rolls such a transaction back).
PG_REFUSED = re.compile(r"ZKE01|LOST|ERR-[A-Za-z0-9]+")
# A transfer's timeout (zkelect_transfer, zkelect_client_transfer): short, so
# that it often runs out under the faults and hands over to whoever is next.
XFER_MS = T_MS
# What a transfer may answer among the faults (zkelect.h). ENOTSUP is not
# here: every candidate of the explorer steps back; EINVAL neither: the
# target is never the caller itself.
XFER_CODES = {"OK", "ZKELECT_ETIMEDOUT", "ZKELECT_ETARGET_LOST", "ZKELECT_ENOCANDIDATE",
              "ZKELECT_ENOTLEADER", "ZKELECT_ENOLEADER", "ZKELECT_EAUTH", "ZKELECT_ECONNLOSS",
              "ZKELECT_EZK", "ZKELECT_ESTATE", "ZKELECT_ECLOSED", "NONE"}
# Not ZKELECT_ESESSION_EXPIRED: an asker whose session expired (seed
# 870324552: an oxfer while its session was closed from outside) answers
# ECONNLOSS before its request is written and waits on with its next
# session after.

# The second safety review's findings (issue 27) and the steps whose
# interleaving reaches each: a schedule that holds them in this order (on one
# participant where the steps name one) can meet the finding again, and
# test_explore.py checks that short runs draw every one of them.
FINDINGS = {
    1: ("own-node watch lost, node deleted", ["drop", "odel"]),
    2: ("shorter timeout on reconnect, process paused", ["shrink"]),
    3: ("nested dispatch, destroy from a callback", ["cbdes"]),
    4: ("errors on a live connection (ACL)", ["acl"]),
    5: ("resign refused by the ACL", ["acl", "res"]),
    6: ("reconnect answered with timeout 0", ["zero"]),
    7: ("liveness while ZooKeeper's thread is stuck", ["logstall", "blackhole"]),
    8: ("user code on ZooKeeper's threads (log)", ["logstall"]),
    9: ("a server that grants T below 2 x tickTime", None),
    10: ("session closed from outside", ["sclose"]),
    11: ("a forked child answers 1", ["fork"]),
    12: ("callbacks that destroy handles; fail() while leading", ["cbdes", "des"]),
}
# Not in the explorer, and why: 9 is the ensemble's configuration (the
# explorer's servers keep one tickTime); tests/integration/test_ticktime.py
# runs servers with a low minSessionTimeout.


def log(*a):
    print(*a, flush=True)


# -- the schedule --------------------------------------------------------------

def make_schedule(seed, duration=DURATION_S, kinds=None):
    rng = random.Random(seed)
    kinds = kinds or {**KINDS, **EXTRA_KINDS, **FENCED_KINDS, **PG_KINDS, **BALANCE_KINDS}
    names = [k for k in kinds if k in KINDS]
    weights = [kinds[k] for k in names]
    T = T_MS / 1000
    steps = []
    t = rng.uniform(0.0, 1.0)
    busy_link, busy_proc, busy_server = {}, {}, [0.0]
    while t < duration:
        k = rng.choices(names, weights)[0]
        p, c, e = rng.randrange(P), rng.randrange(C), rng.randrange(E)
        s = {"t": round(t, 3), "kind": k}
        if k == "drop":
            s.update(p=p, c=c, op=rng.choice(DROP_OPS), then=rng.choice([None, "reset"]),
                     match=rng.choice([None, e]))
        elif k == "reset":
            s.update(p=p, c=c)
        elif k in ("blackhole", "delay"):
            if busy_link.get((p, c), 0) > t:
                k = s["kind"] = "reset"
                s.update(p=p, c=c)
            else:
                dur = rng.uniform(0.1, 2.0) * T if k == "blackhole" else rng.uniform(0.5, 3) * T
                s.update(p=p, c=c, dur=round(dur, 3))
                if k == "blackhole":
                    s["discard"] = rng.random() < 0.5
                else:
                    s.update(ms=rng.randrange(5, 200), jitter=rng.randrange(0, 100))
                busy_link[(p, c)] = t + dur
        elif k in ("pstop", "pkill"):
            if busy_proc.get(p, 0) > t:
                t += rng.expovariate(4.0)
                continue
            dur = rng.uniform(0.1, 2.0) * T if k == "pstop" else rng.uniform(0.2, 1.0)
            s.update(p=p, dur=round(dur, 3))
            busy_proc[p] = t + dur + (3.0 if k == "pkill" else 0)
        elif k in ("skill", "sstop"):
            if busy_server[0] > t:
                t += rng.expovariate(4.0)
                continue
            dur = rng.uniform(1.0, 4.0) if k == "skill" else rng.uniform(0.1, 2.0) * T
            s.update(i=rng.randrange(3), dur=round(dur, 3))
            busy_server[0] = t + dur + (10.0 if k == "skill" else 0.5)
        elif k == "odel":
            s.update(e=e, pick=rng.choice(["leader", "any", "any"]), r=rng.random())
        elif k in ("opath", "foreign"):
            s.update(e=e)
        elif k == "crowd":
            # Every listing of the path is then long work in each client's
            # loop (its names parsed; with latch, sorted as candidates):
            # what arrives meanwhile waits, which widens the windows between
            # an event's arrival and its handling (the resign race of
            # e3e86e2 is one: a listing that makes its candidacy first ends
            # in a claim, and a resign during it was undone). With latch the
            # children are candidates of another library, behind the line:
            # who volunteers meanwhile queues behind them until they go.
            # At most 20,000 on a path (CROWD_MAX, with the crowds already
            # there): a listing stays under ZooKeeper's 1 MB.
            s.update(e=e, n=rng.randrange(2000, 20001), latch=rng.random() < 0.5,
                     dur=round(rng.uniform(1.0, 3.0) * T, 3))
        elif k == "acl":
            s.update(e=e, on=rng.choice(["path", "node"]), r=rng.random(),
                     dur=round(rng.uniform(0.2, 2.0) * T, 3))
        elif k in ("vol", "res", "des", "cbres"):
            s.update(p=p, c=c, e=e)
        elif k == "resleader":
            s.update(e=e, back=round(rng.uniform(0.2, 1.5), 3))
        elif k == "xfer":
            s.update(e=e, r=rng.random())
        elif k == "oxfer":
            s.update(p=p, c=c, e=e, r=rng.random())
        elif k == "resall":
            s.update(e=e, order=rng.randrange(1 << 30), gap_ms=round(rng.uniform(0, 8), 2),
                     back=round(rng.uniform(0.2, 1.5), 3))
        elif k == "resstop":
            if busy_proc.get(p, 0) > t:
                t += rng.expovariate(4.0)
                continue
            # hold_ms: long enough for the others' deletes to commit and
            # their watch events to wait in the stopped process's socket;
            # after_ms: its resigns come that long after its SIGCONT, while
            # those events are still on their way to its loop (at e3e86e2,
            # on a loaded two-core machine, an heir's ELECTED came about
            # 0.4 ms plus the command's own way after the SIGCONT); half
            # the time 1.2-12 ms, while a listing it asked for on resuming
            # comes back and its loop works on it (a crowded path's: the
            # claim that ends it is where e3e86e2's race was met).
            after = rng.uniform(0, 1.2) if rng.random() < 0.5 else rng.uniform(1.2, 12)
            s.update(p=p, e=e, order=rng.randrange(1 << 30), gap_ms=round(rng.uniform(0, 4), 2),
                     hold_ms=rng.randrange(20, 150), after_ms=round(after, 2),
                     back=round(rng.uniform(0.2, 1.5), 3))
            busy_proc[p] = t + 0.5
        elif k == "dcl":
            s.update(p=p, c=c, back=round(rng.uniform(0.2, 2.0), 3))
        elif k == "cbdes":
            s.update(p=p, c=c, e=e)
        elif k == "fork":
            s.update(p=p)
        elif k == "logstall":
            s.update(p=p, ms=rng.randrange(50, 2 * T_MS))
        elif k in ("shrink", "zero", "sclose"):
            if busy_link.get((p, c), 0) > t:
                t += rng.expovariate(4.0)
                continue
            s.update(p=p, c=c)
            if k == "shrink":
                # The server now grants f x T (ZooKeeper raises it to its
                # 2 x tickTime minimum). A third of the time the process is
                # stopped, a third of the time the link cut, as soon as that
                # handshake went by: before the loop handles CONNECTED
                # (finding 2's window), or before the next keepalive reaches
                # the quorum, while the lease earned under T runs on.
                cut = rng.choice([None, "stop", "blackhole"])
                dur = round(rng.uniform(0.3, 1.5) * T, 3)
                if cut == "stop" and busy_proc.get(p, 0) > t:
                    cut = None
                # Half the time near the floor: the shorter T', the earlier
                # the quorum expires a session whose lease was earned under T.
                f = rng.uniform(0.2, 0.3) if rng.random() < 0.5 else rng.uniform(0.3, 0.8)
                s.update(f=round(f, 3), cut=cut, dur=dur if cut else 0)
                if cut == "stop":
                    busy_proc[p] = t + 3 + dur
                elif cut == "blackhole":
                    busy_link[(p, c)] = t + 1.0 + dur
            busy_link[(p, c)] = max(busy_link.get((p, c), 0), t + 1.0)
        steps.append(s)
        t += rng.expovariate(4.0)
    extra = random.Random(f"issue50-{seed}")
    T = T_MS / 1000
    for k, per45 in EXTRA_KINDS.items():
        if k not in kinds:
            continue
        for _ in range(extra.randrange(0, 2 * per45 + 1) if duration >= 20 else 0):
            s = {"t": round(extra.uniform(1.0, max(1.5, duration - 3)), 3), "kind": k,
                 "p": extra.randrange(P), "c": extra.randrange(C), "e": extra.randrange(E),
                 "dur": round(extra.uniform(0.3, 2.0) * T, 3), "requeue": extra.random() < 0.5,
                 "at": round(extra.uniform(0.05, 0.3), 3)}
            if k == "aclp":
                s = {"t": s["t"], "kind": k, "e": s["e"], "on": "path",
                     "only": extra.choice(["read", "delete"]), "r": 0.0,
                     "dur": round(extra.uniform(0.2, 2.0) * T, 3)}
            steps.append(s)
    fenced = random.Random(f"issue54-{seed}")
    for k, per45 in FENCED_KINDS.items():
        if k not in kinds:
            continue
        for _ in range(round(fenced.uniform(0.5, 1.5) * per45 * duration / 45)):
            steps.append({"t": round(fenced.uniform(0.5, max(1.0, duration - 1)), 3), "kind": k,
                          "n": fenced.randrange(1, 4)})
    pgr = random.Random(f"issue54-pg-{seed}")
    for k, per45 in PG_KINDS.items():
        if k not in kinds:
            continue
        for _ in range(round(pgr.uniform(0.5, 1.5) * per45 * duration / 45)):
            s = {"t": round(pgr.uniform(0.5, max(1.0, duration - 1)), 3), "kind": k,
                 "n": pgr.randrange(1, 4)}
            if pgr.random() < 1 / 3:
                # hold_ms: the first write's wait, where the stop lands
                # (half-way through it).
                s.update(stop=round(pgr.uniform(1.5, 2.5) * T, 3), r=round(pgr.random(), 3),
                         hold_ms=pgr.randrange(150, 400), at=pgr.choice(["tok", "fence"]))
            steps.append(s)
    # One run in three is a balanced group (issue 56): every participant's
    # clients set balance.group, so leaderships move by themselves, as
    # transfers, under every fault of the schedule. Said by a step at the
    # start, so that a case file replays it.
    if random.Random(f"issue56-{seed}").random() < 1 / 3 and "balanced" in kinds:
        steps.append({"t": 0.0, "kind": "balanced"})
    steps.sort(key=lambda s: s["t"])
    return steps


def step_text(s):
    return " ".join(f"{k}={v}" for k, v in s.items())


# -- the participants ----------------------------------------------------------

def build_participant(build_dir, out_dir, name="explore_part", pg=True):
    """explore_part.c compiled against the build's header (pkg-config of its
    meson-uninstalled directory), as a user of that release would. What the
    header offers decides the steps it can take: a build without
    zkelect_client_transfer (before issue 33, though already 1.2.0) answers
    its transfer steps NONE. With pg, linked with libpq (pkg-config libpq,
    Debian's libpq-dev) for the pgwrite steps."""
    build_dir = Path(build_dir).resolve()
    out = Path(out_dir) / name
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise RuntimeError("no C compiler (cc)")
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = str(build_dir / "meson-uninstalled")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libzkelect"], env=env,
                           capture_output=True, text=True)
    if flags.returncode:
        raise RuntimeError(f"pkg-config libzkelect in {build_dir}: {flags.stderr}")
    words = flags.stdout.split()
    headers = [Path(w[2:]) / "zkelect" / "zkelect.h" for w in words if w.startswith("-I")]
    offers = " ".join(h.read_text(errors="replace") for h in headers if h.is_file())
    if "zkelect_client_transfer" in offers:
        words.append("-DEXPLORE_TRANSFER=1")
    if "zkelect_fenced_commit" in offers:
        words.append("-DEXPLORE_FENCED=1")
    if "zkelect_client_fenced_commit" in offers:
        words.append("-DEXPLORE_FENCED_AT=1")
    if pg:
        pq = subprocess.run(["pkg-config", "--cflags", "--libs", "libpq"], capture_output=True,
                            text=True)
        if pq.returncode:
            raise RuntimeError(f"pkg-config libpq (install libpq-dev, or --without pgwrite): "
                               f"{pq.stderr}")
        words += ["-DEXPLORE_PG=1", *pq.stdout.split()]
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-o", str(out),
                        str(HERE / "explore_part.c"), *words, "-lpthread"],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"building explore_part.c failed:\n{r.stderr}")
    return out


class Part:
    """One participant process (one incarnation: a restart is a new Part)."""

    def __init__(self, binary, env, name, paths, links):
        self.name = name
        self.killed_mono = None
        self.stopped = False
        self.stops = []           # [[SIGSTOP mono_ns, SIGCONT mono_ns or None]]
        self.on_line = None
        self.stacks = None        # gdb's stacks when it did not answer quit
        self.stuck_stacks = None  # gdb's stacks when a call did not return (stuck-call)
        self.exit_alone = None    # the exit status of a process that ended unasked (a crash)
        self.quit_sent = False
        self.proc = subprocess.Popen(
            [str(binary), name, str(T_MS), str(len(paths)), *paths,
             *[ln.connect_string for ln in links]],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, text=True, bufsize=1)
        # .lines: (recv_mono_ns, [words]) of each stdout line.
        self._out = LinePump(self.proc.stdout, item=lambda rx, text: (rx, text.split()),
                             on_item=self._seen, clock=time.monotonic_ns, name=f"read-{name}")
        self.lines = self._out.lines
        self.cv = self._out.cv
        threading.Thread(target=self._drain_err, daemon=True).start()

    def _seen(self, item):      # with self.cv held
        if self.on_line and item[1]:
            self.on_line(self, item[1])

    def _drain_err(self):
        self.err = self.proc.stderr.read()

    def ended_alone(self):
        """Whether the process has ended though nobody killed it (a crash):
        its exit status is kept in .exit_alone, and .killed_mono is set to
        the last line it wrote (a run of 1 still open in its lines ends
        there: it answered nothing after it, and ending it later would
        invent leadership). A later kill() must not pass it for one of the
        schedule's kills: then only the liveness check failed, on a
        participant whose ACKs and events had stopped (seed 20292900)."""
        if self.killed_mono is not None or self.exit_alone is not None:
            return self.exit_alone is not None
        rc = self.proc.poll()
        if rc is None or rc == 0:     # 0: it quit when told (BYE)
            return False
        self.exit_alone = rc
        with self.cv:
            self.killed_mono = self.lines[-1][0] if self.lines else time.monotonic_ns()
        return True

    def send(self, cmd):
        if self.killed_mono is not None:
            return
        if cmd == "quit":
            self.quit_sent = True
        try:
            self.proc.stdin.write(cmd + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def wait(self, pred, timeout):
        i = self._out.wait(lambda item: item[1] and pred(item[1]), timeout)
        return None if i is None else self.lines[i][1]

    def words(self):
        with self.cv:
            return [w for _, w in self.lines]

    def current(self, c, e):
        """The last flip of (c, e): 1 or 0."""
        v = 0
        for w in self.words():
            if w and w[0] == "FLIP" and int(w[1]) == c and int(w[2]) == e:
                v = int(w[3])
        return v

    def dump_stacks(self):
        """Every thread's stack of the live process, by gdb (attached for a
        moment, then detached), kept in .stacks for the report: a participant
        that stops answering is a call of the library that does not return,
        or the driver's own fault, and the stacks tell which."""
        if self.proc.poll() is not None:
            return
        self.stacks = self.stacks_now()

    def stacks_now(self):
        try:
            r = subprocess.run(["gdb", "-p", str(self.proc.pid), "-batch", "-nx",
                                "-ex", "set pagination off", "-ex", "thread apply all bt"],
                               capture_output=True, text=True, timeout=GDB_TIMEOUT_S)
            return r.stdout or r.stderr
        except (OSError, subprocess.TimeoutExpired) as ex:
            return f"gdb failed: {ex!r}"

    @staticmethod
    def pending_command(words):
        """(start mono_ns, its words) of the command the stdin thread is
        carrying out (a CMD line with no CMDEND after it), or None."""
        cur = None
        for w in words:
            if not w:
                continue
            if w[0] == "CMD" and len(w) >= 2:
                cur = (int(w[1]), w[2:])
            elif w[0] == "CMDEND":
                cur = None
        return cur

    def proc_state(self):
        """The process's state letter in /proc (R, S, D, T: stopped...), or
        None once it is gone."""
        try:
            stat = Path(f"/proc/{self.proc.pid}/stat").read_text()
        except OSError:
            return None
        return stat.rsplit(")", 1)[1].split()[0]

    def pause(self):
        """SIGSTOP, recorded in .stops; False when it is dead or stopped."""
        if self.killed_mono is not None or self.stopped:
            return False
        self.stops.append([time.monotonic_ns(), None])
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.stopped = True
        return True

    def resume(self):
        """SIGCONT of a pause (if it is still stopped: the calm may have
        resumed it first), its end recorded."""
        if not self.stopped:
            return
        if self.killed_mono is None:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.stopped = False
        self.stops[-1][1] = time.monotonic_ns()

    def kill(self):
        sent = None
        if self.ended_alone():
            return
        if self.killed_mono is None and self.proc.poll() is None:
            if self.stopped:
                os.kill(self.proc.pid, signal.SIGCONT)
            # The process answers nothing once the SIGKILL is sent (it is
            # delivered within microseconds); reaping it can take far longer
            # on a loaded machine, while the crash guard, which sees the
            # death itself, has already handed over (seed 11: reaped 113 ms
            # after the kill, the next leader elected at 112 ms, a false
            # two-leaders of 1.1 ms when the run ended at the reap).
            sent = time.monotonic_ns()
            self.proc.kill()
            self.proc.wait(10)
        if self.killed_mono is None:
            self.killed_mono = sent if sent is not None else time.monotonic_ns()


# -- one run -------------------------------------------------------------------

class World:
    """The ensemble and the operator's kazoo clients, kept across runs."""

    def __init__(self, build_dir, workdir, mixed_dir=None, priority=0, tick_ms=200,
                 min_session_ms=0, throttle=False, margin_ms=0, pg=True, pg_unfenced=False):
        from kazoo.client import KazooClient
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)
        self.build_dir = Path(build_dir).resolve()
        self.workdir = Path(workdir)
        self.pg = None
        self.binary = build_participant(self.build_dir, self.workdir, pg=pg)
        # --tick-ms/--min-session-ms: servers that grant T below two ticks
        # (as tests/integration/test_ticktime.py's), where a follower reports
        # touches half a tick late, more than the T/4 of ZooKeeper's default.
        # --throttle (issue 50): every server's RequestThrottler lets 4
        # requests into its pipeline at a time and answers ZTHROTTLEDOP to
        # any that waited there over 30 ms (throttledOpWaitTime, ZooKeeper
        # 3.7 on); a load of reads (below) keeps the queue full, so the
        # candidates' own requests are refused now and then.
        if throttle:
            self.know_throttled_op()
        flags = ["-Dzookeeper.request_throttle_max_requests=4",
                 "-Dzookeeper.request_throttle_stall_time=20",
                 "-Dzookeeper.throttled_op_wait_time=30"] if throttle else None
        self.ens = Ensemble(n=3, tick_ms=tick_ms,
                            extra_cfg={"minSessionTimeout": min_session_ms} if min_session_ms else None,
                            jvm_flags=flags)
        # --margin-ms: every participant configures lease.margin.ms (with the
        # shrink step, a reconnect may negotiate a T it does not fit).
        self.margin_ms = margin_ms
        self.ens.start()
        self.ports = [self.ens.client_port(i) for i in range(3)]
        self.kz = KazooClient(hosts=self.ens.connect_string, timeout=4.0)
        self.kz.start(timeout=20)
        self.kz2 = KazooClient(hosts=self.ens.connect_string, timeout=4.0)  # RESIGNED checks
        self.kz2.start(timeout=20)
        self.env = self.env_of(self.build_dir)
        # --mixed: every other process runs another build (an older
        # release, as during a rolling upgrade of the candidates), its
        # participant program built against that build's header.
        self.flavours = [(self.binary, self.env)]
        self.mixed = mixed_dir is not None
        # --priority: the last process's candidacies prefer to lead (issue
        # 33), so transfers happen by themselves among the faults, one
        # hold-down (2 T) after such a candidacy follows.
        self.priority = priority
        if self.mixed:
            other = Path(mixed_dir).resolve()
            self.flavours.append((build_participant(other, self.workdir, "explore_part_mixed",
                                                    pg=pg),
                                  self.env_of(other)))
        self.count = 0
        self.load_stop = threading.Event()
        self.load_on = threading.Event()   # set while a run's schedule runs
        self.throttled = [0, 0, 0]   # the load's reads answered ZTHROTTLEDOP, per server
        if throttle:
            for i in range(3):
                threading.Thread(target=self._load, args=(i,), daemon=True).start()
        # One PostgreSQL server for every run of this explorer process: the
        # paths (the fence's resources, the records' keys) are the run's own.
        if pg:
            try:
                self.pg = self.start_pg(pg_unfenced)
            except BaseException:
                self.close()
                raise

    @staticmethod
    def start_pg(unfenced):
        """Debian's PostgreSQL on loopback (tests/bed/pgbed.py), the shipped
        guard installed, the records' table made."""
        from bed.pgbed import PgServer
        pg = PgServer()
        try:
            pg.start()
            r = subprocess.run(pg.psql_argv("-f", str(REPO / "fencing" / "fencing.sql")),
                               capture_output=True, text=True, timeout=60)
            if r.returncode:
                raise RuntimeError(f"installing fencing.sql: {r.stderr}")
            pg.psql(PG_TABLE)
            if unfenced:
                pg.psql(PG_NO_CHECK)
        except BaseException:
            pg.stop()
            raise
        return pg

    @staticmethod
    def know_throttled_op():
        """kazoo 2.9 has no exception for ZTHROTTLEDOP (-127): its reply
        kills the client's connection thread ("Invalid error code"). With
        one, a throttled call of the explorer's raises like any other."""
        from kazoo import exceptions as ke
        if -127 not in ke.EXCEPTIONS:
            ke.EXCEPTIONS[-127] = type("ThrottledOpError", (ke.ZookeeperError,), {})

    def _load(self, i):
        """Bursts of 300 reads at server i, one burst at a time, until close."""
        from kazoo.client import KazooClient
        k = KazooClient(hosts=f"127.0.0.1:{self.ens.client_port(i)}", timeout=4.0)
        try:
            k.start(timeout=20)
        except Exception:
            return
        while not self.load_stop.is_set():
            if not self.load_on.wait(0.5):
                continue
            rs = [k.exists_async("/") for _ in range(300)]
            for r in rs:
                try:
                    r.get(timeout=5)
                except Exception as ex:
                    # Evidence that the throttle refuses: said at close().
                    if type(ex).__name__ == "ThrottledOpError":
                        self.throttled[i] += 1
                    else:
                        self.load_stop.wait(0.5)
                        break
        try:
            k.stop()
            k.close()
        except Exception:
            pass

    @staticmethod
    def env_of(build_dir):
        """The environment of a participant of build_dir: its library, and
        its own crash guard (the guard speaks its library's protocol)."""
        env = dict(os.environ)
        ld = str(build_dir / "capi")
        env["LD_LIBRARY_PATH"] = ld + (":" + env["LD_LIBRARY_PATH"]
                                       if env.get("LD_LIBRARY_PATH") else "")
        guard = build_dir / "guard" / "zkelect-guard"
        if guard.exists():
            env["ZKELECT_GUARD"] = str(guard)
        return env

    def heal_servers(self):
        for i in range(3):
            try:
                if self.ens._srv(i).get("paused"):
                    self.ens.resume_server(i)
            except Exception:
                pass
            if not self.ens.is_running(i):
                self.ens.start_server(i, timeout=60)
        self.ens.wait_quorum(timeout=60)

    def close(self):
        if self.pg:
            self.pg.stop()
            self.pg = None
        self.load_stop.set()
        if any(self.throttled):
            log(f"throttle: the load's reads answered ZTHROTTLEDOP per server: {self.throttled}")
        for k in (self.kz, self.kz2):
            try:
                k.stop()
                k.close()
            except Exception:
                pass
        self.ens.stop()


# An operator's call waits at most this long. kazoo's synchronous calls
# have no bound of their own: one sync stayed pending for 17 minutes behind
# a SIGSTOPped server (seed 706356799), and the whole explorer with it.
OP_TIMEOUT_S = 15


def fenced_children(kz, path, fence):
    """children() ordered after every write the quorum committed before the
    call, on any server, the leader included. A sync does not do that on the
    leader: its CommitProcessor lets a sync through like a read (matchSyncs
    is false there; ZooKeeper 3.8, LeaderZooKeeperServer), and it applies a
    committed write only once the reads in its workers are done, after
    followers may have applied it and answered. So a listing at the leader
    showed a node 30 ms after its delete had been answered to the library
    through a follower (seed 935449961, issue 50). A write of this session
    (the fence, a node of the checker's own) is applied in commit order and
    the session's later read waits for it."""
    from kazoo.exceptions import NoNodeError, NodeExistsError
    try:
        kz.set_async(fence, b"").get(timeout=OP_TIMEOUT_S)
    except NoNodeError:
        try:
            kz.create_async(fence, b"", makepath=True).get(timeout=OP_TIMEOUT_S)
        except NodeExistsError:
            kz.set_async(fence, b"").get(timeout=OP_TIMEOUT_S)
    return children(kz, path)


def children(kz, path):
    """{name: data} of the children of path (synced), {} when it is missing.
    Raises (kazoo's timeout) when the operator's session does not answer
    within OP_TIMEOUT_S; every caller counts that as a step that failed."""
    from kazoo.exceptions import NoNodeError
    try:
        kz.sync_async(path).get(timeout=OP_TIMEOUT_S)
        names = kz.get_children_async(path).get(timeout=OP_TIMEOUT_S)
    except NoNodeError:
        return {}
    out = {}
    for n in names:
        if n.startswith(CROWD):
            out[n] = ""     # thousands of them, and nobody's id
            continue
        try:
            d, _ = kz.get_async(path + "/" + n).get(timeout=OP_TIMEOUT_S)
            out[n] = d.decode(errors="replace")
        except NoNodeError:
            pass
    return out


def pg_records(pg, paths):
    """{path: [(id, token, wid)] in id order} of the records of these
    paths. Raises ValueError on anything but the rows asked for."""
    for p in paths:
        if not re.fullmatch(r"/[A-Za-z0-9/._-]{1,300}", p):
            raise ValueError(f"a path the query does not take: {p!r}")
    r = subprocess.run(
        pg.psql_argv("-At", "-F", "|", "-v", "paths=" + " ".join(paths), "-f", "-"),
        input="SELECT path, id, token, wid FROM explore_pg "
              "WHERE path = ANY (string_to_array(:'paths', ' ')) ORDER BY path, id;\n",
        capture_output=True, text=True, timeout=OP_TIMEOUT_S)
    if r.returncode:
        raise ValueError(f"psql: {r.stderr.strip()[:300]}")
    out = {p: [] for p in paths}
    row = re.compile(r"(/[A-Za-z0-9/._-]{1,300})\|(\d{1,19})\|(-?\d{1,19})\|([A-Za-z0-9.-]{1,100})")
    for line in r.stdout.splitlines():
        m = row.fullmatch(line)
        if not m or m[1] not in out:
            raise ValueError(f"a row not understood: {line[:200]!r}")
        out[m[1]].append((int(m[2]), int(m[3]), m[4]))
    return out


def seqno(name):
    return int(name.rsplit("-", 1)[1])


class Run:
    def __init__(self, world, seed, schedule, duration, verbose=False):
        self.w = world
        self.seed = seed
        self.schedule = schedule
        self.duration = duration
        self.verbose = verbose
        world.count += 1
        self.root = f"/explore/r{seed}-{os.getpid()}-{world.count}"
        self.paths = [f"{self.root}/e{e}" for e in range(E)]
        # A balanced group's path (issue 56), when the schedule says so.
        self.group = f"{self.root}/group" if any(s["kind"] == "balanced" for s in schedule) else None
        self.links = []
        self.parts = []           # current Part per p
        self.all_parts = []       # every incarnation
        self.incarnation = [0] * P
        self.restart_token = {}  # p -> the pending restart that counts (pkill)
        self.resigned = []        # (part, c, e, h, ev_mono, list_mono, [ids found])
        self.rq = queue.Queue()
        self.on_server = {}       # the RESIGNED checker's client on each server alone
        self.log = []
        self.violations = []
        self.counts = {}
        self.acl_changed = set()
        self.crowds = {}          # e -> the paths of the `crowd` step's children
        # e -> [[mono_ns made, mono_ns gone or None]] of crowds of candidates
        # (crowd-latch-N): candidates that cannot step back, in line.
        self.latch_crowds = {}
        # (mono_ns before the operator's call, e, {ids}, mono_ns once it
        # returned): the deletion happened somewhere in between (a call can
        # wait seconds behind a stopped server).
        self.deletions = []

    # -- plumbing
    def rel(self, ns):
        """A monotonic stamp as seconds since the schedule began."""
        return f"{ns / 1e9 - self.t0:.3f}"

    def note(self, msg):
        line = f"[{(time.monotonic() - self.t0):7.3f}] {msg}"
        self.log.append(line)
        if self.verbose:
            log(line)

    def start_part(self, p):
        self.incarnation[p] += 1
        name = f"p{p}i{self.incarnation[p]}"
        binary, env = self.w.flavours[p % len(self.w.flavours)]
        if self.w.priority and p == P - 1:
            env = dict(env, EXPLORE_PRIORITY=str(self.w.priority),
                       EXPLORE_PRIORITY_HOLDDOWN_MS=str(2 * T_MS))
        if self.w.margin_ms:
            env = dict(env, EXPLORE_MARGIN_MS=str(self.w.margin_ms))
        if self.group:
            env = dict(env, EXPLORE_BALANCE_GROUP=self.group)
        if self.w.pg:
            env = dict(env, EXPLORE_PG_DSN=self.w.pg.dsn)
        part = Part(binary, env, name, self.paths, self.links[p])
        part.on_line = self.on_line
        part.p = p
        if not part.wait(lambda w: w[0] in ("READY", "ERR"), 20) or part.proc.poll() is not None:
            raise RuntimeError(f"participant {name} did not start: {getattr(part, 'err', '')}")
        if len(self.parts) > p:
            self.parts[p] = part
        else:
            self.parts.append(part)
        self.all_parts.append(part)
        for c in range(C):
            for e in range(E):
                part.send(f"vol {c} {e}")
        return part

    def on_line(self, part, w):
        if w[0] == "EV" and len(w) >= 8 and w[4] == "RESIGNED":
            self.rq.put((part, int(w[1]), int(w[2]), int(w[3]), int(w[7])))

    def leader_children(self, path):
        """Children of path as the quorum's leader has them now, through a
        client of the checker's on that server alone (one per server, kept),
        or None when that cannot be had (no single leader serving). Fenced
        (fenced_children): the leader's sync orders nothing."""
        from kazoo.client import KazooClient
        try:
            i = self.w.ens.leader_index(timeout=2)
        except Exception:
            return None
        k = self.on_server.get(i)
        try:
            if k is None:
                k = KazooClient(hosts=f"127.0.0.1:{self.w.ens.client_port(i)}", timeout=4.0)
                k.start(timeout=5)
                self.on_server[i] = k
            return fenced_children(k, path, f"{self.root}-fence")
        except Exception:
            return None

    def close_server_clients(self):
        for k in self.on_server.values():
            try:
                k.stop()
                k.close()
            except Exception:
                pass
        self.on_server.clear()

    def resigned_checker(self):
        """Lists the path as soon as a RESIGNED is read: the candidacy's node
        must be gone already (checked against later volunteers at the end)."""
        while True:
            item = self.rq.get()
            if item is None:
                return
            part, c, e, h, ev_mono = item
            ident = f"{part.name}.c{c}.e{e}.h{h}"
            try:
                # The quorum's leader has every committed write, applied
                # once a write of the checker's own is (fenced_children):
                # what it lists then decides. Servers behind it (one just resumed from
                # SIGSTOP answered a synced listing with a node whose delete
                # the library had been told was done 313 ms before: seed
                # 956314174) are asked only when no leader serves.
                there = self.leader_children(self.paths[e])
                if there is not None:
                    found = [n for n, d in there.items() if d == ident]
                    self.resigned.append((part, c, e, h, ev_mono, time.monotonic_ns(), found))
                    continue
                found = [n for n, d in children(self.w.kz2, self.paths[e]).items() if d == ident]
                if found:
                    # A server just resumed from SIGSTOP was seen to answer a
                    # synced listing with a node deleted 110 ms before (seed
                    # 914 at 0018903): ask again through the other client's
                    # session, which is likely on another server.
                    again = children(self.w.kz, self.paths[e])
                    stale = [n for n in found if n not in again]
                    if stale:
                        self.note(f"resigned-check {ident}: {stale} listed by one client, "
                                  "gone for the other (a stale server), not counted")
                    found = [n for n in found if n in again]
            except Exception as ex:          # the ensemble may be faulted now
                self.note(f"resigned-check {ident}: listing failed: {ex!r}")
                continue
            self.resigned.append((part, c, e, h, ev_mono, time.monotonic_ns(), found))

    # -- steps
    def do(self, s, later):
        k = s["kind"]
        self.counts[k] = self.counts.get(k, 0) + 1
        T = T_MS / 1000
        if k in ("drop", "reset", "blackhole", "delay"):
            ln = self.links[s["p"]][s["c"]]
            if k == "drop":
                match = None if s.get("match") is None else f"/e{s['match']}/".encode()
                ln.drop_reply(s["op"], 1, s.get("then"), match)
            elif k == "reset":
                ln.reset()
            elif k == "blackhole":
                ln.blackhole(discard=s["discard"])
                later(s["dur"], lambda: ln.set_pass())
            else:
                ln.delay(s["ms"], s["jitter"])
                later(s["dur"], lambda: ln.set_pass())
        elif k == "pstop":
            part = self.parts[s["p"]]
            if part.pause():
                later(s["dur"], part.resume)
        elif k == "pkill":
            part = self.parts[s["p"]]
            part.kill()
            # One restart per process at a time: on a loaded machine the
            # steps run late and back to back, and a second pkill of p can
            # come before the first's restart (it then kills the dead
            # incarnation again). Both restarts would start a process, and
            # the first started would be left running unwatched, its nodes
            # never gone (seed 948269271: 'history' and 'liveness' at p1i2).
            # The later restart stands for both.
            token = object()
            self.restart_token[s["p"]] = token

            def restart(p=s["p"], token=token):
                if self.restart_token.get(p) is token:
                    self.start_part(p)
            later(s["dur"], restart)
        elif k == "skill":
            i = s["i"]
            self.w.ens.kill_server(i)

            def restart(i=i):
                threading.Thread(target=lambda: self._restart_server(i), daemon=True).start()
            later(s["dur"], restart)
        elif k == "sstop":
            i = s["i"]
            if self.w.ens.is_running(i):
                self.w.ens.pause_server(i)
                later(s["dur"], lambda: self.w.ens.resume_server(i))
        elif k == "odel":
            kids_d = children(self.w.kz, self.paths[s["e"]])
            kids = sorted((n for n in kids_d if CANDIDATE.match(n)), key=seqno)
            if kids:
                n = kids[0] if s["pick"] == "leader" else kids[int(s["r"] * len(kids))]
                self._operator_deletes(s["e"], {kids_d[n]},
                                       lambda: self.w.kz.delete(self.paths[s["e"]] + "/" + n))
                self.note(f"  deleted {n} ({kids_d[n]})")
        elif k == "crowd":
            self._crowd(s["e"], s["n"], s["latch"])
            later(s["dur"], lambda: self._uncrowd(s["e"]))
        elif k == "opath":
            self._uncrowd(s["e"])   # a recursive delete of 20,000 outlasts the call's bound
            # Any candidacy's node: the recursive delete lists the path
            # itself, later than any listing here, and deletes what it finds
            # then (seed 948269286: a node made between the two, the
            # leader's, was deleted unexcused, and the next in line led
            # before its watch told the old leader).
            self._operator_deletes(s["e"], {ANY_NODE},
                                   lambda: self.w.kz.delete(self.paths[s["e"]], recursive=True))
        elif k == "foreign":
            self._try(lambda: self.w.kz.create(self.paths[s["e"]] + "/foreign-", b"foreign",
                                               sequence=True, makepath=True))
        elif k in ("acl", "aclp"):
            from kazoo.security import ACL, Id, Permissions
            path = self.paths[s["e"]]
            if s["on"] == "node":
                kids = sorted(n for n in children(self.w.kz, path) if CANDIDATE.match(n))
                if not kids:
                    return
                path = path + "/" + kids[int(s["r"] * len(kids))]
                perms = Permissions.ADMIN
            elif s.get("only") == "read":
                # aclp: READ alone off the path (issue 50, finding 2: a
                # recovery listing refused with ZNOAUTH).
                perms = Permissions.ALL & ~Permissions.READ
            elif s.get("only") == "delete":
                # aclp: DELETE alone off the path: every delete of a
                # candidate node is refused until it comes back.
                perms = Permissions.ALL & ~Permissions.DELETE
            else:
                perms = Permissions.READ | Permissions.ADMIN
            # Restored whatever the call says: one that failed with
            # ConnectionLoss may still have taken effect (seed 11 once kept
            # a path closed to creates past the calm: no leader).
            self.acl_changed.add(path)
            self._try(lambda: self.w.kz.set_acls(path, [ACL(perms, Id("world", "anyone"))]))
            later(s["dur"], lambda: self._open_acl(path))
        elif k in ("vol", "res", "des", "cbres"):
            self.parts[s["p"]].send(f"{k} {s['c']} {s['e']}")
        elif k == "resleader":
            for part in self.parts:
                for c in range(C):
                    if part.killed_mono is None and part.current(c, s["e"]):
                        part.send(f"res {c} {s['e']}")
                        self.note(f"  leader {part.name} c{c} resigns")
                        later(s["back"], lambda part=part, c=c: part.send(f"vol {c} {s['e']}"))
        elif k in ("xfer", "oxfer"):
            self._transfer(s)
        elif k == "ddis":
            part = self.parts[s["p"]]
            if part.killed_mono is not None:
                return
            ln = self.links[s["p"]][s["c"]]
            ln.blackhole(discard=True)
            later(s["dur"], lambda: ln.set_pass())
            later(s["at"], lambda: self._drop_or_requeue(part, s["c"], s["e"], s["requeue"]))
        elif k == "xdis":
            e = s["e"]
            leaders = [(pt, c) for pt in self.parts for c in range(C)
                       if pt.killed_mono is None and pt.current(c, e)]
            if not leaders or not hasattr(self, "live_ids"):
                return
            pt, c = leaders[0]
            askers = [(q, d) for q in self.parts for d in range(C)
                      if q is not pt and q.killed_mono is None]
            ids = self.live_ids()
            kids = children(self.w.kz, self.paths[e])
            mine = ids.get((pt, c, e))
            in_line = [kids[n] for n in sorted((n for n in kids if CANDIDATE.match(n)), key=seqno)]
            others = [i for i in in_line if i != mine]
            if not askers or not others:
                return
            q, d = askers[s["p"] % len(askers)]
            q.send(f"oxfer {d} {e} {others[-1]}")
            self.note(f"  {q.name} c{d} asks leader {pt.name} c{c} for a transfer to {others[-1]}; "
                      f"its link goes dark in {s['at']} s")
            ln = self.links[self.parts.index(pt)][c]

            def dark():
                ln.blackhole(discard=True)
                later(XFER_MS / 1000 + s["dur"], lambda: ln.set_pass())
            later(s["at"], dark)
            later(XFER_MS / 1000 + s["at"] + 0.05,
                  lambda: self._drop_or_requeue(pt, c, e, s["requeue"]))
        elif k == "resall":
            e = s["e"]
            hs = [(pt, c) for pt in self.parts for c in range(C) if pt.killed_mono is None]
            random.Random(s["order"]).shuffle(hs)
            hs.sort(key=lambda h: -h[0].current(h[1], e))     # the leader first
            for pt, c in hs:
                pt.send(f"res {c} {e}")
                # A few ms between resigns: the next one may meet the claim
                # that the previous one's delete set off.
                time.sleep(s.get("gap_ms", 0) / 1000)
            for pt, c in hs:
                later(s["back"], lambda pt=pt, c=c: pt.send(f"vol {c} {e}"))
        elif k == "resstop":
            self._resign_stopped(s, later)
        elif k == "dcl":
            part = self.parts[s["p"]]
            part.send(f"dcl {s['c']}")
            later(s["back"], lambda: part.send(f"ncl {s['c']}"))
        elif k == "cbdes":
            self.parts[s["p"]].send(f"cbdes {s['c']} {s['e']}")
        elif k == "balanced":
            pass  # read at the start: every participant is in the group
        elif k == "fwrite":
            for part in self.parts:
                part.send(f"fwall {s['n']}")
        elif k == "pgwrite":
            self._pg_write(s, later)
        elif k == "fork":
            self.parts[s["p"]].send("fork 0")
        elif k == "logstall":
            self.parts[s["p"]].send(f"logstall 0 {s['ms']}")
        elif k in ("shrink", "zero"):
            ln = self.links[s["p"]][s["c"]]
            if k == "zero":
                ln.rewrite_reconnect(reply_timeout_ms=0)
            else:
                rule = ln.rewrite_reconnect(request_timeout_ms=int(T_MS * s["f"]))
                if s.get("cut"):
                    threading.Thread(target=self._cut_after_handshake,
                                     args=(self.parts[s["p"]], ln, rule, s["cut"], s["dur"]),
                                     daemon=True).start()
            ln.reset()
        elif k == "sclose":
            self._close_session(s["p"], s["c"])

    def _pg_write(self, s, later):
        """pgwrite: every leader writes n times to PostgreSQL; with `stop`,
        the process of the r-th leading one (of those running now) holds its
        first write for hold_ms (after its token, or after its fence call)
        and is stopped half-way through that hold for `stop` seconds, while
        the others' leaders write again every 0.3 s once its sessions can
        have expired (from T on): its write then comes late."""
        if not self.w.pg:
            return
        held = None
        if s.get("stop"):
            leading = [pt for pt in self.parts if pt.killed_mono is None and not pt.stopped
                       and any(pt.current(c, e) for c in range(C) for e in range(E))]
            if leading:
                held = leading[int(s["r"] * len(leading)) % len(leading)]
        for pt in self.parts:
            pt.send(f"pgall {s['n']} {s['hold_ms']} {s['at']}" if pt is held
                    else f"pgall {s['n']}")
        if held is None:
            return
        T = T_MS / 1000

        def others_write():
            for pt in self.parts:
                if pt is not held and pt.killed_mono is None:
                    pt.send("pgall 1")

        def stop():
            if not held.pause():
                return
            self.note(f"  {held.name} stopped in its first write (held at {s['at']}) "
                      f"for {s['stop']} s")
            later(s["stop"], held.resume)
            for i in range(20):   # 2.5 T at most: 8 of them
                at = T + 0.2 + 0.3 * i
                if at >= s["stop"] - 0.05:
                    break
                later(at, others_write)
        later(s["hold_ms"] / 2000, stop)

    def _resign_stopped(self, s, later):
        """A path's candidacies resign in a burst while one process is
        stopped; it resigns its own as it comes back. Its heir learns of the
        deletes only on its SIGCONT, when its own resign is moments away:
        the claim and the resign meet in its loop (the resign race of
        e3e86e2, which a burst among running processes reached in no run)."""
        e = s["e"]
        # Not the leader's process: its heir is the one to meet the race.
        order = [self.parts[(s["p"] + i) % P] for i in range(P)]
        part = next((pt for pt in order if pt.killed_mono is None and
                     not any(pt.current(c, e) for c in range(C))), order[0])
        stopped = part.pause()
        hs = [(pt, c) for pt in self.parts for c in range(C)
              if pt.killed_mono is None and (pt is not part or not stopped)]
        random.Random(s["order"]).shuffle(hs)
        hs.sort(key=lambda h: -h[0].current(h[1], e))     # the leader first
        for pt, c in hs:
            pt.send(f"res {c} {e}")
            time.sleep(s["gap_ms"] / 1000)
        if stopped:
            time.sleep(s["hold_ms"] / 1000)
            part.resume()
            end = time.monotonic() + s["after_ms"] / 1000
            while time.monotonic() < end:   # a sleep this short overshoots
                pass
            for c in range(C):
                part.send(f"res {c} {e}")
                hs.append((part, c))
        for pt, c in hs:
            later(s["back"], lambda pt=pt, c=c: pt.send(f"vol {c} {e}"))

    def _transfer(self, s):
        """xfer: each handle that answers 1 for path e (one, unless the
        faults made more) transfers to another live candidacy of e, the r-th
        of those in line now (the path's nodes, as the operator lists
        them), in line order; oxfer: client c of process p asks whoever
        leads e for that. The target may have left by the time the call
        runs: ENOCANDIDATE or ETARGET_LOST, both legitimate."""
        e = s["e"]
        ids = self.live_ids()
        kids = children(self.w.kz, self.paths[e])
        in_line = [kids[n] for n in sorted((n for n in kids if CANDIDATE.match(n)), key=seqno)]
        leaders = [(pt, c) for pt in self.parts for c in range(C)
                   if pt.killed_mono is None and pt.current(c, e)]
        if s["kind"] == "xfer":
            for pt, c in leaders:
                mine = ids.get((pt, c, e))
                others = [i for i in in_line if i != mine]
                if others:
                    target = others[int(s["r"] * len(others))]
                    pt.send(f"xfer {c} {e} {target}")
                    self.note(f"  leader {pt.name} c{c} transfers to {target}")
            return
        led = {ids.get((pt, c, e)) for pt, c in leaders}
        others = [i for i in in_line if i not in led]
        if others:
            target = others[int(s["r"] * len(others))]
            self.parts[s["p"]].send(f"oxfer {s['c']} {e} {target}")
            self.note(f"  {self.parts[s['p']].name} c{s['c']} asks for a transfer to {target}")

    def _drop_or_requeue(self, part, c, e, requeue):
        if part.killed_mono is not None:
            return
        if requeue:
            part.send(f"res {c} {e}")
            part.send(f"vol {c} {e}")
        else:
            part.send(f"des {c} {e}")
        self.note(f"  {part.name} c{c} e{e} {'requeued' if requeue else 'destroyed'} while cut off")

    def _try(self, fn):
        """An operator's call, bounded by OP_TIMEOUT_S: kazoo's own calls
        (a recursive delete is many) wait without end for a stuck session.
        One left waiting stays on its daemon thread; the run goes on."""
        done = {}

        def call():
            try:
                fn()
                done["ok"] = True
            except Exception as ex:
                done["ex"] = ex

        t = threading.Thread(target=call, daemon=True)
        t.start()
        t.join(OP_TIMEOUT_S)
        if t.is_alive():
            self.note(f"  operator: no answer within {OP_TIMEOUT_S} s")
            return False
        if "ex" in done:
            self.note(f"  operator: {done['ex']!r}")
            return False
        return True

    def _cut_after_handshake(self, part, ln, rule, cut, dur):
        """As soon as the rewritten handshake went by (bounded): SIGSTOP the
        part (SIGCONT dur later unless the calm did it first), or cut its
        link for dur."""
        if not rule.done.wait(5):
            return
        if cut == "blackhole":
            try:
                ln.blackhole()
                time.sleep(dur)
                ln.set_pass()
            except RuntimeError:
                pass  # the run ended meanwhile: its proxies' loop is closed
            return
        if part.pause():
            time.sleep(dur)
            part.resume()

    def _close_session(self, p, c):
        """Another client presents the session id and password the link's
        proxy saw and closes the session: ZooKeeper deletes its nodes at once,
        an operator's action on our nodes (excused as a delete is)."""
        from kazoo.client import KazooClient
        cred = self.links[p][c].last_session()
        if not cred:
            return
        sid, _tmo, pw = cred
        part = self.parts[p]
        ids = {i for (pt, cc, e), i in self.live_ids().items() if pt is part and cc == c}

        def close():
            k = KazooClient(hosts=self.w.ens.connect_string, client_id=(sid, pw), timeout=4.0)
            try:
                k.start(timeout=OP_TIMEOUT_S / 2)
                k.stop()
            finally:
                k.close()
        if self._operator_deletes(range(E), ids, close):
            self.note(f"  closed session 0x{sid:x} of {part.name}.c{c}")

    def _operator_deletes(self, paths, ids, fn):
        """An operator's call that deletes the nodes of `ids` on path(s) e,
        bounded (_try); recorded with when it began and when it returned."""
        t0 = time.monotonic_ns()
        ok = self._try(fn)
        t1 = time.monotonic_ns()
        for e in ([paths] if isinstance(paths, int) else paths):
            self.deletions.append((t0, e, ids, t1))
        return ok

    def _crowd(self, e, n, latch):
        """n sequential children on path e, CROWD_BATCH to a multi (kazoo's
        one by one would take seconds); their names kept for _uncrowd."""
        path = self.paths[e]
        prefix = path + "/" + CROWD + ("latch-" if latch else "")
        made = self.crowds.setdefault(e, [])
        # Crowds on one path add up: 20,000 in all keeps a listing under
        # ZooKeeper's 1 MB (seed 291719828 put 46,597 on e0).
        n = min(n, CROWD_MAX - len(made))
        if n <= 0:
            return
        if latch:
            self.latch_crowds.setdefault(e, []).append([time.monotonic_ns(), None])

        def create():
            for i in range(0, n, CROWD_BATCH):
                tx = self.w.kz.transaction()
                for _ in range(min(CROWD_BATCH, n - i)):
                    tx.create(prefix, b"", sequence=True)
                res = tx.commit_async().get(timeout=OP_TIMEOUT_S)
                made.extend(r for r in res if isinstance(r, str))
                if any(not isinstance(r, str) for r in res):
                    raise RuntimeError(f"crowd: {next(r for r in res if not isinstance(r, str))!r}")
        self._try(create)
        self.note(f"  crowd of {len(made)} on e{e}")

    def _uncrowd(self, e):
        """Deletes what _crowd made on path e, a multi of CROWD_BATCH at a
        time; a batch that fails whole (a name already gone, with the path,
        say) goes again as single deletes, sent back to back."""
        made = self.crowds.get(e, [])
        from kazoo.exceptions import NoNodeError

        def delete():
            for i in range(0, len(made), CROWD_BATCH):
                batch = made[i:i + CROWD_BATCH]
                tx = self.w.kz.transaction()
                for name in batch:
                    tx.delete(name)
                res = tx.commit_async().get(timeout=OP_TIMEOUT_S)
                if all(r is True for r in res):
                    continue
                for a in [self.w.kz.delete_async(name) for name in batch]:
                    try:
                        a.get(timeout=OP_TIMEOUT_S)
                    except NoNodeError:
                        pass
        # Kept until they are gone: a delete the path's ACL refuses (seed
        # 124450469) is tried again at the heal, after the ACL is restored;
        # a crowd of candidates left behind would lead the path for good.
        if not made or self._try(delete):
            self.crowds.pop(e, None)
            for span in self.latch_crowds.get(e, []):
                if span[1] is None:
                    span[1] = time.monotonic_ns()

    def _sweep_crowds(self):
        """Deletes every crowd child still on a path: a batch whose reply
        was lost (ConnectionLoss) may have committed with its names never
        known to _crowd, and a crowd of candidates left behind leads the
        path for good (seeds 907938001 and 7710: liveness, "0 handles
        answer 1", after a crowd's create saw ConnectionLoss)."""
        from kazoo.exceptions import NoNodeError
        for path in self.paths:
            try:
                names = self.w.kz.get_children_async(path).get(timeout=OP_TIMEOUT_S)
            except Exception:
                continue
            left = [f"{path}/{n}" for n in names if n.startswith(CROWD)]
            if not left:
                continue
            self.note(f"  calm: {len(left)} crowd children left on {path}, deleted")

            def delete(left=left):
                for a in [self.w.kz.delete_async(n) for n in left]:
                    try:
                        a.get(timeout=OP_TIMEOUT_S)
                    except NoNodeError:
                        pass
            self._try(delete)

    def _open_acl(self, path):
        from kazoo.security import OPEN_ACL_UNSAFE
        if self._try(lambda: self.w.kz.set_acls(path, OPEN_ACL_UNSAFE)):
            self.acl_changed.discard(path)

    def _restart_server(self, i):
        try:
            self.w.ens.start_server(i, timeout=60)
        except Exception as ex:
            self.note(f"  server {i} restart: {ex!r}")

    # -- the run
    def execute(self):
        self.w.load_on.set()
        self.t0 = time.monotonic()
        self.links = [[ProxiedEnsemble(self.w.ports) for _ in range(C)] for _ in range(P)]
        checker = threading.Thread(target=self.resigned_checker, daemon=True)
        checker.start()
        heap = []
        seq = [0]

        def later(dt, fn):
            seq[0] += 1
            heapq.heappush(heap, (time.monotonic() + dt, seq[0], fn))

        try:
            # The data nodes of the fenced writes, beside the election paths
            # (an operator's delete of a path leaves them).
            for path in self.paths:
                self.w.kz.create(path + ".fdata", b"", makepath=True)
                self.w.kz.create(path + ".flog", b"", makepath=True)
            for p in range(P):
                self.start_part(p)
            # A first leader everywhere before the schedule starts.
            end = time.monotonic() + 20
            while time.monotonic() < end and not all(
                    any(pt.current(c, e) for pt in self.parts for c in range(C))
                    for e in range(E)):
                time.sleep(0.05)
            self.t0 = time.monotonic()
            for s in self.schedule:
                seq[0] += 1
                heapq.heappush(heap, (self.t0 + s["t"], seq[0], s))
            t_end = self.t0 + max(self.duration, max((s["t"] for s in self.schedule), default=0))
            while heap:
                at, _, item = heap[0]
                if at > t_end and isinstance(item, dict):
                    heapq.heappop(heap)
                    continue
                now = time.monotonic()
                if at > now:
                    time.sleep(min(at - now, 0.05))
                    continue
                heapq.heappop(heap)
                if isinstance(item, dict):
                    self.note(step_text(item))
                    try:
                        self.do(item, later)
                    except Exception as ex:
                        self.note(f"  step failed: {ex!r}")
                else:
                    try:
                        item()
                    except Exception as ex:
                        self.note(f"  deferred action failed: {ex!r}")
            self.calm_and_settle()
            self.check_stuck()
        finally:
            for part in self.parts:
                if part.killed_mono is None:
                    if part.stopped:
                        os.kill(part.proc.pid, signal.SIGCONT)
                    part.send("quit")
            for part in self.parts:
                if part.killed_mono is None:
                    if not part.wait(lambda w: w[0] == "BYE", QUIT_S):
                        part.dump_stacks()
                        part.kill()
                    else:
                        part.proc.wait(5)
            self.rq.put(None)
            checker.join(30)
            self.close_server_clients()
            for row in self.links:
                for ln in row:
                    ln.close()
        self.check()
        return self.violations

    def calm_and_settle(self):
        self.note("calm: heal every link, process, server and ACL")
        # --throttle's load stops too: the calm's own listings (and the
        # candidates' recovery) are not to be refused (seed 678770794).
        self.w.load_on.clear()
        for row in self.links:
            for ln in row:
                ln.set_pass()
                for px in ln.proxies:
                    px.clear_rules()
        for part in self.parts:
            part.resume()
        for p, part in enumerate(self.parts):
            if part.killed_mono is not None or part.ended_alone():
                self.start_part(p)
        try:
            self.w.heal_servers()
        except Exception as ex:
            # Reported, not raised: the run's history is still checked, and
            # the next run heals again (seen once: every server answered
            # srvr, one refused sessions for a minute).
            self.note(f"  heal: {ex!r}")
            self.violations.append(("bed", f"the servers did not all serve after the heal: {ex!r}"[:600]))
            self.settle_s = None
            return
        for path in list(self.acl_changed):
            self._open_acl(path)
        for e in list(self.crowds):
            self._uncrowd(e)
        self._sweep_crowds()
        for part in self.parts:
            for c in range(C):
                part.send(f"ncl {c}")
        t_calm = time.monotonic()
        self.t_calm_mono = time.monotonic_ns()
        last_ask = 0.0
        why = "?"
        while time.monotonic() - t_calm < LIVENESS_S:
            now = time.monotonic()
            if now - last_ask > 1.0:
                last_ask = now
                for part in self.parts:
                    for c in range(C):
                        for e in range(E):
                            part.send(f"vol {c} {e}")
            prev_why, why = why, self.settled()
            if why != prev_why and why is not None:
                self.note(f"  not settled: {why}")
            if why is None:
                self.note(f"settled {time.monotonic() - t_calm:.1f} s after the heal")
                self.settle_s = time.monotonic() - t_calm
                return
            time.sleep(0.2)
        self.settle_s = None
        self.violations.append(("liveness", f"not settled {LIVENESS_S:.0f} s after the heal: {why}"))

    def check_stuck(self):
        """After the calm, before quit: a participant whose stdin thread is
        still in a call it began more than STUCK_S ago (its SIGSTOPs not
        counted), or that is stopped though the driver resumed it, is named
        with the call and its threads' stacks. The liveness check such a
        participant fails says only that its candidacies did not come back
        (seed 20292900: its ACKs stopped, and nothing said where)."""
        now = time.monotonic_ns()
        for part in self.parts:
            if part.killed_mono is not None or part.proc.poll() is not None:
                continue
            state = part.proc_state()
            cur = Part.pending_command(part.words())
            if cur is not None:
                stopped = sum(min(now, b or now) - max(cur[0], a) for a, b in part.stops
                              if (b or now) > cur[0])
                if now - cur[0] - stopped < STUCK_S * 1e9:
                    cur = None
            if cur is None and not (state == "T" and not part.stopped):
                continue
            part.stuck_stacks = part.stacks_now()
            what = (f"`{' '.join(cur[1])}` began at {self.rel(cur[0])} and had not returned "
                    f"{(now - cur[0]) / 1e9:.1f} s later" if cur else
                    "stopped (SIGSTOP) though the driver resumed it")
            self.violations.append((
                "stuck-call", f"{part.name}: {what} (process state {state}); its threads: "
                + hung_summary(part.stuck_stacks)))

    def live_ids(self):
        """{(part, c, e): id} of the current handle of every live slot."""
        out = {}
        for part in self.parts:
            gens = {}
            for w in part.words():
                if w[0] == "ACK" and w[1] == "vol" and int(w[5]) == 0:
                    gens[(int(w[2]), int(w[3]))] = int(w[4])
                if w[0] == "ACK" and w[1] in ("des", "dcl"):
                    c = int(w[2])
                    for e in (range(E) if w[1] == "dcl" else [int(w[3])]):
                        gens.pop((c, e), None)
            for (c, e), h in gens.items():
                out[(part, c, e)] = f"{part.name}.c{c}.e{e}.h{h}"
        return out

    def settled(self):
        ids = self.live_ids()
        for e, path in enumerate(self.paths):
            try:
                kids = children(self.w.kz, path)
            except Exception as ex:
                return f"{path}: {ex!r}"
            cand = sorted((n for n in kids if CANDIDATE.match(n)), key=seqno)
            want = sorted(i for (pt, c, ee), i in ids.items() if ee == e)
            have = sorted(kids[n] for n in cand)
            if have != want:
                return f"{path}: nodes {have} != live candidacies {want}"
            leaders = [(pt, c) for pt in self.parts for c in range(C) if pt.current(c, e)]
            if len(leaders) != 1:
                return f"{path}: {len(leaders)} handles answer 1: " + \
                    ", ".join(f"{pt.name}.c{c}" for pt, c in leaders)
            pt, c = leaders[0]
            if not cand or kids[cand[0]] != ids.get((pt, c, e)):
                return f"{path}: {pt.name}.c{c} answers 1 but the first node is " \
                    f"{kids[cand[0]] if cand else None}"
        return None

    # -- the checker
    @staticmethod
    def crashes(parts):
        """A participant that ended with a status other than 0 unasked (a
        death the schedule did not cause), with the end of its stderr
        (explore_part.c writes a backtrace there on a fatal signal)."""
        out = []
        for part in parts:
            ws = part.words()
            # BYE before the driver's quit: stdin ended (STDIN-END says how)
            # and the participant left the run, with exit status 0.
            if not getattr(part, "quit_sent", True) and any(w[:1] == ["BYE"] for w in ws):
                why = next((" ".join(w) for w in ws if w[:1] == ["STDIN-END"]), "no STDIN-END")
                out.append(("crash", f"{part.name} ended before it was told to quit ({why})"))
                continue
            part.ended_alone()
            rc = part.exit_alone if part.exit_alone is not None else part.proc.poll()
            if rc in (0, None) or (part.exit_alone is None and part.killed_mono is not None):
                continue
            err = ""
            for _ in range(50):       # stderr's EOF comes with the exit
                err = getattr(part, "err", None)
                if err is not None:
                    break
                time.sleep(0.1)
            out.append(("crash", f"{part.name} exited with {rc}: {(err or '')[-1500:]}"))
        return out

    def excused(self, e, k1, k2, a, b):
        """An overlap [a, b] of handles k1, k2 (name, c) on path e that began
        after an operator deleted the node of one of them (or the path) and
        ended within EXCUSE_NS of that deletion. (k1 = k2, a = b: a term of k1
        that began so, for the token order: a deleted node that claims late
        carries its old, lower token.)"""
        for t_del, ee, ids, t_done in self.deletions:
            if ee != e or not (t_del <= a and b <= t_done + EXCUSE_NS):
                continue
            for name, c in (k1, k2):
                if any(i == ANY_NODE or i.startswith(f"{name}.c{c}.e{e}.") for i in ids):
                    return True
        return False

    @staticmethod
    def killed_run_end(part, since):
        """Where a run of 1 still open in a killed process's lines ends. The
        loop writes nothing while the value stays 1, so up to the kill it is
        taken to have answered 1, unless the process was stopped after the
        run's last line (`since`): a stopped loop answers nothing, and one
        that answered 1 again after its SIGCONT would have written a HOLE
        first (the stop is far longer than 5 ms), which reopens the run. So
        the run ends where that stop began. Blind spot: an answer between
        the SIGCONT and the SIGKILL whose line the kill cut off."""
        for a, _b in part.stops:
            if since <= a < part.killed_mono:
                return a
        return part.killed_mono

    def check(self):
        # e -> {(name, c): [(start, end, token, starts_a_term)]}; a run that
        # follows a HOLE continues the term of the run before it.
        runs = {e: {} for e in range(E)}
        events = {}
        for part in self.all_parts:
            ws = part.words()
            cur, tok = {}, {}

            def close(c, e, end, part=part, cur=cur, tok=tok):
                a, fresh = cur.pop((c, e))
                runs[e].setdefault((part.name, c), []).append((a, end, tok[(c, e)], fresh))
            for w in ws:
                if w[0] == "FLIP":
                    c, e, v, first, prev, token = (int(x) for x in w[1:7])
                    if v == 1:
                        cur[(c, e)] = (first, True)
                        tok[(c, e)] = token
                    elif (c, e) in cur:
                        close(c, e, prev)
                elif w[0] == "HOLE":
                    c, e, a, b = (int(x) for x in w[1:5])
                    if (c, e) in cur:
                        close(c, e, a)
                        cur[(c, e)] = (b, False)
                elif w[0] == "END":
                    c, e, v, last = (int(x) for x in w[1:5])
                    if (c, e) in cur:
                        close(c, e, last)
                elif w[0] == "EV" and w[4] in ("ELECTED", "DEPOSED"):
                    events.setdefault((part.name, w[1], w[2], w[3]), []).append((w[4], w[5]))
                    if w[4] == "DEPOSED" and w[5] == "transferred":
                        # Handovers done, asked or automatic (--priority): in the run's line.
                        self.counts["handed:over"] = self.counts.get("handed:over", 0) + 1
            for (c, e) in list(cur):
                if part.killed_mono is None:
                    self.violations.append(("history", f"{part.name} c{c} e{e}: a run of 1 "
                                            "with no end (no END, not killed)"))
                    cur.pop((c, e))
                    continue
                close(c, e, self.killed_run_end(part, cur[(c, e)][0]))
        self.runs = runs
        self.violations.extend(self.crashes(self.all_parts))
        for e in range(E):
            flat = sorted((a, b, k, t, f) for k, rs in runs[e].items() for a, b, t, f in rs)
            for i, (a, b, k, t, f) in enumerate(flat):
                for a2, b2, k2, t2, f2 in flat[i + 1:]:
                    if a2 >= b:
                        break
                    if k2 != k and not self.excused(e, k, k2, a2, min(b, b2)):
                        self.violations.append((
                            "two-leaders",
                            f"e{e}: {k[0]}.c{k[1]} [{self.rel(a)}, {self.rel(b)}] and {k2[0]}.c{k2[1]} "
                            f"[{self.rel(a2)}, {self.rel(b2)}] "
                            f"answered 1 at once for {(min(b, b2) - a2) / 1e6:.1f} ms"))
            # Terms in the order they began: tokens strictly increase (the
            # same handle may lead again on the same node after its lease
            # lapsed: the same token).
            last = None
            for a, b, k, t, f in flat:
                if t < 0 or not f:
                    continue
                if last is not None:
                    lt, lk, la = last
                    if (t < lt or (t == lt and k != lk)) and not self.excused(e, k, k, a, a):
                        self.violations.append((
                            "token", f"e{e}: token {t} of {k[0]}.c{k[1]} at {self.rel(a)} after "
                            f"{lt} of {lk[0]}.c{lk[1]} at {self.rel(la)}"))
                last = (t, k, a)
        for (part, c, e, h, ev_mono, list_mono, found) in self.resigned:
            if not found:
                continue
            # A volunteer of the same handle makes a new node: one after the
            # RESIGNED, or one queued behind the resign (called after it).
            mine = [w for w in part.words() if w[0] == "ACK" and len(w) >= 8
                    and w[2:5] == [str(c), str(e), str(h)] and w[5] == "0"]
            last_res = max((int(w[6]) for w in mine if w[1] in ("res", "cbres")
                            and int(w[6]) < ev_mono), default=0)
            again = any(w[1] == "vol" and int(w[6]) > last_res for w in mine)
            if not again:
                self.violations.append((
                    "resigned-node", f"{part.name}.c{c}.e{e}.h{h}: RESIGNED while its node "
                    f"{found} remained ({(list_mono - ev_mono) / 1e6:.0f} ms after the event)"))
        # zkelect_resign(): "is_leader answers 0 when this returns", until the
        # candidacy volunteers again. Runs are split at every stretch of more
        # than 5 ms without a call, so a run that ends more than 10 ms after
        # the resign returned holds a call that began after it and answered 1.
        for part in self.all_parts:
            ws = part.words()
            acks = [w for w in ws if w[0] == "ACK" and w[1] in ("res", "cbres", "vol")
                    and int(w[5]) == 0]
            for w in acks:
                if w[1] == "vol":
                    continue
                c, e, ret = int(w[2]), int(w[3]), int(w[7])
                again = min((int(v[6]) for v in acks if v[1] == "vol" and int(v[2]) == c
                             and int(v[3]) == e and int(v[6]) > ret), default=None)
                for a, b, t, f in runs[e].get((part.name, c), []):
                    if again is not None and a >= again:
                        continue
                    if a > ret or b > ret + 10_000_000:
                        self.violations.append((
                            "after-resign", f"{part.name}.c{c}.e{e}: is_leader 1 in "
                            f"[{self.rel(a)}, {self.rel(b)}] after {w[1]} returned at "
                            f"{self.rel(ret)}"))
            for w in ws:
                if w[0] == "RES1":
                    self.violations.append((
                        "after-resign", f"{part.name}.c{w[1]}.e{w[2]}.h{w[3]}: is_leader 1 "
                        f"{(int(w[5]) - int(w[4])) / 1e3:.0f} us after resign returned "
                        f"(asked by the resigning thread) at {self.rel(int(w[4]))}"))
        # Documented bounds of the calls (zkelect.h): volunteer and resign do
        # not block; destroy waits at most the session timeout. A call that a
        # SIGSTOP of its process overlapped is not judged.
        bound_ns = {"vol": CALL_SLACK_NS, "res": CALL_SLACK_NS, "cbres": CALL_SLACK_NS,
                    "des": int(T_MS * 1e6) + CALL_SLACK_NS}
        for part in self.all_parts:
            for w in part.words():
                if w[0] != "ACK" or w[1] not in bound_ns:
                    continue
                m0, m1 = int(w[6]), int(w[7])
                if m1 - m0 <= bound_ns[w[1]]:
                    continue
                if any(a <= m1 and (b is None or b >= m0) for a, b in part.stops):
                    continue
                self.violations.append((
                    "call-bound", f"{part.name}.c{w[2]}.e{w[3]}: {w[1]} returned after "
                    f"{(m1 - m0) / 1e6:.0f} ms at {self.rel(m0)}"))
        # Transfers (issue 33): a code zkelect.h allows among faults, and
        # within their bound: the timeout plus the handover's delete and
        # listing for zkelect_transfer, plus three session timeouts for the
        # outside request, and a session timeout of slack for a reconnect.
        xfer_ns = {"xfer": int((XFER_MS + 2 * T_MS) * 1e6) + CALL_SLACK_NS,
                   "oxfer": int((XFER_MS + 4 * T_MS) * 1e6) + CALL_SLACK_NS}
        for part in self.all_parts:
            for w in part.words():
                if w[0] != "ACK" or w[1] not in xfer_ns or len(w) < 10:
                    continue
                self.counts[f"{w[1]}:{w[8]}"] = self.counts.get(f"{w[1]}:{w[8]}", 0) + 1
                # Beside a build without transfers (--mixed), or while a
                # crowd of another library's candidates is in line (seed
                # 124450471), a candidate that cannot step back may stand
                # before the target: ENOTSUP, nothing changed.
                m0, m1 = int(w[6]), int(w[7])
                notsup_ok = w[8] == "ZKELECT_ENOTSUP" and (
                    getattr(self.w, "mixed", False) or
                    any(a <= m1 and (b is None or b >= m0)
                        for a, b in self.latch_crowds.get(int(w[3]), [])))
                if w[8] not in XFER_CODES and not notsup_ok:
                    self.violations.append((
                        "api", f"{part.name}.c{w[2]}.e{w[3]}: {w[1]} to {w[9]} returned {w[8]} "
                        f"at {self.rel(int(w[6]))}"))
                if m1 - m0 > xfer_ns[w[1]] and not any(a <= m1 and (b is None or b >= m0)
                                                      for a, b in part.stops):
                    self.violations.append((
                        "call-bound", f"{part.name}.c{w[2]}.e{w[3]}: {w[1]} to {w[9]} returned "
                        f"{w[8]} after {(m1 - m0) / 1e6:.0f} ms at {self.rel(m0)}"))
        # ESTATE only while another transfer on the path ran (zkelect.h: "another
        # transfer of this handle runs", "transfers of the leader, one after
        # another, kept the path busy for timeout_ms"): a transfer whose
        # state was left stuck answers it for good (issue 50, finding 3).
        # With --priority, and in a balanced group, transfers start by
        # themselves: not judged.
        spans = [(int(w[3]), int(w[6]), int(w[7]), part.name, w[1], w[2], w[8])
                 for part in self.all_parts for w in part.words()
                 if w[0] == "ACK" and w[1] in xfer_ns and len(w) >= 10]
        # A transfer call that never returned (its process killed, seed
        # 597042593) ran too: from its command up to its bound, its request
        # possibly in the path's data all that time. Calls of one handle and
        # path follow each other, so the last commands past the answers are
        # the unanswered ones.
        for part in self.all_parts:
            cmds, acks = {}, {}
            for w in part.words():
                if w[0] == "CMD" and len(w) >= 5 and w[2] in xfer_ns:
                    cmds.setdefault((w[2], w[3], w[4]), []).append(int(w[1]))
                elif w[0] == "ACK" and w[1] in xfer_ns and len(w) >= 10:
                    k = (w[1], w[2], w[3])
                    acks[k] = acks.get(k, 0) + 1
            for (verb, c, e), starts in cmds.items():
                for m0 in starts[acks.get((verb, c, e), 0):]:
                    spans.append((int(e), m0, m0 + xfer_ns[verb], part.name, verb, c, None))
        if not getattr(self.w, "priority", 0) and not self.group:
            for i, (e, m0, m1, name, verb, c, code) in enumerate(spans):
                if code != "ZKELECT_ESTATE":
                    continue
                if any(j != i and e2 == e and a <= m1 and b >= m0
                       for j, (e2, a, b, *_rest) in enumerate(spans)):
                    continue
                self.violations.append((
                    "transfer-estate", f"{name}.c{c}.e{e}: {verb} answered ZKELECT_ESTATE at "
                    f"{self.rel(m0)} with no other transfer on the path running"))
        # A child of fork() answers 0 and refuses every other call (issue 27
        # finding 11); a destroy from the handle's own callback, even under
        # a nested dispatch, is refused with EDEADLK (finding 3).
        for part in self.all_parts:
            for w in part.words():
                if w[0] == "FORK1":
                    self.violations.append((
                        "fork", f"{part.name}: a forked child's copy of c{w[1]}.e{w[2]} answered "
                        f"is_leader 1 at {self.rel(int(w[3]))}"))
                elif w[0] == "FORKRC" and w[3] != "ZKELECT_ESTATE":
                    self.violations.append((
                        "api", f"{part.name}: resign on an inherited handle in a forked child "
                        f"returned {w[3]}, not ZKELECT_ESTATE"))
                elif w[0] == "ACK" and w[1] == "cbdes" and len(w) > 9 and w[9] != "ZKELECT_EDEADLK":
                    self.violations.append((
                        "api", f"{part.name}.c{w[2]}.e{w[3]}.h{w[4]}: destroy from its own callback "
                        f"(after a nested dispatch) returned {w[9]}, not ZKELECT_EDEADLK"))
        self.check_fenced()
        self.check_pg()
        for part in self.all_parts:
            if part.stacks is not None:
                self.violations.append((
                    "hung", f"{part.name}: no BYE {QUIT_S:.0f} s after quit; its threads: "
                    + hung_summary(part.stacks)))
        for key, evs in events.items():
            leading = False
            for typ, reason in evs:
                if typ == "ELECTED" and leading:
                    self.violations.append(("events", f"{'.'.join(key)}: ELECTED while leading"))
                if typ == "DEPOSED" and not leading:
                    self.violations.append(("events",
                                            f"{'.'.join(key)}: DEPOSED({reason}) while not leading"))
                leading = typ == "ELECTED"


    def check_fenced(self):
        """Issue 54: the records of the fenced writes that committed, in
        commit order (their czxid): none may carry a token below one that a
        record before it carried (a later term wrote first: fenced-order).
        A write answered OK must have its record (fenced-lost); one refused
        (EFENCED, ENOTLEADER, EZK, EAUTH) must not (fenced-refused); an
        unknown outcome (ECONNLOSS, ETIMEDOUT...) is not judged."""
        fws = [(part, w) for part in self.all_parts for w in part.words()
               if w[0] == "FW" and len(w) >= 10]
        for _part, w in fws:
            self.counts[f"fw:{w[6]}"] = self.counts.get(f"fw:{w[6]}", 0) + 1
        if not fws:
            return
        for e, path in enumerate(self.paths):
            try:
                self.w.kz.sync_async(path + ".flog").get(timeout=OP_TIMEOUT_S)
                names = self.w.kz.get_children_async(path + ".flog").get(timeout=OP_TIMEOUT_S)
                stats = [(n, self.w.kz.exists_async(f"{path}.flog/{n}")) for n in names]
                recs = sorted((a.get(timeout=OP_TIMEOUT_S).czxid, n) for n, a in stats)
            except Exception as ex:   # NoNodeError too: the records' node is made first
                self.violations.append(("fenced-order", f"e{e}: the records cannot be read: {ex!r}"))
                continue
            self.judge_log(
                "fenced", [(int(n.split("-")[1]), n, czxid) for czxid, n in recs],
                [(f"{part.name}.c{w[1]}.e{e}", w[9], w[6], int(w[8])) for part, w in fws if int(w[2]) == e],
                lambda code: code in FENCED_REFUSED,
                lambda rec, top: (f"e{e}: {rec[1]} committed at zxid 0x{rec[2]:x}, after {top[1]} "
                                  f"(a later term's first fenced write) at zxid 0x{top[2]:x}"),
                ("a fenced write", "answered OK", "did not commit", "committed"))
            for part, w in fws:
                code = w[6]
                if int(w[2]) == e and code not in FENCED_REFUSED | FENCED_UNKNOWN | {"OK", "NONE"}:
                    self.violations.append((
                        "api", f"{part.name}.c{w[1]}.e{e}: a fenced write answered {code}"))


    def check_pg(self):
        """Issue 54, PostgreSQL: the record rows of each path in id order,
        which the fence's row lock makes their commit order: none may carry
        a token below one that a row before it carried (a deposed term's
        write committed after a later term's first: pg-order). A write whose
        COMMIT the participant saw succeed has its row (pg-lost); one the
        fence refused (ZKE01), or that failed before its COMMIT was sent,
        has none (pg-refused); UNKNOWN (the connection failed while COMMIT
        was on its way) is not judged."""
        pws = []
        for part in self.all_parts:
            for w in part.words():
                if w[0] != "PG":
                    continue
                m = PG_LINE.fullmatch(" ".join(w))
                if not m:
                    self.violations.append(("history", f"{part.name}: a PG line not understood: "
                                            f"{' '.join(w)[:200]!r}"))
                    continue
                pws.append((part, m))
                self.counts[f"pg:{m[6]}"] = self.counts.get(f"pg:{m[6]}", 0) + 1
                if m[9] != "-":
                    key = f"pgheld-{m[9]}:{m[6]}"
                    self.counts[key] = self.counts.get(key, 0) + 1
        pg = getattr(self.w, "pg", None)
        if not pg:
            return
        try:
            recs = pg_records(pg, self.paths)
        except (ValueError, OSError, subprocess.TimeoutExpired) as ex:
            self.violations.append(("pg-order", f"the records cannot be read: {ex!r}"[:600]))
            return
        who = {m[5]: (part, m) for part, m in pws}

        def named(wid):
            if wid not in who:
                return wid
            part, m = who[wid]
            return (f"{wid} ({part.name}.c{m[1]}.e{m[2]}.h{m[3]}, begun at {self.rel(int(m[7]))}"
                    + (f", held at {m[9]}" if m[9] != "-" else "") + ")")
        for e, path in enumerate(self.paths):
            self.judge_log(
                "pg", [(token, wid, rid) for rid, token, wid in recs[path]],
                [(f"{part.name}.c{m[1]}.e{e}", m[5], m[6], int(m[8])) for part, m in pws if int(m[2]) == e],
                PG_REFUSED.fullmatch,
                lambda rec, top: (f"e{e}: {named(rec[1])} with token {rec[0]} committed as row {rec[2]}, "
                                  f"after row {top[2]} of token {top[0]}, {named(top[1])} (a later "
                                  "term's first write there)"),
                ("a write", "whose COMMIT succeeded", "has no row", "has a row"))

    def judge_log(self, kind, recs, writes, refused, out_of_order, says):
        """The rules check_fenced and check_pg share, for one path. recs:
        the records that committed, (token, name, where), in commit order;
        writes: the participants' writes there, (who, name, code, at).
        <kind>-order: a record's token below one an earlier record carried;
        <kind>-lost: a write answered OK without its record;
        <kind>-refused: a write refused (refused(code)) with its record."""
        what, ok, missing, present = says
        top = None
        for rec in recs:
            if top is not None and rec[0] < top[0]:
                self.violations.append((f"{kind}-order", out_of_order(rec, top)))
            if top is None or rec[0] > top[0]:
                top = rec
        there = {name for _t, name, _w in recs}
        for who, name, code, at in writes:
            if code == "OK" and name not in there:
                self.violations.append((
                    f"{kind}-lost", f"{who}: {what} {ok} at {self.rel(at)} {missing} ({name})"))
            elif refused(code) and name in there:
                self.violations.append((
                    f"{kind}-refused", f"{who}: {what} answered {code} at {self.rel(at)} {present} ({name})"))


PRIORITY = ["crash", "two-leaders", "fenced-order", "fenced-lost", "fenced-refused",
            "pg-order", "pg-lost", "pg-refused", "fork", "after-resign", "token", "resigned-node", "events", "call-bound",
            "transfer-estate", "flicker", "orphan-first", "api", "stuck-call", "hung", "liveness", "history",
            "bed"]


SYSTEM_FRAME = re.compile(r"sysdeps|libc\.so|libio|_IO_|__GI_|__libc_|pthread_|clone|start_thread|futex|"
                          r"\?\? \(\)|__poll|__select|epoll_wait|nanosleep")


def hung_summary(stacks):
    """One entry per thread: its innermost frame outside the C library (the
    call it waits in), e.g. "zkelect_election_destroy () from libzkelect.so.1"."""
    out = []
    for block in stacks.split("\nThread ")[1:]:
        frames = [re.sub(r"^#\d+\s+(0x[0-9a-f]+ in )?", "", l) for l in block.splitlines()
                  if l.startswith("#")]
        ours = [f for f in frames if not SYSTEM_FRAME.search(f)]
        out.append((ours or frames or ["?"])[0][:120])
    return "; ".join(out) if out else stacks[:300]


def kinds_of(violations):
    return sorted({k for k, _ in violations})


def run_once(world, seed, schedule=None, duration=DURATION_S, verbose=False):
    schedule = make_schedule(seed, duration) if schedule is None else schedule
    r = Run(world, seed, schedule, duration, verbose)
    try:
        r.execute()
    finally:
        try:
            world.heal_servers()
        except Exception as ex:
            log(f"heal after run: {ex!r}")
    return r


def save_history(r, logdir):
    """Every participant's lines (with the schedule's log) for a post-mortem."""
    d = Path(logdir) / f"seed-{r.seed}-{int(time.time())}"
    d.mkdir(parents=True, exist_ok=True)
    for part in r.all_parts:
        with open(d / f"{part.name}.log", "w") as f:
            for recv, w in list(part.lines):
                f.write(f"{recv / 1e9 - r.t0:.3f} {' '.join(w)}\n")
        if part.stacks is not None:
            (d / f"{part.name}.stacks").write_text(part.stacks)
        if part.stuck_stacks is not None:
            (d / f"{part.name}.stuck-stacks").write_text(part.stuck_stacks)
        if getattr(part, "err", None):
            (d / f"{part.name}.stderr").write_text(part.err)
    (d / "schedule.log").write_text("\n".join(r.log) + "\n")
    return d


def report_failure(r, logdir=None):
    log(f"VIOLATION seed={r.seed}: {kinds_of(r.violations)}")
    if logdir:
        log(f"  histories: {save_history(r, logdir)}")
    for k, msg in r.violations[:20]:
        log(f"  {k}: {msg}")
    log(f"schedule of seed {r.seed} ({len(r.schedule)} steps), replay: "
        f"./dev explore --seed {r.seed}")
    for line in r.log:
        log("  " + line)


def shrink(world, r, budget_s, duration):
    """Drops chunks of the schedule (halves, then smaller) while the run still
    shows one of the same violation kinds; bounded by budget_s."""
    # The most telling kind only: a liveness failure alone has many causes,
    # and a shrink that kept "any of the same kinds" could drift to another.
    got = kinds_of(r.violations)
    want = {next(k for k in PRIORITY + got if k in got)}
    best = list(r.schedule)
    deadline = time.monotonic() + budget_s
    n = 2
    tries = 0
    while len(best) > 1 and time.monotonic() < deadline:
        chunk = max(1, len(best) // n)
        shrunk = False
        for i in range(0, len(best), chunk):
            if time.monotonic() >= deadline:
                break
            cand = best[:i] + best[i + chunk:]
            if not cand:
                continue
            dur = max(s["t"] for s in cand) + 3.0
            tries += 1
            rr = run_once(world, r.seed, cand, dur)
            got = set(kinds_of(rr.violations))
            log(f"shrink try {tries}: {len(cand)} steps -> {sorted(got) or 'passes'} "
                f"(want {sorted(want)})")
            if got & want:
                best = cand
                shrunk = True
                break
        if not shrunk:
            if chunk == 1:
                break
            n = min(len(best), n * 2)
    return best


def write_case(seed, schedule, violations, rev=None):
    d = HERE / "cases"
    d.mkdir(exist_ok=True)
    path = d / f"seed-{seed}.json"
    case = {"seed": seed, "found_on": rev, "violations": kinds_of(violations),
            "first": violations[0][1] if violations else None,
            "T_ms": T_MS, "P": P, "C": C, "E": E,
            "duration_s": max(s["t"] for s in schedule) + 3.0, "schedule": schedule}
    path.write_text(json.dumps(case, indent=1) + "\n")
    return path


def worker(args, wid, results):
    tmp = tempfile.mkdtemp(prefix=f"explore-w{wid}-")
    world = World(args.build, tmp, args.mixed, args.priority, args.tick_ms, args.min_session_ms,
                  args.throttle, args.margin_ms, pg="pgwrite" not in args.without,
                  pg_unfenced=args.pg_unfenced)
    try:
        k = 0
        t_stop = time.monotonic() + args.minutes * 60 if args.minutes else None
        while True:
            if args.seeds:
                if k >= len(args.seeds):
                    break
                seed = args.seeds[k]
                if k % args.workers != wid:
                    k += 1
                    continue
            else:
                if t_stop and time.monotonic() >= t_stop:
                    break
                if args.runs and k * args.workers + wid >= args.runs:   # --runs in all
                    break
                seed = args.seed0 + k * args.workers + wid
            k += 1
            t0 = time.monotonic()
            duration = args.duration
            schedule = make_schedule(seed, duration, {k: w for k, w in
                                                      {**KINDS, **EXTRA_KINDS, **FENCED_KINDS,
                                                       **PG_KINDS, **BALANCE_KINDS}.items()
                                                      if k not in args.without})
            if args.case:
                case = json.loads(Path(args.case).read_text())
                seed, schedule, duration = case["seed"], case["schedule"], case["duration_s"]
            r = run_once(world, seed, schedule, duration, verbose=args.verbose)
            dt = time.monotonic() - t0
            log(f"run seed={seed} steps={len(r.schedule)} {dt:.0f} s "
                f"settled={'%.1f s' % r.settle_s if r.settle_s is not None else 'no'} "
                f"violations={kinds_of(r.violations) or 'none'}"
                + "".join(f" {k}={v}" for k, v in sorted(r.counts.items()) if ":" in k))
            res = {"seed": seed, "steps": r.counts, "seconds": dt,
                   "violations": r.violations, "settle_s": r.settle_s}
            if r.violations:
                report_failure(r, args.logdir)
                if args.shrink_minutes > 0 and not args.case:
                    best = shrink(world, r, args.shrink_minutes * 60, duration)
                    path = write_case(seed, best, r.violations, args.rev)
                    log(f"shortest failing schedule: {len(best)} of {len(r.schedule)} steps "
                        f"-> {path}")
                    res["case"] = str(path)
            results.append(res)
            if r.violations and args.stop_on_violation:
                break
            if args.stop_on and args.stop_on in kinds_of(r.violations):
                break
    finally:
        world.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, action="append", dest="seeds",
                    help="run this seed (repeatable); default: new seeds from --seed0")
    ap.add_argument("--seed0", type=int, default=None)
    ap.add_argument("--tick-ms", type=int, default=200, help="the servers' tickTime")
    ap.add_argument("--min-session-ms", type=int, default=0,
                    help="the servers' minSessionTimeout (0: ZooKeeper's default, 2 x tickTime)")
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--duration", type=float, default=DURATION_S, help="seconds of schedule")
    ap.add_argument("--build", default=os.environ.get("ZKELECT_BUILD_DIR", str(REPO / "build")))
    ap.add_argument("--rev", default=None, help="(recorded in cases) the commit explored")
    ap.add_argument("--priority", type=int, default=0, metavar="N",
                    help="the last process's candidacies have election.priority N (1-255): "
                         "automatic transfers among the faults")
    ap.add_argument("--mixed", default=None, metavar="BUILD_DIR",
                    help="every other participant process runs this build (./dev explore --mix REV)")
    ap.add_argument("--mutation", default=None,
                    help="the build has this safety rule broken (./dev explore --mutation): "
                         "stop at the first violation; exit 0 when one was found (caught)")
    ap.add_argument("--without", action="append", default=[],
                    choices=sorted({**KINDS, **EXTRA_KINDS, **FENCED_KINDS, **PG_KINDS,
                                    **BALANCE_KINDS}),
                    metavar="KIND", help="leave this step kind out of the schedules (repeatable)")
    ap.add_argument("--throttle", action="store_true",
                    help="servers with a RequestThrottler of 4 and throttledOpWaitTime 30 ms, "
                         "under a load of reads: ZTHROTTLEDOP replies occur")
    ap.add_argument("--margin-ms", type=int, default=0, metavar="MS",
                    help="every participant configures lease.margin.ms MS")
    ap.add_argument("--pg-unfenced", action="store_true",
                    help="(a test of the checker) zkelect.fence() lets every token pass: the "
                         "pgwrite steps' late writes must be reported as pg-order; stop at the "
                         "first run that reports it; exit 0 when one did (caught)")
    ap.add_argument("--case", default=None, help="replay a case file")
    ap.add_argument("--shrink-minutes", type=float, default=0)
    ap.add_argument("--stop-on-violation", action="store_true")
    ap.add_argument("--stop-on", default=None, metavar="KIND",
                    help="stop after the first run with a violation of this kind (an old "
                         "build shows other, known ones in every run)")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--logdir", default=os.path.join(tempfile.gettempdir(), "zkelect-explore"),
                    help="where the histories of failing runs go")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.seed0 is None:
        args.seed0 = time.time_ns() % 1_000_000_000
    if not args.seeds and not args.minutes and not args.runs and not args.case:
        args.runs = 1
    if args.case:
        args.runs = 1
    if args.mutation:
        args.stop_on_violation = True
        args.shrink_minutes = 0
    if args.pg_unfenced:
        if "pgwrite" in args.without:
            ap.error("--pg-unfenced needs the pgwrite steps")
        args.stop_on = "pg-order"
        args.shrink_minutes = 0
    log(f"explore: build {args.build}" + (f" mixed with {args.mixed}" if args.mixed else "")
        + f", {P} processes x {C} clients x {E} paths, T {T_MS} ms, "
        f"{args.duration:.0f} s schedules, "
        + (f"seeds {args.seeds}" if args.seeds else f"seeds from {args.seed0}"))
    t0 = time.monotonic()
    if args.workers > 1:
        mgr = multiprocessing.Manager()
        results = mgr.list()
        ps = [multiprocessing.Process(target=worker, args=(args, w, results))
              for w in range(args.workers)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        results = list(results)
    else:
        results = []
        worker(args, 0, results)
    steps = {}
    for r in results:
        for k, n in r["steps"].items():
            steps[k] = steps.get(k, 0) + n
    bad = [r for r in results if r["violations"]]
    log("\nSUMMARY")
    log(f"  runs: {len(results)} in {(time.monotonic() - t0) / 60:.1f} min")
    log("  steps by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(steps.items())))
    log(f"  runs with violations: {len(bad)}")
    for r in bad:
        log(f"    seed {r['seed']}: {kinds_of(r['violations'])}: {r['violations'][0][1]}"
            + (f" (case {r['case']})" if r.get("case") else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    if args.pg_unfenced:
        caught = [r for r in results if "pg-order" in kinds_of(r["violations"])]
        log("  --pg-unfenced: " + (
            f"pg-order CAUGHT by seed {caught[0]['seed']} after {len(results)} run(s), "
            f"{(time.monotonic() - t0) / 60:.1f} min" if caught else
            f"pg-order NOT caught in {len(results)} run(s)"))
        return 0 if caught else 1
    if args.mutation:
        log(f"  mutation {args.mutation}: " + (
            f"CAUGHT by seed {bad[0]['seed']} after {len(results)} run(s)" if bad else
            f"NOT caught in {len(results)} run(s)"))
        return 0 if bad else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The idle cost of holding leadership and of waiting in line: what
ZooKeeper writes and receives per second while one session leads E
elections (and, with --follow-holder, a second session waits as heir in
each and a third behind it) and nothing else happens.

  bench/idle_cost.py --connect HOSTS --zk-ports P1,P2,.. --json OUT
                     --holder NAME=CMD [--holder ...] [--elections 1,100,1000]
                     [--session-timeout-ms 10000] [--window 8]
                     [--more-elections NAME=E[,E...]]

Each holder CMD (shell words) takes --connect, --path, --elections and
--session-timeout-ms, prints "READY E" once it leads every election, holds
them until its stdin ends, then exits 0 if it still led all of them
(bench/idlehold.c for libzkelect, participants/kazoo/kazoo_idle.py,
participants/curator/CuratorIdle.java). The writes are counted as the
servers count them: the growth of the quorum's last zxid (one per write,
keepalives included) over the window, read from the leader's `srvr`;
the requests as the servers count them: the growth of the packets every
server received (`srvr`'s "Received", pings included) over the window.

  --follow-holder NAME=CMD  the same holder's follower (it takes --follow 1
                            and prints "READY E" once FOLLOWING in every
                            election): after the leader's window, one joins
                            (the heir's window), then another (the third's);
                            each role's figures are its window's less the
                            window before (issue 50 finding 8: a follower's
                            requests at rest grew with E).
  --more-elections NAME=E   more rows for that holder alone (./dev bench
                            --idle-100k: libzkelect=100000, where Curator
                            and kazoo would take many minutes to join).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time

try:
    from bed.zkbed import four_letter
except ImportError as e:
    sys.exit("idle_cost: %s: run it with tests/ on PYTHONPATH (./dev bench does)" % e)


def zxid_of_leader(ports):
    """(the leader's last zxid counter, its port): the quorum's writes."""
    for p in ports:
        try:
            out = four_letter(p, "srvr")
        except OSError:
            continue
        if re.search(r"Mode: (leader|standalone)", out):
            m = re.search(r"Zxid: 0x([0-9a-f]+)", out)
            if m:
                return int(m.group(1), 16), p
    raise RuntimeError("no leader answered srvr on %s" % ports)


def received(ports):
    """Packets received by all the servers (srvr's Received)."""
    n = 0
    for p in ports:
        m = re.search(r"Received: (\d+)", four_letter(p, "srvr"))
        if m:
            n += int(m.group(1))
    return n


def read_line(proc, timeout):
    """The holder's next stdout line, or None after `timeout` seconds."""
    got = []
    t = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return got[0].strip() if got else None


def remove_tree(connect, path):
    """Delete what a holder left under path. Left alone, empty parents that
    Curator makes as container nodes would be reaped by the servers later,
    one write each, inside the next holder's window. The election paths
    (E of them, 100,000 with --more-elections) go pipelined, 1,000 in
    flight, not one round trip each."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError
    zk = KazooClient(hosts=connect, timeout=10)
    zk.start(timeout=30)
    try:
        try:
            children = zk.get_children(path)
        except NoNodeError:
            return
        for i in range(0, len(children), 1000):
            pending = [zk.delete_async(path + "/" + c) for c in children[i:i + 1000]]
            for d in pending:
                try:
                    d.get(timeout=60)
                except Exception:   # not empty (a Curator layout) or gone: the sweep below
                    pass
        try:
            zk.delete(path, recursive=True)
        except NoNodeError:
            pass
    finally:
        zk.stop()
        zk.close()


def start(argv, env=None):
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    t0 = time.monotonic()
    line = read_line(p, 600)   # 100,000 joins on a loaded machine take minutes
    if not line or not line.startswith("READY"):
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait(10)
        raise RuntimeError("holder did not get ready: %r %s" % (line, p.stderr.read()))
    return p, round(time.monotonic() - t0, 3)


def window_rates(ports, window):
    """(writes/s, requests/s) over a window at rest, and the writes."""
    z0, port = zxid_of_leader(ports)
    r0 = received(ports)
    m0 = time.monotonic()
    time.sleep(window)    # a rate over a window, not a wait for a state
    z1, port1 = zxid_of_leader(ports)
    r1 = received(ports)
    m1 = time.monotonic()
    if port1 != port or (z1 >> 32) != (z0 >> 32):
        raise RuntimeError("the ensemble's leader changed during the window")
    w = (z1 & 0xFFFFFFFF) - (z0 & 0xFFFFFFFF)
    return w / (m1 - m0), (r1 - r0) / (m1 - m0), w, round(m1 - m0, 3)


def measure(cmd, connect, ports, path, e, session_ms, window, settle, env=None, follow_cmd=None,
            base_rps=0.0):
    """The leader's row; with follow_cmd, the heir's and the third's too.
    base_rps: the packets the servers receive with no holder (the srvr
    asks of this script among them), taken off the leader's requests."""
    base = ["--connect", connect, "--path", path, "--elections", str(e),
            "--session-timeout-ms", str(session_ms)]
    roles = [("leader", cmd + base)]
    if follow_cmd:
        roles += [("heir", follow_cmd + base + ["--follow", "1"]),
                  ("third", follow_cmd + base + ["--follow", "1"])]
    res = {"elections": e}
    procs = []
    try:
        before_w, before_r = 0.0, base_rps
        for role, argv in roles:
            p, ready = start(argv, env)
            procs.append((role, p))
            time.sleep(settle)    # the joins' writes are over; count only the rest
            wps, rps, writes, win = window_rates(ports, window)
            row = {"ready_s": ready, "writes_per_s": round(wps - before_w, 3),
                   "requests_per_s": round(rps - before_r, 3)}
            before_w, before_r = wps, rps
            if role == "leader":
                # The row as it always was, for the report's target.
                res.update(ready_s=ready, writes=writes, window_s=win,
                           writes_per_s=round(wps, 3), requests_per_s=round(rps - base_rps, 3))
            res.setdefault("roles", {})[role] = row
        held = True
        # The followers end first: the leader's end would make them lead.
        for role, p in reversed(procs):
            out, err = p.communicate(timeout=120)   # closes stdin: the holder ends
            if p.returncode != 0:
                held = False
                res.setdefault("holder_exit", {})[role] = p.returncode
                res.setdefault("holder_said", {})[role] = (out + err)[-500:]
        res["held_throughout"] = held
    finally:
        for _, p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait(10)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connect", required=True)
    ap.add_argument("--zk-ports", required=True, help="client ports of the servers, for srvr")
    ap.add_argument("--json", required=True)
    ap.add_argument("--holder", action="append", required=True, help="NAME=CMD")
    ap.add_argument("--follow-holder", action="append", default=[],
                    help="NAME=CMD: that holder's follower (see above)")
    ap.add_argument("--elections", default="1,100,1000")
    ap.add_argument("--more-elections", action="append", default=[],
                    help="NAME=E[,E...]: more rows for that holder alone")
    ap.add_argument("--session-timeout-ms", type=int, default=10000)
    ap.add_argument("--window", type=float, default=8.0)
    ap.add_argument("--settle", type=float, default=3.0)
    a = ap.parse_args()
    ports = [int(x) for x in a.zk_ports.split(",")]
    doc = {"session_timeout_ms": a.session_timeout_ms, "window_s": a.window, "results": {}}
    # What the ensemble writes with no holder at all: every row is read
    # against it (it should be 0).
    z0, _ = zxid_of_leader(ports)
    r0 = received(ports)
    m0 = time.monotonic()
    time.sleep(a.window)
    z1, _ = zxid_of_leader(ports)
    r1 = received(ports)
    doc["baseline_writes_per_s"] = round(((z1 - z0) & 0xFFFFFFFF) / (time.monotonic() - m0), 3)
    doc["baseline_requests_per_s"] = round((r1 - r0) / (time.monotonic() - m0), 3)
    follow = dict(h.partition("=")[::2] for h in a.follow_holder)
    more = {}
    for m in a.more_elections:
        name, _, es = m.partition("=")
        more.setdefault(name, []).extend(int(x) for x in es.split(","))
    for h in a.holder:
        name, _, cmd = h.partition("=")
        doc["results"][name] = []
        for e in [int(x) for x in a.elections.split(",")] + more.get(name, []):
            path = "/idle_%s_%d_%d" % (name, e, os.getpid())
            try:
                r = measure(shlex.split(cmd), a.connect, ports, path, e, a.session_timeout_ms,
                            a.window, a.settle,
                            follow_cmd=shlex.split(follow[name]) if name in follow else None,
                            base_rps=doc["baseline_requests_per_s"])
            except Exception as ex:      # one holder failing must not lose the others
                r = {"elections": e, "error": str(ex)[:500]}
            remove_tree(a.connect, path)
            print("idle %s E=%d: %s" % (name, e, r), file=sys.stderr, flush=True)
            doc["results"][name].append(r)
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()

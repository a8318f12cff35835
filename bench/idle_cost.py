#!/usr/bin/python3
"""The idle cost of holding leadership: what ZooKeeper writes per second
while one session leads E elections and nothing else happens.

  bench/idle_cost.py --connect HOSTS --zk-ports P1,P2,.. --json OUT
                     --holder NAME=CMD [--holder ...] [--elections 1,100,1000]
                     [--session-timeout-ms 10000] [--window 8]

Each holder CMD (shell words) takes --connect, --path, --elections and
--session-timeout-ms, prints "READY E" once it leads every election, holds
them until its stdin ends, then exits 0 if it still led all of them
(bench/idlehold.c for libzkelect, participants/kazoo/kazoo_idle.py,
participants/curator/CuratorIdle.java). The writes are counted as the
servers count them: the growth of the quorum's last zxid (one per write,
keepalives included) over the window, read from the leader's `srvr`.
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
    one write each, inside the next holder's window."""
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=connect, timeout=10)
    zk.start(timeout=30)
    try:
        zk.delete(path, recursive=True)
    except Exception:           # NoNodeError: nothing was left
        pass
    finally:
        zk.stop()
        zk.close()


def measure(cmd, connect, ports, path, e, session_ms, window, settle, env=None):
    argv = cmd + ["--connect", connect, "--path", path, "--elections", str(e),
                  "--session-timeout-ms", str(session_ms)]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    res = {"elections": e}
    try:
        t0 = time.monotonic()
        line = read_line(p, 180)
        if not line or not line.startswith("READY"):
            raise RuntimeError("holder did not get ready: %r %s" % (line, p.stderr.read()
                                                                   if p.poll() is not None else ""))
        res["ready_s"] = round(time.monotonic() - t0, 3)
        time.sleep(settle)    # the joins' writes are over; count only the rest
        z0, port = zxid_of_leader(ports)
        m0 = time.monotonic()
        time.sleep(window)    # a rate over a window, not a wait for a state
        z1, port1 = zxid_of_leader(ports)
        m1 = time.monotonic()
        if port1 != port or (z1 >> 32) != (z0 >> 32):
            raise RuntimeError("the ensemble's leader changed during the window")
        res["writes"] = (z1 & 0xFFFFFFFF) - (z0 & 0xFFFFFFFF)
        res["window_s"] = round(m1 - m0, 3)
        res["writes_per_s"] = round(res["writes"] / (m1 - m0), 3)
        out, err = p.communicate(timeout=120)   # closes stdin: the holder ends
        res["held_throughout"] = p.returncode == 0
        if p.returncode != 0:
            res["holder_exit"] = p.returncode
            res["holder_said"] = (out + err)[-500:]
    finally:
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
    ap.add_argument("--elections", default="1,100,1000")
    ap.add_argument("--session-timeout-ms", type=int, default=10000)
    ap.add_argument("--window", type=float, default=8.0)
    ap.add_argument("--settle", type=float, default=3.0)
    a = ap.parse_args()
    ports = [int(x) for x in a.zk_ports.split(",")]
    doc = {"session_timeout_ms": a.session_timeout_ms, "window_s": a.window, "results": {}}
    # What the ensemble writes with no holder at all: every row is read
    # against it (it should be 0).
    z0, _ = zxid_of_leader(ports)
    m0 = time.monotonic()
    time.sleep(a.window)
    z1, _ = zxid_of_leader(ports)
    doc["baseline_writes_per_s"] = round(((z1 - z0) & 0xFFFFFFFF) / (time.monotonic() - m0), 3)
    for h in a.holder:
        name, _, cmd = h.partition("=")
        doc["results"][name] = []
        for e in [int(x) for x in a.elections.split(",")]:
            path = "/idle_%s_%d_%d" % (name, e, os.getpid())
            try:
                r = measure(shlex.split(cmd), a.connect, ports, path, e, a.session_timeout_ms,
                            a.window, a.settle)
            except Exception as ex:      # one holder failing must not lose the others
                r = {"elections": e, "error": str(ex)[:500]}
            remove_tree(a.connect, path)
            print("idle %s E=%d: %s" % (name, e, r), file=sys.stderr, flush=True)
            doc["results"][name].append(r)
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()

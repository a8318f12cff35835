#!/usr/bin/python3
"""Where a graceful failover's time goes, seen from inside one process.

  bench/rotation_split.py [--candidates 5] [--failovers 40] [--gap 0.3] [--warmup 100]

Starts the bench ensemble (bench/run.py's settings), puts N candidacies on
their own sessions in this process (through the C API, ctypes), and runs a
rotation: the leader resigns, the next one leads, the old one re-joins at
the back. Per failover it splits the time with the library's own event
stamps:

  resign -> DEPOSED     zkelect_resign() until the resigner's loop carried
                        it out (the delete goes out right after)
  DEPOSED -> ELECTED    the delete, its notification, the heir's claim
  DEPOSED -> RESIGNED   the delete's own reply to the resigner
  in-process failover   the heir's stats: its loop seeing the deletion to
                        ELECTED

Needs the build's libzkelect (ZKELECT_BUILD_DIR) and tests/ on PYTHONPATH
(the test bed, `bed`); ./dev's test environment sets both.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

from run import start_ensemble

try:
    from bed import zkc
except ImportError as e:
    sys.exit("rotation_split: %s: run it with tests/ on PYTHONPATH (./dev's test environment)" % e)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=int, default=5)
    ap.add_argument("--failovers", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.3, help="seconds between failovers")
    ap.add_argument("--warmup", type=int, default=100,
                    help="failovers first, back to back and not counted (the servers' JIT)")
    a = ap.parse_args()
    if not 2 <= a.candidates <= 100 or not 1 <= a.failovers <= 10000:
        sys.exit("rotation_split: 2..100 candidates, 1..10000 failovers")
    ens = start_ensemble()
    try:
        api = zkc.Api(os.environ.get("ZKELECT_BUILD_DIR", "build"))
        api.lib.zkelect_event_time_ns.restype = ctypes.c_int64
        api.lib.zkelect_event_time_ns.argtypes = [ctypes.c_void_p]
        plain = api.decode

        def decode(ev):
            t = api.lib.zkelect_event_time_ns(ev)
            d = plain(ev)
            d["time_ns"] = t
            return d
        api.decode = decode
        path = "/rotation_split_%d" % os.getpid()
        es = []
        for k in range(a.candidates):
            c = api.client(zk_hosts=ens.connect_string, zk_session_timeout_ms=2000,
                           zk_log_level="none")
            if api.lib.zkelect_client_await_connected(c, 15000) != 0:
                sys.exit("rotation_split: no session")
            e = api.election(c, path, str(k))
            api.lib.zkelect_volunteer(e)
            api.wait_event(e, ("ELECTED",) if k == 0 else ("FOLLOWING",), 15)
            es.append(e)
        lead, rows = 0, []
        for n in range(a.warmup + a.failovers):
            if n >= a.warmup:
                time.sleep(a.gap)  # the ensemble idles between failovers, as in the driver
            nxt = (lead + 1) % a.candidates
            t0 = time.time_ns()
            api.lib.zkelect_resign(es[lead])
            elected, _ = api.wait_event(es[nxt], ("ELECTED",), 10)
            deposed, _ = api.wait_event(es[lead], ("DEPOSED",), 5)
            resigned, _ = api.wait_event(es[lead], ("RESIGNED",), 5)
            inproc = api.stats(es[nxt])["failover"]["last_us"] / 1e3
            if n >= a.warmup:
                rows.append(((deposed["time_ns"] - t0) / 1e6,
                              (elected["time_ns"] - deposed["time_ns"]) / 1e6,
                              (resigned["time_ns"] - deposed["time_ns"]) / 1e6, inproc))
            if api.lib.zkelect_volunteer(es[lead]) != 0:
                sys.exit("rotation_split: the old leader could not re-join")
            api.wait_event(es[lead], ("FOLLOWING",), 5)
            lead = nxt
        names = ("resign -> DEPOSED", "DEPOSED -> ELECTED (heir)", "DEPOSED -> RESIGNED (reply)",
                 "in-process failover")
        print("%d candidates, %d failovers after %d not counted, gap %.2f s; ms, median (p90):"
              % (a.candidates, a.failovers, a.warmup, a.gap))
        for i, name in enumerate(names):
            xs = sorted(r[i] for r in rows)
            print("  %-28s %.3f (%.3f)" % (name, statistics.median(xs), xs[int(0.9 * (len(xs) - 1))]))
    finally:
        ens.stop()


if __name__ == "__main__":
    main()

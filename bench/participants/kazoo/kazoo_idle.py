#!/usr/bin/python3
"""The idle-cost bench's kazoo holder (bench/idle_cost.py): one KazooClient
(one ZooKeeper session) holding E elections on distinct paths with kazoo's
Lock, the recipe under its Election, then doing nothing until stdin ends.

  kazoo_idle.py --connect HOSTS --path P --elections E --session-timeout-ms T

Prints "READY E join_ms=J rss_kib=R rss0_kib=R0" once every lock is held (J
from the first acquire, R and R0 the resident set then and before the first
lock), "LOST" if the session was lost before stdin ended, and "TEARDOWN
ms=M" once every lock is released and the client stopped (the scale part of
./dev bench reads the figures, issue 35).
"""
import argparse
import sys
import threading
import time

from kazoo.client import KazooClient, KazooState
from kazoo.recipe.lock import Lock


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connect", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--elections", type=int, default=1)
    ap.add_argument("--session-timeout-ms", type=int, default=10000)
    a = ap.parse_args()
    zk = KazooClient(hosts=a.connect, timeout=a.session_timeout_ms / 1000)
    lost = threading.Event()
    zk.add_listener(lambda s: lost.set() if s != KazooState.CONNECTED else None)
    zk.start(timeout=30)
    locks = []
    rss0, t0 = rss_kib(), time.monotonic()
    for i in range(a.elections):
        lk = Lock(zk, "%s/e%d" % (a.path, i), "idle")
        if not lk.acquire(timeout=60):
            sys.exit("kazoo_idle: lock e%d not acquired" % i)
        locks.append(lk)
    print("READY %d join_ms=%d rss_kib=%d rss0_kib=%d"
          % (a.elections, (time.monotonic() - t0) * 1000, rss_kib(), rss0), flush=True)
    for _ in sys.stdin:
        pass
    was_lost = lost.is_set()     # before stop(), which is a loss too
    if was_lost:
        print("LOST", flush=True)
    t1 = time.monotonic()
    for lk in locks:
        lk.release()
    zk.stop()
    zk.close()
    print("TEARDOWN ms=%d" % ((time.monotonic() - t1) * 1000), flush=True)
    return 3 if was_lost else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The idle-cost bench's kazoo holder (bench/idle_cost.py): one KazooClient
(one ZooKeeper session) holding E elections on distinct paths with kazoo's
Lock, the recipe under its Election, then doing nothing until stdin ends.

  kazoo_idle.py --connect HOSTS --path P --elections E --session-timeout-ms T

Prints "READY E" once every lock is held, "LOST" if the session was lost
before stdin ended.
"""
import argparse
import sys
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.recipe.lock import Lock


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
    for i in range(a.elections):
        lk = Lock(zk, "%s/e%d" % (a.path, i), "idle")
        if not lk.acquire(timeout=60):
            sys.exit("kazoo_idle: lock e%d not acquired" % i)
        locks.append(lk)
    print("READY %d" % a.elections, flush=True)
    for _ in sys.stdin:
        pass
    was_lost = lost.is_set()     # before stop(), which is a loss too
    if was_lost:
        print("LOST", flush=True)
    for lk in locks:
        lk.release()
    zk.stop()
    zk.close()
    return 3 if was_lost else 0


if __name__ == "__main__":
    sys.exit(main())

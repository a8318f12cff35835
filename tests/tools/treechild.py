#!/usr/bin/env python3
"""A command for `zkelect run` tests that records the life of every process it
makes: each sends "start <pid> <role> <ZKELECT_ID> <ZKELECT_TOKEN> <ns>" (ns of
CLOCK_MONOTONIC, shared by every process of the machine) as one datagram to
the Unix socket named by $TREECHILD_SOCK; the test watches each pid's end
with a pidfd.

  treechild.py plain        runs until SIGTERM
  treechild.py ignore       ignores SIGTERM
  treechild.py daemon       daemonizes a grandchild (fork, setsid, fork) that
                            ignores SIGTERM, and runs on itself
  treechild.py daemon-exit  the same, then exits 0 at once
Every process ends by itself after 5 minutes at most.
"""

import os
import signal
import socket
import sys
import time

SOCK = os.environ["TREECHILD_SOCK"]


def record(kind, role):
    msg = (f"{kind} {os.getpid()} {role} {os.environ.get('ZKELECT_ID', '-')} "
           f"{os.environ.get('ZKELECT_TOKEN', '0')} {time.monotonic_ns()}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(msg.encode(), SOCK)


def live(seconds=300):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.5)
    os._exit(0)


def daemonize_grandchild():
    """Returns in the child once the grandchild has recorded its start."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        record("start", "grandchild")
        os.write(w, b"x")
        os.close(w)
        live()
    os.close(w)
    os.waitpid(pid, 0)
    os.read(r, 1)
    os.close(r)


def main():
    mode = sys.argv[1]
    if mode == "ignore":
        signal.signal(signal.SIGTERM, lambda *_: record("term", "child"))
    else:
        signal.signal(signal.SIGTERM, lambda *_: (record("term", "child"), os._exit(0)))
    record("start", "child")
    if mode.startswith("daemon"):
        daemonize_grandchild()
        if mode == "daemon-exit":
            os._exit(0)
    live()


main()

#!/usr/bin/python3
"""A participant of the line protocol (docs/design.md, "The participant line
protocol") on kazoo's Election recipe (Debian's python3-kazoo): the Python
side that ./dev bench compares libzkelect with.

  kazoo_participant.py --connect HOSTS --path P --first-id I --count K
                       --session-timeout-ms T

K participants, each with its own KazooClient (its own ZooKeeper session)
and its own thread blocked in Election.run(). The election is kazoo's own:
its Lock recipe (each contender watches its predecessor). Two things are
added, because kazoo has no callback for them: FOLLOWER is printed the first
time the contender finds a predecessor (a subclass of the Lock, no extra
request), and LOST on SUSPENDED/LOST of the session, as kazoo's documentation
asks an application holding a lock to do.
"""
import argparse
import logging
import sys
import threading
import time

from kazoo.client import KazooClient, KazooState
from kazoo.recipe.election import Election
from kazoo.recipe.lock import Lock

_stdout = threading.Lock()


def say(text):
    with _stdout:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def event(kind, pid):
    ns = time.time_ns()         # the moment our view changed, before the lock
    say("EVENT %s %d %d" % (kind, pid, ns))


class QueuedLock(Lock):
    """kazoo's Lock, calling on_queued() once when it first has a predecessor."""

    def __init__(self, client, path, identifier, on_queued):
        super().__init__(client, path, identifier)
        self._on_queued = on_queued

    def _get_predecessor(self, node):
        pred = super()._get_predecessor(node)
        if pred is not None and self._on_queued:
            hook, self._on_queued = self._on_queued, None
            hook()
        return pred


class Member:
    def __init__(self, pid, hosts, path, session_s):
        self.id = pid
        self.path = path
        self.client = KazooClient(hosts=hosts, timeout=session_s)
        self.client.add_listener(self._session_changed)
        self.mu = threading.Lock()
        self.leading = False       # LEADER printed, RESIGNED/LOST not yet
        self.leaving = False
        self.release = threading.Event()
        self.election = None
        self.thread = None

    def _session_changed(self, state):
        # Runs on kazoo's connection thread: decide and print, nothing that
        # blocks on ZooKeeper.
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            with self.mu:
                if self.leading:
                    self.leading = False
                    event("LOST", self.id)
                    self.release.set()

    def _queued(self):
        with self.mu:
            if not self.leading:
                event("FOLLOWER", self.id)

    def _lead(self):
        with self.mu:
            if self.leaving:
                return
            self.leading = True
            event("LEADER", self.id)
        # Returning from here releases the lock (deletes our node). The wait
        # is sliced so that a quit is noticed even without a release.
        while not self.release.wait(1.0) and not self.leaving:
            pass

    def _loop(self):
        while not self.leaving:
            self.release.clear()
            self.election = Election(self.client, self.path, str(self.id))
            self.election.lock = QueuedLock(self.client, self.path, str(self.id), self._queued)
            try:
                self.election.run(self._lead)
            except Exception as exc:       # session trouble: kazoo raised; try again
                logging.warning("participant %d: %r", self.id, exc)
                time.sleep(0.2)

    def join(self):
        if self.thread is None:
            self.thread = threading.Thread(target=self._loop, daemon=True,
                                           name="election-%d" % self.id)
            self.thread.start()

    def resign(self):
        with self.mu:
            if not self.leading:
                return
            self.leading = False
            event("RESIGNED", self.id)     # before the node is deleted
        self.release.set()                 # _lead returns, the loop joins again

    def leave(self):
        with self.mu:
            self.leaving = True
            if self.leading:
                self.leading = False
                event("RESIGNED", self.id)
        self.release.set()
        if self.election is not None:
            self.election.cancel()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connect", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--first-id", type=int, required=True)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--session-timeout-ms", type=int, default=2000)
    a = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    members = [Member(a.first_id + k, a.connect, a.path, a.session_timeout_ms / 1000.0)
               for k in range(a.count)]
    # Start every session before waiting for any: they connect in parallel.
    pending = [m.client.start_async() for m in members]
    for m, started in zip(members, pending):
        started.wait(30)
        if not m.client.connected:
            sys.stderr.write("participant %d: no ZooKeeper connection within 30 s\n" % m.id)
            return 1
        event("CONNECTED", m.id)
        # kazoo keeps the negotiated timeout (ms) in a private attribute only.
        say("INFO %d negotiated_session_timeout_ms=%d" % (m.id, m.client._session_timeout))

    for cmd in sys.stdin:
        w = cmd.split()
        if not w:
            continue
        if w[0] == "quit":
            break
        if w[0] == "join":
            for m in members:
                m.join()
        elif w[0] == "resign" and len(w) == 2:
            for m in members:
                if str(m.id) == w[1]:
                    m.resign()
        else:
            say("INFO - unknown_command %s" % w[0])

    for m in members:
        m.leave()
    for m in members:
        if m.thread is not None:
            m.thread.join(5)
    for m in members:
        m.client.stop()
        m.client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

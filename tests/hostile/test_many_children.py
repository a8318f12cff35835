"""An election path crowded with children, ours and foreign (docs/limits.md,
"Many children under one path").

Half of the children are foreign candidates named as Curator's LeaderLatch
names them (persistent, so they stay in line ahead of ours), half are nodes of
other names that only make every listing bigger. The names are long enough
that one listing of the path is over 1 MiB, the default `jute.maxbuffer` of
ZooKeeper's Java client: a Java client such as Curator fails such a listing
unless its limit is raised, and this test states what libzkelect does with
it (the C client has no such limit: it works, in time and memory
proportional to the listing, and every wait is bounded).

ZKELECT_MANY_CHILDREN sets the number of children: 100,000 by default
(about 15 s on the 2-core test machine, 5 of them creating the children)."""

import json
import os
import subprocess
import time
import uuid

import pytest

from bed.toolutil import Proc, parse_event

CHILDREN = int(os.environ.get("ZKELECT_MANY_CHILDREN", "100000"))
BATCH = 1000  # creates per multi: ~90 kB, far below the server's 1 MB request limit
JUTE_MAXBUFFER = 1024 * 1024  # the Java client's default limit on one reply
SESSION_MS = 10000


def rss_kb(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def populate(kz, path, n):
    """n children in multis of BATCH; returns the sequences of the foreign
    candidates in queue order."""
    kz.ensure_path(path)
    seqs = []
    for start in range(0, n, BATCH):
        tx = kz.transaction()
        for i in range(start, min(n, start + BATCH)):
            if i % 2 == 0:
                seqs.append(i // 2)
                tx.create(f"{path}/_c_{uuid.uuid4()}-latch-{i // 2:010d}", b"foreign-%d" % (i // 2))
            else:
                tx.create(f"{path}/junk-{i:07d}-" + "x" * 64, b"")
        bad = [r for r in tx.commit() if isinstance(r, Exception)]
        assert not bad, f"create failed: {bad[0]!r}"
    return seqs


def remove_foreign(kz, path, names):
    """Deletes the foreign candidates front to back, in multis: the one our
    first candidate watches (the last) goes last, so it re-lists once."""
    for start in range(0, len(names), BATCH):
        tx = kz.transaction()
        for name in names[start:start + BATCH]:
            tx.delete(f"{path}/{name}")
        bad = [r for r in tx.commit() if isinstance(r, Exception)]
        assert not bad, f"delete failed: {bad[0]!r}"


@pytest.mark.slow
def test_crowded_path_elects_lists_and_stays_bounded(fresh_ensemble, zkelect_bin, test_env):
    from kazoo.client import KazooClient
    ens = fresh_ensemble(n=1, heap="1g")
    env = dict(test_env, ZKELECT_CONNECT=ens.connect_string)
    kz = KazooClient(hosts=ens.connect_string, timeout=30)
    kz.start(timeout=30)
    path = "/crowded/e"
    figures = {"children": CHILDREN}
    try:
        t0 = time.monotonic()
        populate(kz, path, CHILDREN)
        figures["populate_s"] = round(time.monotonic() - t0, 1)
        kids = kz.get_children(path)
        assert len(kids) == CHILDREN
        # What one getChildren reply carries: a length and the bytes of each name.
        listing = 4 + sum(4 + len(k.encode()) for k in kids)
        figures["listing_bytes"] = listing
        assert listing > JUTE_MAXBUFFER, "the path must be over the Java client's limit"
        foreign = sorted((k for k in kids if "-latch-" in k), key=lambda k: k[-10:])
        n_foreign = len(foreign)

        # Two candidacies join behind every foreign one.
        c = Proc([zkelect_bin, "candidate", "--path", path, "--first-id", 1, "--count", 2,
                  "--session-timeout-ms", SESSION_MS], env)
        try:
            for i in (1, 2):
                c.wait_line(lambda l, i=i: l.startswith(f"EVENT CONNECTED {i} "), 30,
                            f"CONNECTED {i}")
            before = rss_kb(c.pid)
            state, pred, token = {}, {}, {}

            def track(line):
                assert not line.startswith("INFO") or " error " not in line, line
                ev = parse_event(line)
                if ev:
                    state[ev[1]] = ev[0]
                    if "pred" in ev[3]:
                        pred[ev[1]] = ev[3]["pred"]
                    if "token" in ev[3]:
                        token[ev[1]] = int(ev[3]["token"])
                elif line.startswith("INFO ") and " pred " in line:
                    pred[line.split()[1]] = line.split("pred=", 1)[1]

            def until(cond, timeout, what):
                # The lines of two participants come in either order: what
                # is awaited may already have been seen.
                if not cond():
                    c.wait_line(lambda l: (track(l), cond())[1], timeout, what)

            def both(kind):
                def p(line):
                    track(line)
                    return state.get("1") == kind[0] and state.get("2") == kind[1] or \
                        state.get("1") == kind[1] and state.get("2") == kind[0]
                return p

            t0 = time.monotonic()
            c.send("join")
            c.wait_line(both(("FOLLOWER", "FOLLOWER")), 120, "both FOLLOWER")
            figures["join_to_follower_s"] = round(time.monotonic() - t0, 2)
            # The queue is in order: the first of ours follows the last
            # foreign candidate, the second follows the first.
            first = "1" if pred["1"] == f"foreign-{n_foreign - 1}" else "2"
            second = "2" if first == "1" else "1"
            assert pred[first] == f"foreign-{n_foreign - 1}", pred
            assert pred[second] == first, pred

            # zkelect status lists every candidate (one read of each),
            # within a bound, as JSON.
            t0 = time.monotonic()
            r = subprocess.run([str(zkelect_bin), "status", "--path", path, "--json",
                                "--session-timeout-ms", "30000"],
                               env=env, capture_output=True, text=True, timeout=120)
            figures["status_s"] = round(time.monotonic() - t0, 1)
            assert r.returncode == 0, r.stderr
            st = json.loads(r.stdout)
            assert st["count"] == n_foreign + 2
            assert st["leader"]["id"] == "foreign-0"
            assert [p["id"] for p in st["participants"][-2:]] == [first, second]

            # Once the foreign candidates are gone (the other children stay),
            # ours is elected, with a token, and the other still follows it.
            t0 = time.monotonic()
            remove_foreign(kz, path, foreign)
            until(lambda: state.get(first) == "LEADER", 120, f"LEADER {first}")
            figures["foreign_gone_to_leader_s"] = round(time.monotonic() - t0, 2)
            assert state[second] == "FOLLOWER" and pred[second] == first
            settled = rss_kb(c.pid)

            # Terms change hands on the crowded path: each resign re-lists it
            # twice (the heir, and the resigner joining at the back).
            leader, heir, last_token = first, second, token[first]
            for _ in range(3):
                c.send(f"resign {leader}")
                state[leader] = None  # its FOLLOWER after the resign may come first
                until(lambda h=heir: state.get(h) == "LEADER", 60, f"LEADER {heir}")
                assert token[heir] > last_token
                until(lambda o=leader: state.get(o) == "FOLLOWER", 60, f"FOLLOWER {leader} again")
                assert pred[leader] == heir
                leader, heir, last_token = heir, leader, token[heir]
            after = rss_kb(c.pid)
            figures.update(rss_kb_before=before["VmRSS"], rss_kb_settled=settled["VmRSS"],
                           rss_kb_after_terms=after["VmRSS"], peak_rss_kb=after["VmHWM"])
            # Memory: a client's peak is a few copies of one listing (held
            # only while it is ordered; two clients here, one per candidacy),
            # and more listings do not add up.
            assert after["VmHWM"] - before["VmRSS"] < 16 * 1024 + 2 * 8 * listing // 1024, figures
            assert after["VmRSS"] - settled["VmRSS"] < 4 * 1024 + listing // 1024, figures
            c.send("quit")
            assert c.wait(30) == 0
        finally:
            c.kill()
        print("many children:", json.dumps(figures))
    finally:
        kz.stop()
        kz.close()

"""What waiting in line costs ZooKeeper when nothing happens (issue 50
finding 8): a follower's session re-checks the nodes its candidacies watch
(a predecessor that lost READ is never notified: docs/limits.md), and that
re-check used to be one read per watched node per session timeout T, so a
session following 1,000 elections sent 200 requests a second at rest
(T = 10 s). It is now one batched request per session per T
(cxx/session/neighbour_check.h): the requests a waiting session sends at rest do
not grow with the number of elections it waits in.

Counted as the client counts them (ZKELECT_COUNTER_ZK_REQUESTS: every
request its session sends, probes and keepalives included) over a window
of two session timeouts at rest, for the heir's session (second in every
election) and for the third's (two watched nodes in each). On the code
before, at E = 300: about 2 x 300 requests for the heir and 2 x 600 for
the third in the window, against about 13 and 8 at E = 1.

A second test keeps the guarantee of test_unreadable_predecessor.py
where the re-check is batched: one of several predecessors loses READ,
its owner resigns, and the follower leads within the same bound.
"""

import time
import uuid

import pytest
from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from bed import kz, zkc

T = 2000
WINDOW_S = 2 * T / 1000  # a measurement over a window, not a wait for state
ZK_REQUESTS = 9          # ZKELECT_COUNTER_ZK_REQUESTS


def _line(api, handles, zk, n, tag):
    """Three clients in n elections each, in that order on every path."""
    clients, elections = [], []
    for k, role in enumerate(("lead", "heir", "third")):
        c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        es = [zkc.new_election(api, handles, c, f"/idlef-{tag}/p{i}", f"{role}{i}")
              for i in range(n)]
        for e in es:
            assert api.lib.zkelect_volunteer(e) == 0
        for e in es:
            if k == 0:
                assert api.lib.zkelect_await_leader(e, 15000) == 0
            else:
                api.wait_event(e, {"FOLLOWING"}, 15)
        clients.append(c)
        elections.append(es)
    return clients, elections


def _requests_at_rest(api, clients):
    # The gpred reads that wait for the predecessor's reply are answered by now.
    time.sleep(0.5)
    c0 = [api.counter(c, ZK_REQUESTS) for c in clients]
    time.sleep(WINDOW_S)
    return [api.counter(c, ZK_REQUESTS) - a for c, a in zip(clients, c0)]


def test_a_followers_requests_at_rest_do_not_grow_with_its_elections(api, handles, zk):
    counts = {}
    for n in (1, 300):
        clients, elections = _line(api, handles, zk, n, uuid.uuid4().hex[:8])
        counts[n] = _requests_at_rest(api, clients)
        assert all(api.lib.zkelect_is_leader(e) == 1 for e in elections[0])
        for es in reversed(elections):
            for e in es:
                handles["e"].remove(e)
                api.lib.zkelect_election_destroy(e)
    print(f"\nIDLE-FOLLOWER requests in {WINDOW_S:.0f} s at rest, T={T} ms "
          f"(leader, heir, third): E=1 {counts[1]}, E=300 {counts[300]}")
    # Per session and window: the heir's keepalives (every T/6, one multi
    # for all its elections: 12), a probe every T/3 for the others (6), one
    # re-check per T (2); a few more for a timer that falls at the window's
    # edge. One read per watched node per T would be 600 and 1,200 more.
    for role, k in (("heir", 1), ("third", 2)):
        assert counts[300][k] <= counts[1][k] + 4, (
            f"the {role}'s session sent {counts[300][k]} requests in {WINDOW_S:.0f} s at rest "
            f"in 300 elections, {counts[1][k]} in one: the cost grows with the elections")
        assert counts[300][k] <= 20, (role, counts)


@pytest.mark.zk_versions
def test_batched_recheck_still_finds_an_unreadable_predecessor_gone(api, handles, zk):
    """Five elections led by alice, bob heir in each; READ on one of alice's
    nodes is taken from bob, and that election's leader resigns: bob's
    batched re-check (a multi refused at that node, which is then asked
    alone) finds it gone, and bob leads there within 3 T."""
    lib = api.lib
    tag = uuid.uuid4().hex[:8]
    op, alice = kz.kazoo(zk), kz.kazoo(zk, "alice:pw-a")
    try:
        ca = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                                  zk_auth="digest:alice:pw-a", election_acl="open")
        cb = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                                  zk_auth="digest:bob:pw-b", election_acl="open")
        paths = [f"/idlef-{tag}/p{i}" for i in range(5)]
        for p in paths:
            op.ensure_path(p)
        a = [zkc.new_election(api, handles, ca, p, "alice") for p in paths]
        b = [zkc.new_election(api, handles, cb, p, "bob") for p in paths]
        for e in a:
            assert lib.zkelect_volunteer(e) == 0
            assert lib.zkelect_await_leader(e, 10000) == 0
        for e in b:
            assert lib.zkelect_volunteer(e) == 0
            api.wait_event(e, {"FOLLOWING"}, 10)
        victim = 2
        node = min(alice.get_children(paths[victim]), key=lambda n: n[-10:])
        cred = make_digest_acl_credential("alice", "pw-a")
        alice.set_acls(f"{paths[victim]}/{node}", [ACL(Permissions.ALL, Id("digest", cred))])
        # At least one batched re-check sees the node unreadable first.
        time.sleep(1.5 * T / 1000)
        assert lib.zkelect_resign(a[victim]) == 0
        api.wait_event(a[victim], {"RESIGNED"}, 10)
        zkc.until(lambda: node not in alice.get_children(paths[victim]), "alice's node gone", 10)
        t0 = time.monotonic()
        assert lib.zkelect_await_leader(b[victim], 3 * T) == 0, \
            "nobody leads after the unreadable predecessor went"
        print(f"\nBATCHED-RECHECK led {1000 * (time.monotonic() - t0):.0f} ms after the deletion")
        assert all(lib.zkelect_is_leader(b[i]) == 0 for i in range(5) if i != victim)
    finally:
        for k in (op, alice):
            k.stop()
            k.close()

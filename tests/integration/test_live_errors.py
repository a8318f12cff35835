"""Issue 27, finding 4: errors ZooKeeper returns on a live connection.

Each must be retried where retrying can help, or end the candidacy (or the
observation) with an ERROR naming the cause; before the fix each was
dropped and the election stalled with no event at all:

- election.acl=creator under a path made earlier with an open ACL, two
  identities: the follower may not read its predecessor's node, so it
  never watched it, stayed in line, and nobody led after the leader
  resigned. It now ends with ERROR (EAUTH) and leaves the line.
- the leader's node's ACL changed so that its session may no longer read
  it: every keepalive failed, the leader lost its lease and kept the first
  place, and nobody led. It now ends with ERROR (ZKELECT_EAUTH), its node
  goes, and the next candidate leads.
- an observer without credentials on an election made with
  election.acl=creator got no event ever. It now gets ERROR (EAUTH).
"""

import uuid

import pytest
from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from bed import kz, zkc

T = 2000


_kazoo = kz.kazoo


def _client(api, handles, zk, auth):
    return zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                                zk_auth=f"digest:{auth}", election_acl="creator")


def test_follower_of_another_identity_ends_with_error(api, handles, zk):
    """ZooKeeper sends no notification about a node the session may not
    read (not even to an exists watch: checked against Debian's 3.8.0), so
    a follower that may not read its predecessor cannot follow it. Before
    the fix it stayed in line, silent, and nobody led after the leader
    resigned; now it ends with ERROR (EAUTH) and its node goes."""
    lib = api.lib
    path = f"/live-{uuid.uuid4().hex[:8]}"
    op = _kazoo(zk)
    try:
        op.create(path, b"")  # open ACL: both identities may list and create
        a = zkc.new_election(api, handles, _client(api, handles, zk, "alice:pw-a"), path, "alice")
        b = zkc.new_election(api, handles, _client(api, handles, zk, "bob:pw-b"), path, "bob")
        assert lib.zkelect_volunteer(a) == 0
        assert lib.zkelect_await_leader(a, 10000) == 0
        assert lib.zkelect_volunteer(b) == 0
        ev, seen = api.wait_event(b, {"FOLLOWING", "ERROR"}, 10)
        assert ev["type"] == "ERROR" and ev["error"] == zkc.EAUTH, seen
        assert lib.zkelect_await_leader(b, 0) == zkc.EAUTH
        zkc.until(lambda: len(op.get_children(path)) == 1, "bob's node deleted", 10)
        assert lib.zkelect_is_leader(a) == 1
    finally:
        op.stop()
        op.close()


@pytest.mark.zk_versions
def test_leader_whose_node_may_not_be_read_steps_aside(api, handles, zk):
    lib = api.lib
    path = f"/live-{uuid.uuid4().hex[:8]}"
    op = _kazoo(zk)
    alice = _kazoo(zk, "alice:pw-a")
    try:
        op.create(path, b"")
        # Alice's node is open, so bob can follow it.
        ca = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                                  zk_auth="digest:alice:pw-a", election_acl="open")
        a = zkc.new_election(api, handles, ca, path, "alice")
        b = zkc.new_election(api, handles, _client(api, handles, zk, "bob:pw-b"), path, "bob")
        assert lib.zkelect_volunteer(a) == 0
        assert lib.zkelect_await_leader(a, 10000) == 0
        assert lib.zkelect_volunteer(b) == 0
        api.wait_event(b, {"FOLLOWING"}, 10)
        node = min(alice.get_children(path), key=lambda n: n[-10:])  # the leader's: first
        assert alice.get(f"{path}/{node}")[0] == b"alice"
        # Now only bob may read alice's node: her session can no longer
        # check it, and bob still hears of its deletion.
        bob = make_digest_acl_credential("bob", "pw-b")
        alice.set_acls(f"{path}/{node}", [ACL(Permissions.READ, Id("digest", bob)),
                                          ACL(Permissions.ADMIN, Id("world", "anyone"))])
        ev, seen = api.wait_event(a, {"ERROR"}, 3 * T / 1000 + 5)
        assert ev["error"] == zkc.EAUTH, seen
        assert lib.zkelect_is_leader(a) == 0
        assert lib.zkelect_await_leader(b, 3 * T + 5000) == 0, "nobody leads"
    finally:
        for k in (op, alice):
            k.stop()
            k.close()


def test_observer_without_credentials_gets_error(api, handles, zk):
    lib = api.lib
    path = f"/live-{uuid.uuid4().hex[:8]}/leader"
    a = zkc.new_election(api, handles, _client(api, handles, zk, "alice:pw-a"), path, "alice")
    assert lib.zkelect_volunteer(a) == 0
    assert lib.zkelect_await_leader(a, 10000) == 0
    anon = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    o = api.observer(anon, path)
    handles["o"].append(o)
    ev, seen = api.wait_event(o, {"ERROR", "LEADER_CHANGED"}, 10, observer=True)
    assert ev["type"] == "ERROR" and ev["error"] == zkc.EAUTH, seen

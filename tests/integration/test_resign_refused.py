"""Issue 27, finding 5: a resign whose delete ZooKeeper refuses.

Deleting a child needs DELETE on the parent. An election path made by an
operator with create, read and write for everyone but no delete lets a
candidate join and lead, and refuses its resign's delete. docs/semantics.md:
RESIGNED is reported only once no node of the candidacy is left. So the
candidacy says why in an ERROR (ZKELECT_EAUTH), keeps resigning (a
volunteer meanwhile waits behind the resign: no second node while the first
stays), and once the operator allows the delete, removes the node and
reports RESIGNED, then makes the volunteer's node. Before the fix it
reported RESIGNED at once and left the node.
"""

import uuid

from kazoo.security import ACL, Permissions, ANYONE_ID_UNSAFE, OPEN_ACL_UNSAFE

from bed import zkc

T = 2000
ESTATE = -3


def _path_without_delete(kz):
    """An election path made by an operator: create, read and write for
    everyone, but no delete of its children."""
    path = f"/refused-{uuid.uuid4().hex[:8]}"
    kz.create(path, b"", acl=[ACL(Permissions.CREATE | Permissions.READ | Permissions.WRITE |
                                  Permissions.ADMIN, ANYONE_ID_UNSAFE)])
    return path


def test_refused_resign_keeps_resigning_until_the_node_is_gone(api, handles, zk, kz):
    lib = api.lib
    path = _path_without_delete(kz)
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    e = zkc.new_election(api, handles, c, path, "refused")
    assert lib.zkelect_volunteer(e) == 0
    api.wait_event(e, {"ELECTED"}, 10)
    assert lib.zkelect_resign(e) == 0
    err, seen = api.wait_event(e, {"ERROR", "RESIGNED"}, 10)
    assert err["type"] == "ERROR", seen
    assert err["error"] == zkc.EAUTH
    assert lib.zkelect_is_leader(e) == 0
    assert len(kz.get_children(path)) == 1, "the node went though its delete was refused"
    # No RESIGNED while the node is there, and no second node queued
    # behind it.
    assert api.next_event(e, 2 * T) is None
    assert lib.zkelect_volunteer(e) == 0     # queued behind the resign
    assert lib.zkelect_volunteer(e) == ESTATE
    assert api.next_event(e, T) is None
    kz.sync(path)
    (old,) = kz.get_children(path)
    # The operator allows the delete: the retry (once a session timeout)
    # removes the node, then RESIGNED, then the queued volunteer's node.
    kz.set_acls(path, OPEN_ACL_UNSAFE)
    ev, seen = api.wait_event(e, {"RESIGNED", "ERROR"}, 3 * T / 1000 + 5)
    assert ev["type"] == "RESIGNED", seen
    api.wait_event(e, {"ELECTED"}, 10)
    kz.sync(path)  # kazoo may sit on another server than the client
    (new,) = kz.get_children(path)
    assert new != old


def test_a_destroyed_handle_whose_delete_is_refused_leaves_no_node_once_allowed(api, handles, zk, kz):
    """The same refusal at zkelect_election_destroy (explorer seed
    765777972): the handle is gone, but its client keeps deleting the node
    every session timeout, so a second candidate waits behind it only until
    the operator allows the delete, not until the first client's session
    ends. Before, the node stayed for the session's whole life."""
    lib = api.lib
    path = _path_without_delete(kz)
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    e = zkc.new_election(api, handles, c, path, "gone")
    assert lib.zkelect_volunteer(e) == 0
    api.wait_event(e, {"ELECTED"}, 10)
    d = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    f = zkc.new_election(api, handles, d, path, "next")
    assert lib.zkelect_volunteer(f) == 0
    api.wait_event(f, {"FOLLOWING"}, 10)
    handles["e"].remove(e)
    assert lib.zkelect_election_destroy(e) == 0
    assert lib.zkelect_is_leader(f) == 0
    kz.sync(path)
    assert len(kz.get_children(path)) == 2, "the destroyed handle's node went though its delete was refused"
    kz.set_acls(path, OPEN_ACL_UNSAFE)
    # The client's retry (once a session timeout) removes the node, so
    # the next candidate leads while the first client's session lives.
    assert lib.zkelect_await_leader(f, 3 * T + 5000) == 0, "the next never led"
    assert lib.zkelect_client_await_connected(c, 0) == 0, "the first client's session went"
    kz.sync(path)
    assert len(kz.get_children(path)) == 1

"""Every way out of a candidacy that holds a node, or may hold one whose
name it never learnt, releases that node (issue 50, findings 1 and 2;
cxx/election/node_release.cpp). Before the mend both tests below ended with a node
of a live session first in line that nobody would delete: the next
candidate followed it and never led.

1. A handle destroyed while it waits for a session, with its old node
   still to delete: a transfer's deadline passed while the client was
   disconnected (hand-over, back of the line, the old node in garbage);
   close() then finished at once and forgot that node.
2. An ERROR while the create's outcome was unknown: the recovery listing
   refused for lack of READ on the path, or a reconnect's shorter session
   timeout under a configured lease.margin.ms; fail() kept only a node
   whose name it knew, forgot the create that had landed, and said
   RESIGNED. And (sim seed 581989636) a lost create of a session the
   client gave up, which READ withheld keeps from being found: RESIGNED
   came at once, while the servers still held that session and its node.

Finding 4, refusals dropped with neither a retry nor an ERROR, is here too:
the recovery's read of the node it found refused (READ taken off the node,
or throttled), a throttled delete of a resigned node, a throttled listing
for a lost create. ZTHROTTLEDOP comes from the fault proxy (answer_error),
which turns the server's reply into one: a real server's
throttledOpWaitTime refuses only under load.
"""

import threading
import time
import uuid

import pytest

from kazoo.exceptions import NoNodeError
from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from bed import kz, zkc
from bed.faultproxy import FaultProxy

pytestmark = [pytest.mark.fault]


def _ghost(k, path, pid):
    """A libzkelect (version 8) node whose owner never reads a transfer
    request: the transfer waits for it to step back until its deadline."""
    u = uuid.UUID(int=(uuid.uuid4().int & ~(0xF << 76)) | (8 << 76))
    return k.create(f"{path}/_c_{u}-latch-", pid.encode(), ephemeral=True, sequence=True)


def _line(k, path):
    """(node, id) of each candidate node under path, in line order; a node
    whose session expired between the listing and its read is not there."""
    k.sync(path)
    kids = sorted(k.get_children(path), key=lambda n: int(n.rsplit("latch-", 1)[1]))
    line = []
    for n in kids:
        try:
            line.append((n, k.get(f"{path}/{n}")[0].decode()))
        except NoNodeError:
            pass
    return line


def test_destroy_while_awaiting_a_session_still_deletes_the_old_node(api, handles, fresh_ensemble):
    # One server, so that stopping it disconnects everyone; a tick of 1 s
    # lets the server grant T = 20 s: the sessions outlive the outage.
    ens = fresh_ensemble(n=1, tick_ms=1000)
    T = 20000
    lib = api.lib
    path = f"/release-{uuid.uuid4().hex[:8]}"
    ca = zkc.connected_client(api, handles, ens.connect_string, timeout_ms=T)
    cb = zkc.connected_client(api, handles, ens.connect_string, timeout_ms=T)
    a = zkc.new_election(api, handles, ca, path, "a")
    b = zkc.new_election(api, handles, cb, path, "b")
    op = kz.kazoo(ens, timeout=20.0)
    try:
        assert lib.zkelect_volunteer(a) == 0
        api.wait_event(a, {"ELECTED"}, 10)
        _ghost(op, path, "ghost")
        assert lib.zkelect_volunteer(b) == 0
        api.wait_event(b, {"FOLLOWING"}, 10)
        a_node = _line(op, path)[0][0]
        assert [i for _, i in _line(op, path)] == ["a", "ghost", "b"]
        got = []
        t = threading.Thread(target=lambda: got.append(lib.zkelect_transfer(a, b"b", 3000)),
                             daemon=True)
        began = time.monotonic()
        t.start()
        time.sleep(0.5)  # the transfer is under way: its marker is written
        ens.stop_server(0)
        # The transfer's deadline passes while the client is disconnected:
        # a hands over, its old node is garbage, it waits for a session.
        t.join(max(0.1, 3.5 - (time.monotonic() - began)))
        time.sleep(max(0.0, 3.5 - (time.monotonic() - began)))
        zkc.until(lambda: api.stats(a)["engine_state"] == "awaiting-session",
                  "a waits for a session after its hand-over", 5)
        handles["e"].remove(a)
        t0 = time.monotonic()
        assert lib.zkelect_election_destroy(a) == 0
        destroy_ms = 1000 * (time.monotonic() - t0)
        t.join(T / 1000)
        ens.start_servers([0])
        op2 = kz.kazoo(ens, timeout=20.0)
        try:
            zkc.until(lambda: lib.zkelect_client_await_connected(ca, 0) == 0, "a's client back", 30)
            for n, i in _line(op2, path):
                if i == "ghost":
                    op2.delete(f"{path}/{n}")
            bound = 3 * T // 4
            rc = lib.zkelect_await_leader(b, bound)
            print(f"\nRELEASE destroy-awaiting: destroy {destroy_ms:.0f} ms, transfer {got}, "
                  f"line after: {_line(op2, path)}")
            assert rc == 0, f"b does not lead {bound} ms after the ghost went: " \
                            f"{_line(op2, path)} (a's node was {a_node})"
            assert all(i != "a" for _, i in _line(op2, path)), "a's node is still there"
        finally:
            op2.stop()
            op2.close()
    finally:
        try:
            op.stop()
            op.close()
        except Exception:
            pass


def test_an_error_while_recovering_a_lost_create_still_deletes_its_node(api, handles, zk, proxies):
    """READ withheld on the path (an operator's ACL that grants creating
    and deleting, not listing); the reply to the candidate's create is
    dropped and the connection reset: the create landed, and the recovery's
    listing is refused. The candidacy errs (ERROR), but its node, which it
    never learnt the name of, must not stay first in line: once READ is
    back it is found by its uuid and deleted, and only then RESIGNED."""
    T = 4000
    lib = api.lib
    path = f"/release-{uuid.uuid4().hex[:8]}"
    op = kz.kazoo(zk, "op:pw-o")
    me = make_digest_acl_credential("op", "pw-o")
    everyone_but_read = Permissions.CREATE | Permissions.DELETE | Permissions.WRITE | Permissions.ADMIN
    try:
        op.create(path, b"", acl=[ACL(Permissions.ALL, Id("digest", me)),
                                  ACL(everyone_but_read, Id("world", "anyone"))])
        ca = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T)
        a = zkc.new_election(api, handles, ca, path, "a")
        rule = proxies.drop_reply(["create", "create2"], then="reset", match="-latch-")
        assert lib.zkelect_volunteer(a) == 0
        assert rule.done.wait(10), "the candidate's create never went through the proxy"
        err, seen = api.wait_event(a, {"ERROR"}, 3 * T / 1000)
        mine = [n for n, i in _line(op, path) if i == "a"]
        assert len(mine) == 1, f"the create whose reply was dropped landed: {_line(op, path)}"
        # The node is there: no RESIGNED may come while it is (a session
        # timeout is longer than any retry before READ is back).
        time.sleep(T / 1000)  # a window for a RESIGNED that must not come
        later = []
        for _ in range(100):
            ev = api.next_event(a, 0)
            if ev is None:
                break
            later.append(ev["type"])
        print(f"\nRELEASE error-recovering: events {[e['type'] for e in seen]} then {later}")
        assert "RESIGNED" not in later, f"RESIGNED while a's node {mine[0]} is still there"
        op.set_acls(path, [ACL(Permissions.ALL, Id("world", "anyone"))])
        cb = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        b = zkc.new_election(api, handles, cb, path, "b")
        assert lib.zkelect_volunteer(b) == 0
        bound = 3 * T
        t0 = time.monotonic()
        rc = lib.zkelect_await_leader(b, bound)
        assert rc == 0, f"b does not lead {bound} ms after READ came back: {_line(op, path)}"
        print(f"RELEASE error-recovering: b led {1000 * (time.monotonic() - t0):.0f} ms "
              f"after READ came back")
        assert all(i != "a" for _, i in _line(op, path)), "a's node is still there"
        api.wait_event(a, {"RESIGNED"}, T / 1000)
    finally:
        op.stop()
        op.close()


def test_a_found_node_that_may_not_be_read_errs_and_is_deleted(api, handles, zk, proxies):
    """Finding 4 (on_adopt): the recovery found the node of a create whose
    reply was lost, but its read (which checks the owner and arms the watch)
    is refused: an operator took READ on the node away meanwhile. The
    candidacy stayed in "recovering" for good, said nothing, kept its node
    first in line and its turn to join. Now: ERROR, the node is released
    (deleted: DELETE is the path's, still granted), then RESIGNED."""
    T = 4000
    lib = api.lib
    path = f"/release-{uuid.uuid4().hex[:8]}"
    op = kz.kazoo(zk, "op:pw-o")
    me = make_digest_acl_credential("op", "pw-o")
    try:
        op.create(path, b"")
        ca = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T,
                                  election_acl="open")
        a = zkc.new_election(api, handles, ca, path, "a")
        rule = proxies.drop_reply(["create", "create2"], then="reset", match="-latch-")
        proxies.refuse()  # the reconnect waits until the operator is done
        try:
            assert lib.zkelect_volunteer(a) == 0
            assert rule.done.wait(10), "the candidate's create never went through the proxy"
            node = zkc.until(lambda: [n for n, i in _line(op, path) if i == "a"],
                             "the node of the create whose reply was dropped", 5)[0]
            op.set_acls(f"{path}/{node}", [ACL(Permissions.ALL, Id("digest", me))])
        finally:
            proxies.set_pass()
        err, seen = api.wait_event(a, {"ERROR"}, 3 * T / 1000)
        print(f"\nRELEASE adopt-noauth: {[e['type'] for e in seen]}: {err.get('message')}")
        api.wait_event(a, {"RESIGNED"}, 3 * T / 1000)
        assert all(i != "a" for _, i in _line(op, path)), "a's node is still there"
    finally:
        op.stop()
        op.close()


def test_a_margin_too_large_for_a_shorter_reconnect_still_deletes_a_lost_create(
        api, handles, zk, proxies):
    """Finding 2's other route: the create's reply lost with the connection,
    and the reconnect negotiates a session timeout under which the
    configured lease.margin.ms leaves no lease: ERROR (EINVAL) while the
    create's outcome is unknown. The node it made must go, then RESIGNED."""
    T = 4000
    lib = api.lib
    path = f"/release-{uuid.uuid4().hex[:8]}"
    op = kz.kazoo(zk)
    try:
        op.create(path, b"")
        ca = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T,
                                  lease_margin_ms=1500)
        a = zkc.new_election(api, handles, ca, path, "a")
        shorter = proxies.rewrite_reconnect(request_timeout_ms=2000)
        rule = proxies.drop_reply(["create", "create2"], then="reset", match="-latch-")
        assert lib.zkelect_volunteer(a) == 0
        assert rule.done.wait(10), "the candidate's create never went through the proxy"
        err, seen = api.wait_event(a, {"ERROR"}, 3 * T / 1000)
        assert "lease.margin.ms" in err.get("message", ""), err
        assert shorter.done.wait(1)
        api.wait_event(a, {"RESIGNED"}, 3 * T / 1000)
        left = _line(op, path)
        print(f"\nRELEASE margin: {[e['type'] for e in seen]}, line at RESIGNED {left}")
        assert all(i != "a" for _, i in left), f"RESIGNED with a's node still there: {left}"
    finally:
        op.stop()
        op.close()


ZTHROTTLEDOP = -127


def test_a_throttled_delete_of_a_resigned_node_is_tried_again(api, handles, zk, proxies):
    """Finding 4: the reply to the resign's delete is ZTHROTTLEDOP (the
    proxy turns the server's answer into one, as a server past its
    throttledOpWaitTime answers). It was taken for connection trouble: the
    candidacy waited for a reconnect that never came, and RESIGNED never
    came. Now the delete is sent again after a pause (ZNONODE: done)."""
    T = 4000
    lib = api.lib
    path = f"/release-{uuid.uuid4().hex[:8]}"
    op = kz.kazoo(zk)
    try:
        op.create(path, b"")
        ca = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T)
        a = zkc.new_election(api, handles, ca, path, "a")
        assert lib.zkelect_volunteer(a) == 0
        api.wait_event(a, {"ELECTED"}, 10)
        node = _line(op, path)[0][0]
        rule = proxies.answer_error("delete", ZTHROTTLEDOP, match=node)
        t0 = time.monotonic()
        assert lib.zkelect_resign(a) == 0
        api.wait_event(a, {"RESIGNED"}, T / 1000)
        assert rule.done.is_set(), "the delete's reply was not rewritten"
        print(f"\nRELEASE throttled delete: RESIGNED {1000 * (time.monotonic() - t0):.0f} ms "
              f"after the resign")
        assert _line(op, path) == []
    finally:
        op.stop()
        op.close()


def test_a_throttled_listing_for_a_lost_create_is_tried_again(api, handles, zk, proxies):
    """Finding 4 (on_garbage_children): a resign while the create's outcome
    is unknown looks for the node by its uuid; that listing answered
    ZTHROTTLEDOP was dropped for good: the node stayed first in line and
    RESIGNED never came. Now it is listed again after a pause."""
    T = 4000
    lib = api.lib
    path = f"/release-{uuid.uuid4().hex[:8]}"
    op = kz.kazoo(zk)
    try:
        op.create(path, b"")
        ca = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T)
        a = zkc.new_election(api, handles, ca, path, "a")
        rule = proxies.drop_reply(["create", "create2"], then="reset", match="-latch-")
        proxies.refuse()  # no reconnect until the resign is in
        try:
            assert lib.zkelect_volunteer(a) == 0
            assert rule.done.wait(10), "the candidate's create never went through the proxy"
            zkc.until(lambda: [n for n, i in _line(op, path) if i == "a"],
                      "the node of the create whose reply was dropped", 5)
            api.wait_event(a, {"SUSPENDED"}, 5)
            assert lib.zkelect_resign(a) == 0
            listing = proxies.answer_error(["getChildren", "getChildren2"], ZTHROTTLEDOP,
                                           match=path)
        finally:
            proxies.set_pass()
        api.wait_event(a, {"RESIGNED"}, 2 * T / 1000)
        assert listing.done.is_set(), "the listing's reply was not rewritten"
        assert _line(op, path) == [], "RESIGNED with a's node still there"
    finally:
        op.stop()
        op.close()


@pytest.mark.parametrize("refusals", [1, 9])
def test_a_throttled_read_of_a_found_node(api, handles, zk, proxies, refusals):
    """Finding 4 (on_adopt): the recovery's read of the node it found
    answered ZTHROTTLEDOP left the candidacy in "recovering" for good,
    silent, its node first in line. Now it asks again after a pause that
    doubles (1 refusal: it goes on and leads), and after 8 refusals in a
    row it gives up with ERROR and releases the node (9: RESIGNED with no
    node left)."""
    T = 2000
    lib = api.lib
    path = f"/release-{uuid.uuid4().hex[:8]}"
    op = kz.kazoo(zk)
    try:
        op.create(path, b"")
        ca = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T)
        a = zkc.new_election(api, handles, ca, path, "a")
        reads = proxies.answer_error("getData", ZTHROTTLEDOP, count=refusals, match="-latch-")
        rule = proxies.drop_reply(["create", "create2"], then="reset", match="-latch-")
        assert lib.zkelect_volunteer(a) == 0
        assert rule.done.wait(10), "the candidate's create never went through the proxy"
        if refusals == 1:
            api.wait_event(a, {"ELECTED"}, 3 * T / 1000)
            assert reads.done.is_set()
            assert [i for _, i in _line(op, path)] == ["a"]
        else:
            # T/24 doubling up to T: 8 pauses within 5 T.
            err, seen = api.wait_event(a, {"ERROR"}, 6 * T / 1000)
            print(f"\nRELEASE throttled adopt: {err.get('message')}")
            assert reads.done.is_set()
            api.wait_event(a, {"RESIGNED"}, 2 * T / 1000)
            assert _line(op, path) == [], "RESIGNED with a's node still there"
    finally:
        op.stop()
        op.close()


def test_a_lost_create_of_a_session_given_up_goes_before_resigned(api, handles, fresh_ensemble):
    """The sim's seed 581989636 on a real server. READ withheld on the path;
    the create's reply is lost, then no server takes the session for T (the
    one server stopped): the client gives the session up (EXPIRED), but the
    server, restarted, keeps that session, and its node, for another T. The
    next session's listing is refused: ERROR ends the candidacy. Its lost
    create of the old session cannot be found, yet RESIGNED must wait until
    the servers have surely expired that session (it came at once)."""
    from bed.faultproxy import ProxiedEnsemble
    ens = fresh_ensemble(n=1, tick_ms=1000)
    T = 4000
    lib = api.lib
    path = f"/release-{uuid.uuid4().hex[:8]}"
    op = kz.kazoo(ens, "op:pw-o")
    me = make_digest_acl_credential("op", "pw-o")
    everyone_but_read = Permissions.CREATE | Permissions.DELETE | Permissions.WRITE | Permissions.ADMIN
    pe = ProxiedEnsemble([ens.client_port(0)])
    op2 = None
    try:
        op.create(path, b"", acl=[ACL(Permissions.ALL, Id("digest", me)),
                                  ACL(everyone_but_read, Id("world", "anyone"))])
        op.stop()
        op.close()
        ca = zkc.connected_client(api, handles, pe.connect_string, timeout_ms=T)
        a = zkc.new_election(api, handles, ca, path, "a")
        rule = pe.drop_reply(["create", "create2"], match="-latch-")
        assert lib.zkelect_volunteer(a) == 0
        assert rule.done.wait(10), "the candidate's create never went through the proxy"
        ens.stop_server(0)  # before the C client drops the connection (2/3 T)
        api.wait_event(a, {"EXPIRED"}, 3 * T / 1000)
        ens.start_servers([0])
        op2 = kz.kazoo(ens, "op:pw-o", timeout=20.0)
        old = [n for n, i in _line(op2, path) if i == "a"]
        assert len(old) == 1, f"the old session's node is not there: {_line(op2, path)}"
        api.wait_event(a, {"ERROR"}, 3 * T / 1000)
        api.wait_event(a, {"RESIGNED"}, 4 * T / 1000)
        left = _line(op2, path)
        print(f"\nRELEASE given-up session: old node {old[0]}, line at RESIGNED {left}")
        assert all(i != "a" for _, i in left), f"RESIGNED with a's node still there: {left}"
    finally:
        pe.close()
        if op2 is not None:
            op2.stop()
            op2.close()

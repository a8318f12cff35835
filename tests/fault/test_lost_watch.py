"""Issue 27, finding 1: a candidacy whose own-node watch was lost and whose
node was deleted by hand must never lead beside the real leader.

One client X (through the fault proxy) leads election A, so its session
sends keepalives, and is second in line on election B behind Y. The reply
to the read that sets X's own-node watch on B is dropped and the connection
reset: X reconnects within its session, with no watch on its node. An
operator deletes X's node on B; Z, third in line, moves up behind Y. Then
Y resigns and Z is elected. Before the fix, X's B candidacy (heir, its
session's lease fresh from A's keepalives, which checked only A's node)
claimed too, and both answered 1 for as long as one looked.

is_leader of X's B and Z's B is sampled in this process, on one thread, in
the order X, Z, X: an overlap counts only when all three reads said 1, so
it is proven, not inferred from stamps.

The tests use the public C API through ctypes (tests/bed/zkc.py).
"""

import time

import pytest

from bed import zkc
from bed.faultutil import report

pytestmark = [pytest.mark.fault, pytest.mark.slow]

T = 4000


class Api(zkc.Api):
    def connected(self, hosts):
        c = self.client(zk_hosts=hosts, zk_session_timeout_ms=T, zk_log_level="none")
        assert self.lib.zkelect_client_await_connected(c, 15000) == 0, "no connection"
        return c

    def role(self, e, want, timeout_s=10):
        """Waits (bounded) until is_leader(e) answers `want`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.lib.zkelect_is_leader(e) == want:
                return
            time.sleep(0.005)
        raise AssertionError(f"is_leader never answered {want} within {timeout_s} s")

    def following(self, e, timeout_s=10):
        zkc.until(lambda: self.stats(e)["engine_state"] in ("following", "heir"), "following",
                  timeout_s)


@pytest.fixture
def api():
    return Api(zkc.build_dir())


@pytest.fixture
def handles(api):
    yield from zkc.handles_fixture(api)


@pytest.mark.parametrize("drops", [1, 3])
def test_lost_own_watch_then_deleted_node_never_leads(zk, zk_path, proxies, kz, api, handles,
                                                      drops):
    """drops: how many own-node reads of X on B lose their reply (each with a
    reset); 3 also loses the reads sent again on reconnect."""
    lib = api.lib
    path_a, path_b = zk_path + "/a", zk_path + "/b"
    x = api.connected(proxies.connect_string)
    y = api.connected(zk.connect_string)
    z = api.connected(zk.connect_string)
    handles["c"] += [x, y, z]
    xa = api.election(x, path_a, "x-a")
    yb = api.election(y, path_b, "y-b")
    xb = api.election(x, path_b, "x-b")
    zb = api.election(z, path_b, "z-b")
    handles["e"] += [xa, yb, xb, zb]

    assert lib.zkelect_volunteer(xa) == 0
    api.role(xa, 1)
    assert lib.zkelect_volunteer(yb) == 0
    api.role(yb, 1)
    # X's first read of a node under B is the one that sets its own-node
    # watch (the create's reply comes before the listing's, which sends the
    # predecessor's read).
    rule = proxies.drop_reply("getData", count=drops, then="reset", match=path_b.encode())
    assert lib.zkelect_volunteer(xb) == 0
    # Replies to reads pipelined behind a dropped one die with the reset, so
    # with drops > 1 not every marked reply is counted as dropped.
    zkc.until(lambda: rule.armed == 0 and rule.dropped >= 1, "X's reads under B dropped", 15)
    api.following(xb, 15)
    assert lib.zkelect_volunteer(zb) == 0
    api.following(zb, 15)
    nodes = {kz.get(f"{path_b}/{n}")[0].decode(): n for n in kz.get_children(path_b)}
    assert set(nodes) == {"y-b", "x-b", "z-b"}, nodes

    with zkc.Overlaps(lib, xb, zb) as ov:
        t_del = time.monotonic_ns()
        kz.delete(f"{path_b}/{nodes['x-b']}")
        time.sleep(0.2)  # Z moves up behind Y
        assert lib.zkelect_resign(yb) == 0
        api.role(zb, 1, 10)
        t_z = time.monotonic_ns()
        # Watch for three leases (T/2 each): the old code led on for ever.
        time.sleep(1.5 * T / 1000)
    x_b_leads_now = lib.zkelect_is_leader(xb)
    report("lost_own_watch", drops=drops, session_timeout_ms=T, samples=ov.samples,
           overlaps=len(ov.overlaps),
           x_last_one_after_delete_ms=(ov.x_last_one - t_del) / 1e6 if ov.x_last_one else None,
           z_elected_after_delete_ms=(t_z - t_del) / 1e6)
    assert ov.samples > 100
    assert not ov.overlaps, (
        f"X's deleted candidacy on B answered 1 beside Z's in {len(ov.overlaps)} samples")
    assert x_b_leads_now == 0
    # X is still a candidate on B: back in line with a new node, behind Z.
    zkc.until(lambda: "x-b" in {kz.get(f"{path_b}/{n}")[0].decode()
                                for n in kz.get_children(path_b)}, "X's new node on B", 10)
    assert lib.zkelect_is_leader(xa) == 1, "X's lead on A was lost"


def test_keepalive_checks_every_leaders_node(zk, zk_path, proxies, kz, api, handles):
    """X leads A and B on one session; the notification of its B node's
    deletion is lost on the wire. Only the session's keepalive, which must
    check every holder's node, can tell; it goes out every T/6, so X's B
    stops answering 1 within T/6 and a round trip of the delete
    (docs/semantics.md, "A node deleted by hand"). Before the fix the
    keepalive checked A's node only, and X led B for ever beside Z."""
    lib = api.lib
    path_a, path_b = zk_path + "/a", zk_path + "/b"
    x = api.connected(proxies.connect_string)
    z = api.connected(zk.connect_string)
    handles["c"] += [x, z]
    xa = api.election(x, path_a, "x-a")
    xb = api.election(x, path_b, "x-b")
    zb = api.election(z, path_b, "z-b")
    handles["e"] += [xa, xb, zb]
    assert lib.zkelect_volunteer(xa) == 0
    api.role(xa, 1)
    assert lib.zkelect_volunteer(xb) == 0
    api.role(xb, 1)
    assert lib.zkelect_volunteer(zb) == 0
    api.following(zb, 15)
    nodes = {kz.get(f"{path_b}/{n}")[0].decode(): n for n in kz.get_children(path_b)}
    rule = proxies.drop_reply("notification", count=1, match=nodes["x-b"].encode())
    with zkc.Overlaps(lib, xb, zb) as ov:
        t_del = time.monotonic_ns()
        kz.delete(f"{path_b}/{nodes['x-b']}")
        api.role(zb, 1, 10)
        time.sleep(1.5 * T / 1000)  # three leases
    bound_ms = T / 6 + 500  # the keepalive period, and a round trip on a loaded machine
    last_ms = (ov.x_last_one - t_del) / 1e6 if ov.x_last_one else 0
    report("keepalive_checks_every_node", session_timeout_ms=T, samples=ov.samples,
           overlaps=len(ov.overlaps), notification_dropped=rule.dropped,
           x_last_one_after_delete_ms=last_ms)
    assert rule.dropped == 1, "the deletion's notification was not the one dropped"
    assert ov.samples > 100
    assert lib.zkelect_is_leader(xb) == 0
    assert last_ms <= bound_ms, f"X's deleted node led for {last_ms:.0f} ms > {bound_ms:.0f} ms"
    assert lib.zkelect_is_leader(xa) == 1, "X's lead on A was lost"

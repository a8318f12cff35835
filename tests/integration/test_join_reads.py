"""A joining follower reads its predecessor first (issue 31).

After its listing, a follower reads, and so watches, its predecessor and the
node before it. Only the predecessor's read is on the way to FOLLOWING: the
other tells it early that it moved up. Sent together, every session of a
burst of joins put that second read in the servers' queues ahead of later
sessions' predecessor reads (bench/results/ANALYSIS.md, "Where the
convergence excess goes"). So the second read goes out only once the
predecessor's is answered.

Seen at the fault proxy: the reply to the newcomer's read of its
predecessor is held back (dropped), and the newcomer must not have asked
for the node before it meanwhile. The build before this change sent both
reads back to back: the second passed the proxy before the first's reply
came back.
"""

import struct
import time
import uuid

import pytest

from bed import faultproxy, zkc
from bed.faultproxy import ProxiedEnsemble

T = 20000  # the newcomer's session: no probe or re-check within the window
WINDOW_S = 0.5


def _in_order(kz, path):
    names = kz.get_children(path)
    return sorted(names, key=lambda n: int(n[-10:]))


def test_the_node_before_the_predecessor_is_read_after_the_predecessor(api, handles, zk, kz):
    path = f"/t/join-reads-{uuid.uuid4().hex[:8]}"
    x = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=10000)
    first = zkc.new_election(api, handles, x, path, "first")
    second = zkc.new_election(api, handles, x, path, "second")
    assert api.lib.zkelect_volunteer(first) == 0
    api.wait_event(first, {"ELECTED"}, 15)
    assert api.lib.zkelect_volunteer(second) == 0
    api.wait_event(second, {"FOLLOWING"}, 15)
    kz.sync(path)
    leader_node, pred_node = _in_order(kz, path)

    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        early = pe.drop_reply("getData", match=f"{path}/{leader_node}")
        # The predecessor's read, and the read of the newcomer's own node
        # that follows it: a reply after the one held back would break the
        # connection (the client expects its replies in order).
        held = pe.drop_reply("getData", count=2, match=f"{path}/")
        y = zkc.connected_client(api, handles, pe.connect_string, timeout_ms=T)
        third = zkc.new_election(api, handles, y, path, "third")
        assert api.lib.zkelect_volunteer(third) == 0
        assert held.done.wait(15), "the newcomer never read its predecessor and its node"
        # Its reply is lost: a newcomer that waits for it sends nothing more
        # for a while (its next request is a probe, T/3 away).
        time.sleep(WINDOW_S)
        assert early.armed == 1, (
            "the newcomer read the node before its predecessor before its "
            "predecessor's read was answered")
        # A new connection: the listing and both reads again, answered.
        pe.clear_rules()
        pe.reset()
        api.wait_event(third, {"FOLLOWING"}, 30)
        assert api.lib.zkelect_is_leader(first) == 1


@pytest.fixture
def request_order(monkeypatch):
    """(opcode name, request bytes) of every request the proxies in this
    process pass, in the order they reach them: the proxy's own request
    hook, wrapped (bench/wan_ab.py --trace does the same)."""
    seen = []
    hook = faultproxy._Conn._on_request

    def recording(self, first, pkt):
        if not first and len(pkt) >= 12:
            _xid, op = struct.unpack_from(">ii", pkt, 4)
            seen.append((faultproxy.OPNAMES.get(op, str(op)), bytes(pkt)))
        return hook(self, first, pkt)
    monkeypatch.setattr(faultproxy._Conn, "_on_request", recording)
    return seen


def test_a_new_nodes_own_read_goes_after_its_predecessors(api, handles, zk, kz, request_order):
    """Issue 50 finding 9: the read that watches a new node of ours went out
    when the create's reply came, ahead of the predecessor's read that
    FOLLOWING waits for, into the same server queue, for every session of
    a burst of joins (convergence at +10 ms each way took about a round
    trip more). It now goes out after the reads the listing sent with the
    create leads to, and is still sent: the own-node watch stays."""
    path = f"/t/own-read-{uuid.uuid4().hex[:8]}"
    x = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=10000)
    first = zkc.new_election(api, handles, x, path, "first")
    assert api.lib.zkelect_volunteer(first) == 0
    api.wait_event(first, {"ELECTED"}, 15)
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        pe.delay(20)
        y = zkc.connected_client(api, handles, pe.connect_string, timeout_ms=T)
        newcomer = zkc.new_election(api, handles, y, path, "newcomer")
        assert api.lib.zkelect_volunteer(newcomer) == 0
        api.wait_event(newcomer, {"FOLLOWING"}, 15)
        kz.sync(path)
        pred_node, own_node = _in_order(kz, path)

        def first_read(node):
            what = f"{path}/{node}".encode()
            zkc.until(lambda: any(op == "getData" and what in pkt for op, pkt in request_order),
                      f"a read of {node}", 10)
            return next(i for i, (op, pkt) in enumerate(request_order)
                        if op == "getData" and what in pkt)
        own, pred = first_read(own_node), first_read(pred_node)
        assert pred < own, (
            f"the newcomer read its own node (request {own}) before its predecessor "
            f"(request {pred}): {[op for op, _ in request_order]}")

"""A session the client gives up without ZooKeeper saying it expired: a
reconnect of the live session answered with timeout 0 (issue 27, finding 6),
or no server taking it for T (tests/fault/test_wiped_ensemble.py). The
quorum may still hold it, and its nodes with it, until it expires it. The
explorer found (seed 979398671) that a candidacy then said RESIGNED while
its old node was still listed: the promise is that RESIGNED comes only once
no node of the candidacy is left. Now the old session's nodes are deleted
through the next session, ahead of the new create, and RESIGNED waits for
that as after any resign.
"""

import os
import time
import uuid

import pytest
from kazoo.client import KazooClient

from bed import zkc
from bed.faultproxy import ProxiedEnsemble

pytestmark = [pytest.mark.fault]

T = 6000


def test_resigned_after_a_given_up_session_only_once_its_node_is_gone(api, handles, zk, kz):
    path = f"/t/given-up-{uuid.uuid4().hex[:8]}"
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        x = zkc.connected_client(api, handles, pe.connect_string, timeout_ms=T)
        xe = zkc.new_election(api, handles, x, path, "x")
        assert api.lib.zkelect_volunteer(xe) == 0
        api.wait_event(xe, {"ELECTED"}, 15)
        kz.sync(path)
        (old,) = kz.get_children(path)

        rule = pe.rewrite_reconnect(reply_timeout_ms=0)
        pe.reset()
        assert rule.done.wait(10), "no reconnect"
        api.wait_event(xe, {"EXPIRED"}, 10)
        # The old session lives on at the quorum (nobody closed it): its node
        # would stay about T. Resign now; RESIGNED must wait for the node.
        assert api.lib.zkelect_resign(xe) == 0
        api.wait_event(xe, {"RESIGNED"}, T / 1000 + 15)
        kz.sync(path)
        left = kz.get_children(path)
        assert old not in left, f"RESIGNED while the given-up session's node {old} remained"
        assert left == []


def test_a_session_closed_from_outside_stops_leading_within_its_lease(api, handles, zk, kz):
    """Issue 27, finding 10: another client presents the leader's session id
    and password and closes the session (as an administrator can). ZooKeeper
    deletes its nodes at once and the follower is elected; the old leader
    answers 1 until its client hears of it, never past its lease
    (T/2 - margin after its last acknowledged write; docs/semantics.md)."""
    path = f"/t/closed-{uuid.uuid4().hex[:8]}"
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        x = zkc.connected_client(api, handles, pe.connect_string, timeout_ms=T)
        z = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        xe = zkc.new_election(api, handles, x, path, "x")
        ze = zkc.new_election(api, handles, z, path, "z")
        assert api.lib.zkelect_volunteer(xe) == 0
        api.wait_event(xe, {"ELECTED"}, 15)
        assert api.lib.zkelect_volunteer(ze) == 0
        api.wait_event(ze, {"FOLLOWING"}, 15)
        lease_ns = (T // 2 - api.lib.zkelect_client_lease_margin_ms(x)) * 1_000_000
        sid, _tmo, pw = pe.last_session()
        with zkc.Overlaps(api.lib, xe, ze) as ov:
            closer = KazooClient(hosts=zk.connect_string, client_id=(sid, pw), timeout=4.0)
            closer.start(timeout=10)
            t_close = time.monotonic_ns()
            closer.stop()
            closer.close()
            api.wait_event(ze, {"ELECTED"}, 10)
            api.wait_event(xe, {"EXPIRED"}, T / 1000 + 10)
            time.sleep(0.2)
        assert ov.samples > 100
        late = ov.x_last_one - t_close
        print(f"old leader's last 1: {late / 1e6:.0f} ms after the close; "
              f"{len(ov.overlaps)} overlapping samples")
        assert late <= lease_ns + 200_000_000, \
            f"the old leader answered 1 {late / 1e6:.0f} ms after its session was closed " \
            f"(lease {lease_ns / 1e6:.0f} ms)"




def test_resigned_after_an_expiry_only_once_its_node_is_gone(api, handles, fresh_ensemble):
    """ZooKeeper tells a reconnecting client its session expired as soon as
    the quorum's leader marked it closing, before the quorum committed the
    close that deletes its nodes. The explorer found it (seed 573123428: a
    RESIGNED right after EXPIRED while the node was still listed 23-555 ms).
    Here the commit is made slow (every byte between servers held 1.5 s each
    way) and the client reconnects to the leader itself right after the
    leader expired its session: RESIGNED must wait until the node is gone."""
    ens = fresh_ensemble(n=3, peer_links=True, sync_limit=30)
    # Held from the start: a quorum whose links slow down under it may lose
    # its leader, and a new leader gives every session a fresh timeout.
    ens.delay_links(1500)
    time.sleep(1)
    zl = ens.leader_index()
    path = f"/t/expired-{uuid.uuid4().hex[:8]}"
    kz = KazooClient(hosts=f"127.0.0.1:{ens.client_port(zl)}", timeout=10.0)
    kz.start(timeout=15)
    try:
        with ProxiedEnsemble([ens.client_port(zl)]) as pe:
            x = zkc.connected_client(api, handles, pe.connect_string, timeout_ms=T)
            xe = zkc.new_election(api, handles, x, path, "x")
            assert api.lib.zkelect_volunteer(xe) == 0
            (old,) = zkc.until(lambda: kz.exists(path) and kz.get_children(path),
                               "the candidacy's node", 20)
            sid = pe.last_session()[0]
            log_at = os.path.getsize(ens.log_path(zl))
            pe.blackhole()
            # The leader's word that it expired the session (and submitted
            # its close) comes T after the silence began; the client gives
            # it up itself only 2/3 T later.
            zkc.until(lambda: _logged(ens.log_path(zl), log_at, f"Expiring session 0x{sid:x}"),
                      "the leader expiring the session", T / 1000 + 3)
            pe.set_pass()
            _, seen = api.wait_event(xe, {"EXPIRED"}, 10)
            assert "RECONNECTED" not in [d["type"] for d in seen]
            assert api.lib.zkelect_resign(xe) == 0
            api.wait_event(xe, {"RESIGNED"}, 20)
            # The leader's own view, which applies the close only once the
            # quorum committed it.
            left = kz.get_children(path)
            assert old not in left, f"RESIGNED while the expired session's node {old} remained"
    finally:
        kz.stop()
        kz.close()


def _logged(log, offset, text):
    with open(log, "rb") as f:
        f.seek(offset)
        return text.encode() in f.read()

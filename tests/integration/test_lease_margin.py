"""zkelect_client_lease_margin_ms reads back the lease margin in force (issue
30, item 2), so that no program (zkelect run) derives the library's rule
again: lease.margin.ms when set, else 1/20 of the negotiated session timeout
and at least 10 ms; 0 before a session was negotiated."""

import time
import uuid

from bed import zkc


def test_the_margin_in_force_is_read_back(api, handles, zk):
    lib = api.lib
    derived = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=4000)
    t = lib.zkelect_client_session_timeout_ms(derived)
    assert t > 0
    assert lib.zkelect_client_lease_margin_ms(derived) == max(t // 20, 10)
    configured = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=4000,
                                      lease_margin_ms=300)
    assert lib.zkelect_client_lease_margin_ms(configured) == 300
    # A client that never reached a server has no margin yet.
    nowhere = api.client(zk_hosts="127.0.0.1:1", zk_session_timeout_ms=4000, zk_log_level="none")
    handles["c"].append(nowhere)
    assert lib.zkelect_client_lease_margin_ms(nowhere) == 0
    assert lib.zkelect_client_lease_margin_ms(None) == 0


def test_a_large_margin_keeps_a_steady_leader(api, handles, zk):
    """A margin that fits T (below T/2) but is above T/6 leaves a lease,
    T/2 - margin, shorter than a keepalive every T/6: the leader ran out of
    lease before each keepalive and was DEPOSED and ELECTED again at every
    one (zkelect-sim seeds 388 and 39786, where a server's shorter timeout
    made a 0.3 T margin 0.45 T'). The keepalive comes every
    (T/2 - margin)/2 instead, and the leader stays one."""
    T, margin = 4000, 1500  # a lease of 500 ms; T/6 is 667 ms
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                             lease_margin_ms=margin)
    assert api.lib.zkelect_client_session_timeout_ms(c) == T
    e = zkc.new_election(api, handles, c, f"/t/margin-{uuid.uuid4().hex[:8]}", "a")
    assert api.lib.zkelect_volunteer(e) == 0
    api.wait_event(e, {"ELECTED"}, 15)
    # Past the handshake's own lease: every lease now comes from keepalives.
    seen, not_leader = [], 0
    deadline = time.monotonic() + T / 1000 + 3.0
    while time.monotonic() < deadline:
        d = api.next_event(e, 10)
        if d:
            seen.append(d["type"])
        if not api.lib.zkelect_is_leader(e):
            not_leader += 1
    assert "DEPOSED" not in seen, seen
    assert not_leader == 0, f"is_leader answered 0 {not_leader} times; events {seen}"

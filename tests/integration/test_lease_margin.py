"""zkelect_client_lease_margin_ms reads back the lease margin in force (issue
30, item 2), so that no program (zkelect run) derives the library's rule
again: lease.margin.ms when set, else 1/20 of the negotiated session timeout
and at least 10 ms; 0 before a session was negotiated."""

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

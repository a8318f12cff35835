"""The bound on a session's candidate nodes (zk.session.nodes.max.bytes).

ZooKeeper ends a session (close or expiry) with one transaction that lists
every ephemeral node of the session. With 100,000 elections on one client
that transaction was 10.5 MB, far above the servers' jute.maxbuffer (1 MB):
the ensemble lost its quorum and a server could not reload its log
(docs/limits.md, "Many elections on one client"). The client now refuses,
with ZKELECT_ELIMIT and nothing done, a volunteer (or a step back) whose
node would bring its candidate nodes above the bound. Each node counts its
longest full path (the path, "/", a 57-byte name) plus 4, from the
volunteer until its node is gone.

Here the bound leaves room for three candidacies; the nodes are listed
with a plain ZooKeeper client (kazoo)."""

import ctypes as C
import time
import uuid

from bed import zkc

T = 4000
NAME = 57  # "_c_" + uuid + "-latch-" + "-2147483648"


def node_bytes(path):
    return len(path) + 1 + NAME + 4


def _lib(api):
    lib = api.lib
    lib.zkelect_requeue.restype, lib.zkelect_requeue.argtypes = C.c_int, [C.c_void_p]
    return lib


def _name(lib, rc):
    # The library's own name for the code (gen/vocabulary.toml), not a copy.
    return lib.zkelect_err_name(rc).decode()


def _path():
    return f"/t/nodes-bound-{uuid.uuid4().hex[:8]}"


def _ids(kz, path):
    kz.sync(path)
    return sorted(kz.get(f"{path}/{n}")[0].decode() for n in kz.get_children(path))


def _refused(lib, e):
    rc = lib.zkelect_volunteer(e)
    assert _name(lib, rc) == "ZKELECT_ELIMIT", f"volunteer: {rc}, expected ZKELECT_ELIMIT"
    why = lib.zkelect_last_error().decode()
    assert why.startswith("ZKELECT_ELIMIT: ") and "zk.session.nodes.max.bytes" in why, why
    return why


def test_the_fourth_volunteer_is_refused_and_makes_no_node(api, handles, zk, kz):
    lib = _lib(api)
    path = _path()
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                             zk_session_nodes_max_bytes=3 * node_bytes(path))
    es = [zkc.new_election(api, handles, c, path, pid) for pid in "abcd"]
    for e in es[:3]:
        assert lib.zkelect_volunteer(e) == 0
    why = _refused(lib, es[3])
    print("\n" + why)
    assert str(3 * node_bytes(path)) in why and str(4 * node_bytes(path)) in why, why
    api.wait_event(es[0], {"ELECTED"}, 10)
    for e in es[1:3]:
        api.wait_event(e, {"FOLLOWING"}, 10)
    time.sleep(0.5)  # anything the refused call had sent would have landed
    assert _ids(kz, path) == ["a", "b", "c"]
    assert lib.zkelect_next_event(es[3], 0) is None  # no event either
    # A step back would make a node beside the old one: refused, nothing changed.
    assert _name(lib, lib.zkelect_requeue(es[1])) == "ZKELECT_ELIMIT"
    assert lib.zkelect_is_leader(es[0]) == 1
    # Once a resign has settled (RESIGNED: its node is gone) there is room.
    assert lib.zkelect_resign(es[0]) == 0
    api.wait_event(es[0], {"RESIGNED"}, 10)
    assert lib.zkelect_volunteer(es[3]) == 0
    api.wait_event(es[3], {"FOLLOWING"}, 10)
    assert _ids(kz, path) == ["b", "c", "d"]
    _refused(lib, es[0])


def test_no_bytes_leak_through_resigns_requeues_and_destroys(api, handles, zk, kz):
    lib = _lib(api)
    path = _path()
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                             zk_session_nodes_max_bytes=3 * node_bytes(path))
    e = zkc.new_election(api, handles, c, path, "x")
    for i in range(8):
        assert lib.zkelect_volunteer(e) == 0, i
        api.wait_event(e, {"ELECTED"}, 10)
        if i % 2:
            # a volunteer while the resign is under way (both nodes count)
            assert lib.zkelect_resign(e) == 0
            assert lib.zkelect_volunteer(e) == 0
            api.wait_event(e, {"RESIGNED"}, 10)
            api.wait_event(e, {"ELECTED"}, 10)
        assert lib.zkelect_requeue(e) == 0  # the old node and the new one: two of three
        api.wait_event(e, {"RESIGNED"}, 10)
        api.wait_event(e, {"ELECTED"}, 10)
        assert lib.zkelect_resign(e) == 0
        api.wait_event(e, {"RESIGNED"}, 10)
        # a candidate destroyed (close): its bytes come back too
        d = api.election(c, path, f"d{i}")
        assert lib.zkelect_volunteer(d) == 0
        if i % 2:
            api.wait_event(d, {"ELECTED"}, 10)
        assert lib.zkelect_election_destroy(d) == 0
    # the bound holds exactly three again
    es = [e] + [zkc.new_election(api, handles, c, path, pid) for pid in "bcd"]
    for x in es[:3]:
        assert lib.zkelect_volunteer(x) == 0
    _refused(lib, es[3])
    for x in es[:3]:
        api.wait_event(x, {"ELECTED", "FOLLOWING"}, 10)
    assert _ids(kz, path) == ["b", "c", "x"]


def test_zero_means_no_bound(api, handles, zk, kz):
    lib = _lib(api)
    path = _path()
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                             zk_session_nodes_max_bytes=0)
    es = [zkc.new_election(api, handles, c, path, f"p{k:02d}") for k in range(12)]
    for e in es:
        assert lib.zkelect_volunteer(e) == 0
    for e in es:
        api.wait_event(e, {"ELECTED", "FOLLOWING"}, 10)
    assert len(_ids(kz, path)) == 12


def test_an_expired_session_keeps_the_reservation(api, handles, zk, kz, proxies):
    """After an expiry the old nodes go with the old session, and the
    candidacies make theirs again: they keep their bytes, no more."""
    lib = _lib(api)
    path = _path()
    T2 = 2000
    c = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T2,
                             zk_session_nodes_max_bytes=3 * node_bytes(path))
    es = [zkc.new_election(api, handles, c, path, pid) for pid in "abcd"]
    for e in es[:3]:
        assert lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"ELECTED", "FOLLOWING"}, 10)
    proxies.blackhole()
    sid = lib.zkelect_client_session_id(c)
    deadline = time.monotonic() + 3 * T2 / 1000 + 10
    while any(f"0x{sid & (2**64 - 1):x}" in zk.four(i, "cons") for i in range(zk.n)):
        assert time.monotonic() < deadline, "the session never expired on the servers"
        time.sleep(0.1)
    proxies.heal()
    for e in es[:3]:
        api.wait_event(e, {"EXPIRED"}, 3 * T2 / 1000 + 10)
    _refused(lib, es[3])
    zkc.until(lambda: _ids(kz, path) == ["a", "b", "c"], "the three nodes made again", 20)
    _refused(lib, es[3])
    for e in es[:3]:
        assert lib.zkelect_resign(e) == 0
    for e in es[:3]:
        api.wait_event(e, {"RESIGNED"}, 10)
    for e in es[1:]:
        assert lib.zkelect_volunteer(e) == 0
    _refused(lib, es[0])

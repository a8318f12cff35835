"""zkelect_client_transfer (issue 33): a transfer asked from outside the
election, by a client that holds no candidacy. The asker writes a request
in the election path's data naming the leader's live node; the leader,
which watches that data while it leads, runs the same transfer as
zkelect_transfer and writes the outcome back (docs/semantics.md, "A
transfer asked from outside"). What P's data may hold that is not exactly
such a request changes nothing."""

import threading
import time
import uuid

from bed import zkc

from test_transfer import _drain, _err, _ghost, _line, _token

T = 4000


def _fn(lib):
    f = lib.zkelect_client_transfer
    f.restype, f.argtypes = zkc.C.c_int, [zkc.C.c_void_p, zkc.C.c_char_p, zkc.C.c_char_p,
                                          zkc.C.c_int]
    return f


def _line_nodes(kz, path):
    kz.sync(path)
    return sorted(kz.get_children(path), key=lambda n: int(n.rsplit("latch-", 1)[1]))


def _candidates(api, handles, zk, kz, path, n, others=0):
    """n candidates c0..c{n-1}, each on its own session, joined in order
    behind `others` already in line."""
    es = {}
    for i in range(n):
        c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        e = zkc.new_election(api, handles, c, path, f"c{i}")
        assert api.lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"ELECTED", "FOLLOWING"}, 10)
        es[f"c{i}"] = e
    zkc.until(lambda: len(_line(kz, path)) == n + others, "all in line")
    return es


def test_an_outside_transfer_to_the_2nd_and_the_4th(api, handles, zk, kz):
    lib = api.lib
    transfer = _fn(lib)
    path = f"/t/xout-{uuid.uuid4().hex[:8]}"
    es = _candidates(api, handles, zk, kz, path, 4)
    asker = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    with zkc.Sampler(lib, [es.values()]) as ov:
        for place in (1, 3):
            line = _line(kz, path)
            leader, target = line[0], line[place]
            token = _token(lib, es[leader])
            for e in es.values():
                _drain(api, e)
            began = time.monotonic()
            rc = transfer(asker, path.encode(), target.encode(), 5000)
            took = time.monotonic() - began
            assert _err(lib, rc) == "OK", (place, _err(lib, rc))
            print(f"\noutside transfer to place {place + 1}: {took * 1000:.1f} ms")
            ev, _ = api.wait_event(es[target], {"ELECTED"}, 10)
            assert ev["token"] > token, (ev, token)
            assert lib.zkelect_is_leader(es[leader]) == 0
            assert lib.zkelect_is_leader(es[target]) == 1
            _, seen = api.wait_event(es[leader], {"FOLLOWING"}, 10)
            assert seen[0]["type"] == "DEPOSED" and seen[0]["reason"] == "transferred", seen
            for who in line[1:place]:
                back, _ = api.wait_event(es[who], {"STEPPED_BACK"}, 10)
                assert back["id"] == target, back
            zkc.until(lambda: len(_line(kz, path)) == 4, "everyone back in line")
            assert _line(kz, path)[0] == target
            # The asker cleared the outcome the leader left for it.
            assert kz.get(path)[0] in (None, b""), kz.get(path)
    assert ov.rounds > 50, ov.rounds
    assert not ov.overlaps, ov.overlaps[:5]


def test_a_request_written_by_hand_is_what_the_leader_acts_on(api, handles, zk, kz):
    """The wire shape itself, without the library's asker: the leader takes
    it up and writes the outcome back in its place."""
    lib = api.lib
    path = f"/t/xout-{uuid.uuid4().hex[:8]}"
    es = _candidates(api, handles, zk, kz, path, 2)
    leader_node = _line_nodes(kz, path)[0]
    _, st = kz.get(path)
    kz.set(path, f"zkelect-transfer-request 1 {leader_node} 3000 c1".encode(), version=st.version)
    api.wait_event(es["c1"], {"ELECTED"}, 10)
    assert lib.zkelect_is_leader(es["c0"]) == 0
    assert kz.get(path)[0] == f"zkelect-transfer-result 1 {leader_node} 0 c1".encode()


def test_nothing_changes_without_a_candidate_or_a_leader(api, handles, zk, kz):
    lib = api.lib
    transfer = _fn(lib)
    lib.zkelect_last_error.restype = zkc.C.c_char_p
    path = f"/t/xout-{uuid.uuid4().hex[:8]}"
    asker = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    # No path at all, then a path with nobody in it: no leader.
    assert _err(lib, transfer(asker, path.encode(), b"x", 1000)) == "ZKELECT_ENOLEADER"
    kz.ensure_path(path)
    assert _err(lib, transfer(asker, path.encode(), b"x", 1000)) == "ZKELECT_ENOLEADER"
    es = _candidates(api, handles, zk, kz, path, 2)
    token = _token(lib, es["c0"])
    codes = {
        "unknown id": transfer(asker, path.encode(), b"nobody", 1000),
        "the leader itself": transfer(asker, path.encode(), b"c0", 1000),
        "NULL client": transfer(None, path.encode(), b"c1", 1000),
        "NULL path": transfer(asker, None, b"c1", 1000),
        "bad path": transfer(asker, b"no-slash", b"c1", 1000),
        "NULL id": transfer(asker, path.encode(), None, 1000),
        "empty id": transfer(asker, path.encode(), b"", 1000),
        "timeout 0": transfer(asker, path.encode(), b"c1", 0),
        "timeout too long": transfer(asker, path.encode(), b"c1", 600001),
    }
    assert {k: _err(lib, v) for k, v in codes.items()} == {
        "unknown id": "ZKELECT_ENOCANDIDATE", "the leader itself": "OK",
        "NULL client": "ZKELECT_EINVAL", "NULL path": "ZKELECT_EINVAL",
        "bad path": "ZKELECT_EINVAL", "NULL id": "ZKELECT_EINVAL",
        "empty id": "ZKELECT_EINVAL", "timeout 0": "ZKELECT_EINVAL",
        "timeout too long": "ZKELECT_EINVAL"}
    assert lib.zkelect_is_leader(es["c0"]) == 1 and _token(lib, es["c0"]) == token
    assert _line(kz, path) == ["c0", "c1"]
    assert kz.get(path)[0] in (None, b""), "a request was written"
    for e in es.values():
        assert all(d["type"] not in ("DEPOSED", "STEPPED_BACK") for d in _drain(api, e))


def test_a_curator_leader_is_refused_at_once(api, handles, zk, kz):
    lib = api.lib
    transfer = _fn(lib)
    path = f"/t/xout-{uuid.uuid4().hex[:8]}"
    kz.ensure_path(path)
    _ghost(kz, path, "curator", version=4)
    es = _candidates(api, handles, zk, kz, path, 1, others=1)
    asker = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    began = time.monotonic()
    rc = transfer(asker, path.encode(), b"c0", 5000)
    assert _err(lib, rc) == "ZKELECT_ENOTSUP"
    assert time.monotonic() - began < 2.5
    assert kz.get(path)[0] in (None, b""), "a request was written"
    assert all(d["type"] != "STEPPED_BACK" for d in _drain(api, es["c0"]))


def test_malformed_requests_change_nothing(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/xout-{uuid.uuid4().hex[:8]}"
    es = _candidates(api, handles, zk, kz, path, 3)
    token = _token(lib, es["c0"])
    nodes = _line_nodes(kz, path)
    leader = nodes[0]
    bad = [
        f"zkelect-transfer-request 1 {nodes[1]} 3000 c2",       # not the leader's node
        f"zkelect-transfer-request 2 {leader} 3000 c2",         # unknown version
        f"zkelect-transfer-request 1 {leader} 0 c2",            # timeout out of range
        f"zkelect-transfer-request 1 {leader} 0600 c2",         # not a plain number
        f"zkelect-transfer-request 1 {leader} 700000 c2",       # beyond 10 minutes
        f"zkelect-transfer-request 1 {leader} 3000 ",           # empty id
        f"zkelect-transfer-request 1 {leader} 3000 c2\x01",     # control character
        f"zkelect-transfer-request 1 ../{leader} 3000 c2",      # not a node name
        f"zkelect-transfer-request 1 {leader} 3000",            # words missing
        f"zkelect-transfer-request  1 {leader} 3000 c2",        # two spaces
        f"zkelect-transfer-result 1 {leader} 0 c2",             # an outcome, not a request
        f"zkelect-transfer-request 1 {leader} 3000 " + "c" * 1200,  # too long
        "zkelect-transfer-request",
        "\xff\xfe garbage",
    ]
    for data in bad:
        raw = data.encode("latin-1") if "\xff" in data else data.encode()
        kz.set(path, raw)
        # The leader's watch fires and it reads within milliseconds on
        # loopback; a leader that took this up would overwrite it.
        time.sleep(0.1)
        assert kz.get(path)[0] == raw, (data, kz.get(path)[0])
        assert lib.zkelect_is_leader(es["c0"]) == 1, data
    # A well-formed request for the leader's own id follows the bad ones:
    # once its answer is there, every bad one before it was read and passed.
    kz.set(path, f"zkelect-transfer-request 1 {leader} 3000 c0".encode())
    zkc.until(lambda: kz.get(path)[0].startswith(b"zkelect-transfer-result"), "the leader answered")
    assert lib.zkelect_is_leader(es["c0"]) == 1 and _token(lib, es["c0"]) == token
    assert _line(kz, path) == ["c0", "c1", "c2"]
    for e in es.values():
        assert all(d["type"] not in ("DEPOSED", "STEPPED_BACK") for d in _drain(api, e))


def test_a_request_nobody_takes_up_is_withdrawn(api, handles, zk, kz):
    """A leader that says it can transfer (a version-8 node) but never reads
    the request (stalled, or a 1.2 development build): the asker times out
    and takes its request back; nothing changed. Meanwhile it waits on
    watches, not by reading the path's data again and again: its requests
    are counted."""
    lib = api.lib
    transfer = _fn(lib)
    path = f"/t/xout-{uuid.uuid4().hex[:8]}"
    kz.ensure_path(path)
    _ghost(kz, path, "ghost", version=8)
    es = _candidates(api, handles, zk, kz, path, 1, others=1)
    asker = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=1000)
    sent = api.counter_named(asker, "zk_requests")
    began = time.monotonic()
    rc = transfer(asker, path.encode(), b"c0", 500)
    took = time.monotonic() - began
    sent = api.counter_named(asker, "zk_requests") - sent
    assert _err(lib, rc) == "ZKELECT_ETIMEDOUT"
    assert 1.4 < took < 3, took
    # The listing and its reads (4), the read and the write of the request,
    # a read of the data and of the leader's node per session timeout
    # (three rounds), the withdrawal, the pings of 1.5 s (T/3 apart):
    # 17 here.
    # Read every 50 ms it was 38.
    print(f"\nrequests while waiting out an untaken request: {sent}")
    assert sent <= 25, sent
    assert kz.get(path)[0] == b"", kz.get(path)
    assert _line(kz, path) == ["ghost", "c0"]
    assert all(d["type"] != "STEPPED_BACK" for d in _drain(api, es["c0"]))


def test_a_leader_gone_before_it_read_the_request_is_followed_to_the_next(api, handles, zk,
                                                                         kz):
    """The leader's node goes after the request was written and before the
    leader took it up (a leader that handed over just then, or died): the
    asker withdraws the request and asks whoever leads next, within the same
    timeout, instead of answering ENOTLEADER with nothing done. Here the
    leader is a version-8 node that never reads (stalled), deleted by hand
    once the request names it; c0 leads next and hands over to c1."""
    lib = api.lib
    transfer = _fn(lib)
    path = f"/t/xout-{uuid.uuid4().hex[:8]}"
    kz.ensure_path(path)
    ghost = _ghost(kz, path, "ghost", version=8)
    es = _candidates(api, handles, zk, kz, path, 2, others=1)
    asker = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    ghost_node = ghost.rsplit("/", 1)[1]
    lib.zkelect_last_error.restype = zkc.C.c_char_p
    out = {}

    def ask():  # the message is the asking thread's
        out["rc"] = transfer(asker, path.encode(), b"c1", 5000)
        out["why"] = lib.zkelect_last_error()

    th = threading.Thread(target=ask)
    th.start()
    try:
        zkc.until(lambda: kz.get(path)[0].startswith(
            b"zkelect-transfer-request 1 " + ghost_node.encode()), "the request to the ghost")
        assert "rc" not in out, _err(lib, out["rc"])
        kz.delete(ghost)
    finally:
        th.join(30)
    assert not th.is_alive()
    assert _err(lib, out["rc"]) == "OK", out["why"]
    api.wait_event(es["c1"], {"ELECTED"}, 10)
    assert lib.zkelect_is_leader(es["c1"]) == 1
    assert lib.zkelect_is_leader(es["c0"]) == 0
    zkc.until(lambda: _line(kz, path) == ["c1", "c0"], "c1 first, c0 behind it")
    assert kz.get(path)[0] in (None, b""), kz.get(path)


def test_two_askers_at_once_one_transfer(api, handles, zk, kz):
    lib = api.lib
    transfer = _fn(lib)
    path = f"/t/xout-{uuid.uuid4().hex[:8]}"
    es = _candidates(api, handles, zk, kz, path, 3)
    askers = [zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
              for _ in range(2)]
    out = {}
    ths = [threading.Thread(target=lambda i=i, to=to: out.__setitem__(
        i, _err(lib, transfer(askers[i], path.encode(), to, 5000))))
        for i, to in ((0, b"c1"), (1, b"c2"))]
    for th in ths:
        th.start()
    for th in ths:
        th.join(20)
    # Both ran, one after the other (the second waits the first out, and a
    # leader that handed over before reading its request is followed to the
    # next); never two transfers at once.
    assert set(out.values()) == {"OK"}, out
    leader = _line(kz, path)[0]
    assert lib.zkelect_is_leader(es[leader]) == 1

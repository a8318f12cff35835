"""zkelect_requeue (issue 33): step back to the back of the line in one
call, a resign and a volunteer with nothing between them. A leader stops
leading when the call returns and the next in line leads; a follower moves
behind everyone; the candidacy never stops being one, and its events come
in order: DEPOSED (a leader), RESIGNED, then FOLLOWING or ELECTED."""

import uuid

from bed import zkc

from test_transfer import _drain, _err, _line

T = 4000


def _requeue(lib):
    f = lib.zkelect_requeue
    f.restype, f.argtypes = zkc.C.c_int, [zkc.C.c_void_p]
    return f


def _types(seen):
    return [d["type"] for d in seen]


def test_a_leader_and_a_follower_step_back_in_one_call(api, handles, zk, kz):
    lib = api.lib
    requeue = _requeue(lib)
    path = f"/t/requeue-{uuid.uuid4().hex[:8]}"
    es = {}
    for i in range(3):
        c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        e = zkc.new_election(api, handles, c, path, f"c{i}")
        assert lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"ELECTED", "FOLLOWING"}, 10)
        es[f"c{i}"] = e
    zkc.until(lambda: _line(kz, path) == ["c0", "c1", "c2"], "three in line")
    with zkc.Sampler(lib, [es.values()]) as ov:
        for e in es.values():
            _drain(api, e)
        # The leader: 0 at once, the next leads, it follows at the back.
        assert _err(lib, requeue(es["c0"])) == "OK"
        assert lib.zkelect_is_leader(es["c0"]) == 0
        _, seen = api.wait_event(es["c0"], {"FOLLOWING"}, 10)
        assert _types(seen) == ["DEPOSED", "RESIGNED", "FOLLOWING"], seen
        assert seen[0]["reason"] == "resigned", seen
        api.wait_event(es["c1"], {"ELECTED"}, 10)
        assert _line(kz, path) == ["c1", "c2", "c0"]
        # A follower: behind everyone, nobody else moves.
        assert _err(lib, requeue(es["c2"])) == "OK"
        _, seen = api.wait_event(es["c2"], {"FOLLOWING"}, 10)
        assert _types(seen) == ["RESIGNED", "FOLLOWING"], seen
        assert _line(kz, path) == ["c1", "c0", "c2"]
        assert lib.zkelect_is_leader(es["c1"]) == 1
    assert ov.rounds > 20, ov.rounds
    assert not ov.overlaps, ov.overlaps[:5]


def test_alone_it_leads_again_and_refuses_a_non_candidate(api, handles, zk, kz):
    lib = api.lib
    requeue = _requeue(lib)
    path = f"/t/requeue-{uuid.uuid4().hex[:8]}"
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    e = zkc.new_election(api, handles, c, path, "solo")
    # Never volunteered: not a candidate.
    assert _err(lib, requeue(e)) == "ZKELECT_ESTATE"
    assert _err(lib, requeue(None)) == "ZKELECT_EINVAL"
    assert lib.zkelect_volunteer(e) == 0
    ev, _ = api.wait_event(e, {"ELECTED"}, 10)
    token = ev["token"]
    assert _err(lib, requeue(e)) == "OK"
    ev, seen = api.wait_event(e, {"ELECTED"}, 10)
    assert _types(seen) == ["DEPOSED", "RESIGNED", "ELECTED"], seen
    assert ev["token"] > token
    assert _line(kz, path) == ["solo"]
    # Resigned: a candidate no more.
    assert lib.zkelect_resign(e) == 0
    api.wait_event(e, {"RESIGNED"}, 10)
    assert _err(lib, requeue(e)) == "ZKELECT_ESTATE"

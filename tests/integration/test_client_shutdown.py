"""zkelect_client_shutdown (issue 56): every election and observer of a
client ends at once, then its session. Leaders stop leading before any
delete is sent (no two leaders: another client's candidates take over
only after), every node goes, the deletes leave together (not one round
trip each), the handles stay safe to call and to destroy, and a shutdown
that cannot reach ZooKeeper returns within its timeout and says so."""

import threading
import time
import uuid

from bed import zkc

from test_transfer import _drain, _err

T = 4000


def _shutdown(lib, client, timeout_ms):
    return _err(lib, lib.zkelect_client_shutdown(client, timeout_ms))


def _last(lib):
    return (lib.zkelect_last_error() or b"").decode()


def _ids(kz, path):
    kz.sync(path)
    return [kz.get(f"{path}/{n}")[0].decode() for n in kz.get_children(path)]


def test_shutdown_ends_leaders_followers_and_an_observer_at_once(api, handles, zk, kz):
    lib = api.lib
    base = f"/t/shutdown-{uuid.uuid4().hex[:8]}"
    a = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    b = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    lead = [f"{base}/lead{i}" for i in range(4)]
    follow = [f"{base}/follow{i}" for i in range(4)]
    ours, theirs = {}, {}
    # On `lead` paths a leads and b waits behind it; on `follow` the reverse.
    for p in lead:
        ours[p] = zkc.new_election(api, handles, a, p, "a")
        assert lib.zkelect_volunteer(ours[p]) == 0
        api.wait_event(ours[p], {"ELECTED"}, 10)
    for p in follow:
        theirs[p] = zkc.new_election(api, handles, b, p, "b")
        assert lib.zkelect_volunteer(theirs[p]) == 0
        api.wait_event(theirs[p], {"ELECTED"}, 10)
    for p in lead:
        theirs[p] = zkc.new_election(api, handles, b, p, "b")
        assert lib.zkelect_volunteer(theirs[p]) == 0
        api.wait_event(theirs[p], {"FOLLOWING"}, 10)
    for p in follow:
        ours[p] = zkc.new_election(api, handles, a, p, "a")
        assert lib.zkelect_volunteer(ours[p]) == 0
        api.wait_event(ours[p], {"FOLLOWING"}, 10)
    idle = zkc.new_election(api, handles, a, f"{base}/idle", "a")  # never volunteered
    obs = api.observer(a, lead[0])
    handles["o"].append(obs)
    api.wait_event(obs, {"LEADER_CHANGED"}, 10, observer=True)
    for e in list(ours.values()) + list(theirs.values()):
        _drain(api, e)

    # When each of our nodes goes, its handle must already answer 0.
    at_delete = {}
    gone = threading.Event()

    def watcher(p, e):
        def on_event(event):
            at_delete[p] = lib.zkelect_is_leader(e)
            if len(at_delete) == len(lead):
                gone.set()
        return on_event
    for p in lead:
        node = next(n for n in kz.get_children(p) if kz.get(f"{p}/{n}")[0] == b"a")
        assert kz.exists(f"{p}/{node}", watch=watcher(p, ours[p]))

    with zkc.Sampler(lib, [(ours[p], theirs[p]) for p in lead]) as sampler:
        assert _shutdown(lib, a, 10000) == "OK", _last(lib)
        # Returned: every one of our nodes is gone, and no leadership is left.
        for p in lead + follow:
            assert _ids(kz, p) == ["b"], (p, _ids(kz, p))
            assert lib.zkelect_is_leader(ours[p]) == 0
        assert gone.wait(10)
        for p in lead:
            api.wait_event(theirs[p], {"ELECTED"}, 10)
    assert at_delete == {p: 0 for p in lead}, at_delete
    assert sampler.rounds > 5, sampler.rounds
    assert not sampler.overlaps, sampler.overlaps[:5]
    # What a resign says: DEPOSED (resigned) for a leader, RESIGNED for all,
    # nothing for the idle one; then nothing more.
    for p in lead:
        seen = _drain(api, ours[p])
        assert [(d["type"], d["reason"]) for d in seen] == [("DEPOSED", "resigned"),
                                                           ("RESIGNED", "none")], seen
    for p in follow:
        assert [d["type"] for d in _drain(api, ours[p])] == ["RESIGNED"]
        assert lib.zkelect_is_leader(theirs[p]) == 1
    assert [d for d in _drain(api, idle) if d["type"] != "WARNING"] == []
    assert lib.zkelect_client_is_connected(a) == 0
    # The handles free without a round trip: the client sends nothing more.
    sent = api.counter(a, zkc.COUNTER_REQUESTS)
    for e in list(ours.values()) + [idle]:
        assert lib.zkelect_election_destroy(e) == 0
    assert lib.zkelect_observer_destroy(obs) == 0
    assert api.counter(a, zkc.COUNTER_REQUESTS) == sent
    handles["e"] = [e for e in handles["e"] if e not in set(ours.values()) | {idle}]
    handles["o"].remove(obs)
    handles["c"].remove(a)
    assert lib.zkelect_client_destroy(a) == 0


def test_calls_after_shutdown_and_bad_input_give_their_codes(api, handles, zk):
    lib = api.lib
    path = f"/t/shutdown-{uuid.uuid4().hex[:8]}"
    assert _shutdown(lib, None, 1000) == "ZKELECT_EINVAL"
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    e = zkc.new_election(api, handles, c, path, "x")
    assert lib.zkelect_volunteer(e) == 0
    api.wait_event(e, {"ELECTED"}, 10)
    # Out of range: refused, nothing done.
    assert _shutdown(lib, c, 600001) == "ZKELECT_EINVAL"
    assert lib.zkelect_is_leader(e) == 1
    assert _shutdown(lib, c, 5000) == "OK", _last(lib)
    assert _shutdown(lib, c, 5000) == "ZKELECT_ECLOSED"
    assert "already" in _last(lib)
    assert lib.zkelect_is_leader(e) == 0
    assert _err(lib, lib.zkelect_volunteer(e)) == "ZKELECT_ECLOSED"
    assert _err(lib, lib.zkelect_resign(e)) == "ZKELECT_ECLOSED"
    assert _err(lib, lib.zkelect_requeue(e)) == "ZKELECT_ECLOSED"
    assert _err(lib, lib.zkelect_await_leader(e, 100)) == "ZKELECT_ECLOSED"
    assert _err(lib, lib.zkelect_transfer(e, b"y", 100)) == "ZKELECT_ECLOSED"
    assert _err(lib, lib.zkelect_release(e)) == "ZKELECT_ECLOSED"
    assert _err(lib, api.leader_id(e)[0]) == "ZKELECT_ECLOSED"
    token = zkc.C.c_int64(0)
    assert _err(lib, lib.zkelect_fencing_token(e, zkc.C.byref(token))) == "ZKELECT_ENOTLEADER"
    assert _err(lib, lib.zkelect_client_await_connected(c, 100)) == "ZKELECT_ECLOSED"
    assert _err(lib, lib.zkelect_client_transfer(c, path.encode(), b"y", 100)) == "ZKELECT_ECLOSED"
    err = zkc.C.create_string_buffer(512)
    for made in (lib.zkelect_election_new(c, path.encode(), b"z", err, 512),
                 lib.zkelect_observer_new(c, path.encode(), err, 512),
                 lib.zkelect_client_participants(c, path.encode(), err, 512),
                 lib.zkelect_participants(e, err, 512)):
        assert not made
        assert err.value.decode().startswith("ZKELECT_ECLOSED"), err.value
    assert lib.zkelect_client_is_connected(c) == 0
    # What is read without ZooKeeper still answers.
    assert api.stats(c, client=True)["connected"] is False
    assert api.stats(e)["is_leader"] is False
    # Still the caller's to free, in the usual order.
    assert _err(lib, lib.zkelect_client_destroy(c)) == "ZKELECT_ESTATE"
    assert lib.zkelect_election_destroy(e) == 0
    handles["e"].remove(e)


def test_the_deletes_leave_together_not_one_round_trip_each(api, handles, zk, proxies):
    """200 elections behind a link of 200 ms a round trip: one by one
    their deletes would take 40 s at the least; together about one."""
    lib = api.lib
    base = f"/t/shutdown-{uuid.uuid4().hex[:8]}"
    n = 200
    c = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=10000)
    es = [zkc.new_election(api, handles, c, f"{base}/e{i}", "x") for i in range(n)]
    for e in es:
        assert lib.zkelect_volunteer(e) == 0
    for e in es:
        api.wait_event(e, {"ELECTED"}, 30)
    proxies.delay(100)
    try:
        t0 = time.monotonic()
        assert _shutdown(lib, c, 30000) == "OK", _last(lib)
        took = time.monotonic() - t0
    finally:
        proxies.set_pass()
    # A bound far from both: a few round trips and the close, under load.
    assert took < 8.0, took
    for e in es:
        assert [d["type"] for d in _drain(api, e)][-1:] == ["RESIGNED"]


def test_shutdown_without_zookeeper_returns_within_its_timeout_and_says_so(api, handles, zk, kz,
                                                                            proxies):
    lib = api.lib
    base = f"/t/shutdown-{uuid.uuid4().hex[:8]}"
    c = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T)
    paths = [f"{base}/e{i}" for i in range(5)]
    es = [zkc.new_election(api, handles, c, p, "x") for p in paths]
    for e in es:
        assert lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"ELECTED"}, 10)
    other = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    theirs = [zkc.new_election(api, handles, other, p, "y") for p in paths]
    for e in theirs:
        assert lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"FOLLOWING"}, 10)
    proxies.blackhole()
    t0 = time.monotonic()
    rc = _shutdown(lib, c, 1500)
    took = time.monotonic() - t0
    why = _last(lib)
    healed_at = time.monotonic()
    proxies.set_pass()
    assert rc == "ZKELECT_ETIMEDOUT", (rc, why)
    assert "5 of 5" in why and "session timeout" in why, why
    assert 1.4 <= took < 1.5 + 1.0, took
    assert all(lib.zkelect_is_leader(e) == 0 for e in es)
    # The servers remove the nodes with the session (at most T after they
    # last heard of it, plus their expiry tick); the others lead then.
    for e in theirs:
        api.wait_event(e, {"ELECTED"}, T / 1000 + 10)
    assert time.monotonic() - healed_at < T / 1000 + 10
    for p in paths:
        assert _ids(kz, p) == ["y"]
    for e in es:
        assert lib.zkelect_election_destroy(e) == 0
        handles["e"].remove(e)
    assert lib.zkelect_client_destroy(c) == 0
    handles["c"].remove(c)

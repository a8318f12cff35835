"""zkelect_transfer (issue 33): a leader hands leadership to a named
candidate. The candidates ahead of the target step back to the back of the
line (STEPPED_BACK, reason transferred) and stay candidates; the old leader
answers is_leader 0 before the target can answer 1 (in-process samples of
every handle), the fencing token grows, and a target that is gone or not
next in time still leaves the election with a leader, the call's code
saying what happened (docs/semantics.md, "Transferring leadership")."""

import threading
import time
import uuid

import pytest

from bed import zkc

T = 4000
N = 10


def _err(lib, rc):
    return lib.zkelect_err_name(rc).decode() if rc else "OK"


def _line(kz, path):
    """The ids in line order (by the number after the last 'latch-')."""
    kz.sync(path)
    kids = sorted(kz.get_children(path), key=lambda n: int(n.rsplit("latch-", 1)[1]))
    return [kz.get(f"{path}/{n}")[0].decode() for n in kids]


def _drain(api, e):
    return api.drain(e)


def _ten(api, handles, zk, kz, path):
    """N candidates on their own sessions, joined in order c0..c9."""
    lib = api.lib
    es = {}
    for i in range(N):
        c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        e = zkc.new_election(api, handles, c, path, f"c{i}")
        assert lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"ELECTED", "FOLLOWING"}, 10)
        es[f"c{i}"] = e
    zkc.until(lambda: len(_line(kz, path)) == N, "all ten in line")
    return es


def test_transfer_to_the_2nd_5th_and_last_of_ten(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/transfer-{uuid.uuid4().hex[:8]}"
    es = _ten(api, handles, zk, kz, path)
    token = None
    with zkc.Sampler(lib, [es.values()]) as ov:
        for place in (1, 4, N - 1):
            line = _line(kz, path)
            assert len(line) == N, line
            leader, target, ahead = line[0], line[place], line[1:place]
            for e in es.values():
                _drain(api, e)
            if token is None:
                t = zkc.C.c_int64()
                assert lib.zkelect_fencing_token(es[leader], zkc.C.byref(t)) == 0
                token = t.value
            before = {who: api.stats(es[who]) for who in line}
            began = time.monotonic()
            rc = lib.zkelect_transfer(es[leader], target.encode(), 10000)
            returned = time.monotonic()
            assert rc == 0, (place, _err(lib, rc))
            ev, _ = api.wait_event(es[target], {"ELECTED"}, 10)
            print(f"\ntransfer to place {place + 1} of {N}: call returned after "
                  f"{(returned - began) * 1000:.1f} ms, target's ELECTED read after "
                  f"{(time.monotonic() - began) * 1000:.1f} ms")
            assert ev["token"] > token, (ev, token)
            token = ev["token"]
            assert lib.zkelect_is_leader(es[leader]) == 0
            assert lib.zkelect_is_leader(es[target]) == 1
            # The old leader and those that stepped back are candidates at
            # the back (in no promised order among themselves).
            zkc.until(lambda: len(_line(kz, path)) == N, "everyone back in line")
            after = _line(kz, path)
            assert after[0] == target, after
            assert set(after[-place:]) == set(ahead) | {leader}, (after, ahead, leader)
            ev, seen = api.wait_event(es[leader], {"FOLLOWING"}, 10)
            assert [d["type"] for d in seen][:1] == ["DEPOSED"], seen
            assert seen[0]["reason"] == "transferred", seen
            for who in ahead:
                back, seen = api.wait_event(es[who], {"STEPPED_BACK"}, 10)
                assert back["reason"] == "transferred" and back["id"] == target, (who, seen)
                assert all(d["type"] != "DEPOSED" for d in seen), (who, seen)
                _, seen = api.wait_event(es[who], {"FOLLOWING"}, 10)
                assert all(d["type"] != "STEPPED_BACK" for d in seen), (who, seen)
                assert lib.zkelect_is_leader(es[who]) == 0
            # Nobody behind the target moved; none but the one right behind
            # it (watching the node before its predecessor) was woken.
            for who in line[place + 1:]:
                assert all(d["type"] != "STEPPED_BACK" for d in _drain(api, es[who])), who
            after_st = {who: api.stats(es[who]) for who in line}
            woken = {who: after_st[who]["notifications"] - before[who]["notifications"]
                     for who in line}
            sent = sum(after_st[w]["requests"] - before[w]["requests"] for w in line)
            print(f"  requests {sent}, notifications {woken}")
            assert all(woken[w] == 0 for w in line[place + 2:]), woken
    assert ov.rounds > 100, ov.rounds
    assert not ov.overlaps, ov.overlaps[:5]


def test_bad_input_gets_clear_codes_and_changes_nothing(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/transfer-{uuid.uuid4().hex[:8]}"
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    a = zkc.new_election(api, handles, c, path, "a")
    b = zkc.new_election(api, handles, c, path, "b")
    idle = zkc.new_election(api, handles, c, path, "idle")
    assert lib.zkelect_volunteer(a) == 0
    api.wait_event(a, {"ELECTED"}, 10)
    assert lib.zkelect_volunteer(b) == 0
    api.wait_event(b, {"FOLLOWING"}, 10)
    codes = {
        "NULL election": lib.zkelect_transfer(None, b"b", 1000),
        "NULL target": lib.zkelect_transfer(a, None, 1000),
        "empty id": lib.zkelect_transfer(a, b"", 1000),
        "own id": lib.zkelect_transfer(a, b"a", 1000),
        "timeout 0": lib.zkelect_transfer(a, b"b", 0),
        "unknown id": lib.zkelect_transfer(a, b"nobody", 1000),
        "follower": lib.zkelect_transfer(b, b"a", 1000),
        "idle": lib.zkelect_transfer(idle, b"a", 1000),
    }
    assert {k: _err(lib, v) for k, v in codes.items()} == {
        "NULL election": "ZKELECT_EINVAL", "NULL target": "ZKELECT_EINVAL",
        "empty id": "ZKELECT_EINVAL", "own id": "ZKELECT_EINVAL",
        "timeout 0": "ZKELECT_EINVAL", "unknown id": "ZKELECT_ENOCANDIDATE",
        "follower": "ZKELECT_ENOTLEADER", "idle": "ZKELECT_ENOTLEADER"}
    # Nothing changed: the leader leads, nobody stepped back, no marker.
    assert lib.zkelect_is_leader(a) == 1
    assert _line(kz, path) == ["a", "b"]
    for e in (a, b):
        assert all(d["type"] not in ("DEPOSED", "STEPPED_BACK") for d in _drain(api, e))
    assert kz.get(path)[0] in (None, b""), "a request was written"


def _token(lib, e):
    t = zkc.C.c_int64()
    assert lib.zkelect_fencing_token(e, zkc.C.byref(t)) == 0
    return t.value


def _ghost(kz, path, pid, version=8):
    """A candidate node whose owner never reads a transfer request. Version
    4 uuid: Curator's LeaderLatch (or libzkelect before 1.2), which a
    transfer knows never steps back. Version 8, libzkelect's own: a node
    that says it steps back, of a process that does not act (stalled)."""
    u = uuid.UUID(int=(uuid.uuid4().int & ~(0xF << 76)) | (version << 76))
    return kz.create(f"{path}/_c_{u}-latch-", pid.encode(), ephemeral=True, sequence=True)


def _leader_and_target(api, handles, zk):
    """A fresh path where "a" leads; "t" (not volunteered yet) on another
    session: (path, a, t)."""
    path = f"/t/transfer-{uuid.uuid4().hex[:8]}"
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    d = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    a = zkc.new_election(api, handles, c, path, "a")
    t = zkc.new_election(api, handles, d, path, "t")
    assert api.lib.zkelect_volunteer(a) == 0
    api.wait_event(a, {"ELECTED"}, 10)
    return path, a, t


def test_a_transfer_past_a_curator_candidate_is_refused_and_changes_nothing(
        api, handles, zk, kz):
    lib = api.lib
    path, a, t = _leader_and_target(api, handles, zk)
    token = _token(lib, a)
    ghost = _ghost(kz, path, "curator", version=4)
    assert lib.zkelect_volunteer(t) == 0
    api.wait_event(t, {"FOLLOWING"}, 10)
    began = time.monotonic()
    rc = lib.zkelect_transfer(a, b"t", 5000)
    took = time.monotonic() - began
    assert _err(lib, rc) == "ZKELECT_ENOTSUP"
    lib.zkelect_last_error.restype = zkc.C.c_char_p
    assert b"cannot step back" in lib.zkelect_last_error()
    # Refused up front (a few reads), not after waiting out the 5 s.
    assert took < 2.5, took
    assert lib.zkelect_is_leader(a) == 1 and _token(lib, a) == token
    assert _line(kz, path) == ["a", "curator", "t"]
    assert kz.get(path)[0] in (None, b""), "a request was written"
    for e in (a, t):
        assert all(ev["type"] not in ("DEPOSED", "STEPPED_BACK") for ev in _drain(api, e))
    # Past the Curator candidate, to a libzkelect one that steps back: fine
    # once nobody unable to step back is ahead of the target.
    kz.delete(ghost)
    assert _err(lib, lib.zkelect_transfer(a, b"t", 5000)) == "OK"
    api.wait_event(t, {"ELECTED"}, 10)


def test_a_candidate_that_does_not_step_back_times_out_and_someone_leads(api, handles, zk, kz):
    lib = api.lib
    path, a, t = _leader_and_target(api, handles, zk)
    ghost = _ghost(kz, path, "ghost")
    assert lib.zkelect_volunteer(t) == 0
    api.wait_event(t, {"FOLLOWING"}, 10)
    # A transfer that ended early leaves no timer behind to cut this one
    # short at its own deadline.
    assert _err(lib, lib.zkelect_transfer(a, b"nobody", 300)) == "ZKELECT_ENOCANDIDATE"
    began = time.monotonic()
    rc = lib.zkelect_transfer(a, b"t", 1500)
    took = time.monotonic() - began
    assert _err(lib, rc) == "ZKELECT_ETIMEDOUT"
    assert 1.4 < took < 1.5 + T / 1000, took
    ev, _ = api.wait_event(a, {"FOLLOWING"}, 10)
    assert lib.zkelect_is_leader(a) == 0
    zkc.until(lambda: _line(kz, path) == ["ghost", "t", "a"], "a at the back, ghost first")
    assert kz.get(path)[0] == b"", "the request was left behind"
    kz.delete(ghost)
    api.wait_event(t, {"ELECTED"}, 10)


def test_a_target_that_leaves_ends_the_transfer_with_the_next_in_line(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/transfer-{uuid.uuid4().hex[:8]}"
    clients = [zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
               for _ in range(3)]
    a = zkc.new_election(api, handles, clients[0], path, "a")
    assert lib.zkelect_volunteer(a) == 0
    api.wait_event(a, {"ELECTED"}, 10)
    ghost = _ghost(kz, path, "ghost")  # holds the transfer up until deleted
    b = zkc.new_election(api, handles, clients[1], path, "b")
    t = zkc.new_election(api, handles, clients[2], path, "t")
    for e in (b, t):
        assert lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"FOLLOWING"}, 10)
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("rc", lib.zkelect_transfer(a, b"t", 8000)))
    th.start()
    zkc.until(lambda: (kz.get(path)[0] or b"").startswith(b"zkelect-transfer"), "the request written")
    handles["e"].remove(t)
    assert lib.zkelect_election_destroy(t) == 0  # the target leaves
    kz.delete(ghost)  # b becomes next, finds the target gone, says so
    th.join(12)
    assert _err(lib, out["rc"]) == "ZKELECT_ETARGET_LOST"
    api.wait_event(b, {"ELECTED"}, 10)
    assert lib.zkelect_is_leader(a) == 0
    assert all(d["type"] != "STEPPED_BACK" for d in _drain(api, b))

"""Preferred leaders (issue 33): election.priority, carried in the node
name's uuid. A candidate whose priority is above the leader's, once it has
followed for election.priority.holddown.ms, asks the leader for a transfer
to itself (the request of a transfer asked from outside); equal or lower
priorities never move the leadership; a candidate that cannot step back
ahead of it is reported once, not asked again and again (docs/semantics.md,
"Preferred leaders")."""

import time
import uuid

from bed import zkc

from test_transfer import _drain, _ghost, _line, _token

T = 4000
HOLD = 500


def _join(api, handles, zk, path, pid, priority=0, first=("ELECTED", "FOLLOWING")):
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                             election_priority=priority,
                             election_priority_holddown_ms=HOLD)
    e = zkc.new_election(api, handles, c, path, pid)
    assert api.lib.zkelect_volunteer(e) == 0
    api.wait_event(e, set(first), 10)
    return e


def test_a_higher_priority_takes_the_lead_after_the_hold_down_and_not_before(
        api, handles, zk, kz):
    lib = api.lib
    path = f"/t/prio-{uuid.uuid4().hex[:8]}"
    a = _join(api, handles, zk, path, "a", first=("ELECTED",))
    b = _join(api, handles, zk, path, "b", first=("FOLLOWING",))
    token = _token(lib, a)
    with zkc.Sampler(lib, [[a, b]]) as ov:
        joined = time.monotonic()
        h = _join(api, handles, zk, path, "h", priority=5, first=("FOLLOWING",))
        ev, _ = api.wait_event(h, {"ELECTED"}, 10)
        took = time.monotonic() - joined
        print(f"\npriority 5 behind two of 0: ELECTED {took * 1000:.0f} ms after joining "
              f"(hold-down {HOLD} ms)")
        assert took >= HOLD / 1000, took
        assert ev["token"] > token
        assert lib.zkelect_is_leader(a) == 0
        _, seen = api.wait_event(a, {"FOLLOWING"}, 10)
        assert any(d["type"] == "DEPOSED" and d["reason"] == "transferred" for d in seen), seen
        back, _ = api.wait_event(b, {"STEPPED_BACK"}, 10)
        assert back["id"] == "h", back
        # It leads now: three hold-downs later nothing has moved again.
        time.sleep(3 * HOLD / 1000)
        assert lib.zkelect_is_leader(h) == 1
        assert _line(kz, path)[0] == "h"
    assert not ov.overlaps, ov.overlaps[:5]


def test_equal_and_lower_priorities_never_move_the_lead(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/prio-{uuid.uuid4().hex[:8]}"
    a = _join(api, handles, zk, path, "a", priority=3, first=("ELECTED",))
    _join(api, handles, zk, path, "same", priority=3, first=("FOLLOWING",))
    _join(api, handles, zk, path, "low", priority=1, first=("FOLLOWING",))
    token = _token(lib, a)
    time.sleep(4 * HOLD / 1000)
    assert lib.zkelect_is_leader(a) == 1 and _token(lib, a) == token
    assert _line(kz, path) == ["a", "same", "low"]
    assert kz.get(path)[0] in (None, b""), "a request was written"


def test_a_candidate_that_cannot_step_back_is_reported_once(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/prio-{uuid.uuid4().hex[:8]}"
    kz.ensure_path(path)
    ghost = _ghost(kz, path, "curator", version=4)
    h = _join(api, handles, zk, path, "h", priority=9, first=("FOLLOWING",))
    warn, _ = api.wait_event(h, {"WARNING"}, 10)
    assert "cannot step back" in warn["message"], warn
    time.sleep(3 * HOLD / 1000)
    later = _drain(api, h)
    assert all(d["type"] != "WARNING" for d in later), later
    assert lib.zkelect_is_leader(h) == 0
    assert kz.get(path)[0] in (None, b""), "a request was written"
    kz.delete(ghost)
    api.wait_event(h, {"ELECTED"}, 10)


def test_a_candidate_that_flaps_never_moves_the_lead(api, handles, zk, kz):
    """Each new node starts its hold-down again: a host that restarts more
    often than the hold-down never takes the lead."""
    lib = api.lib
    path = f"/t/prio-{uuid.uuid4().hex[:8]}"
    a = _join(api, handles, zk, path, "a", first=("ELECTED",))
    token = _token(lib, a)
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                             election_priority=5, election_priority_holddown_ms=HOLD)
    for _ in range(4):
        h = api.election(c, path, "h")
        assert lib.zkelect_volunteer(h) == 0
        api.wait_event(h, {"FOLLOWING"}, 10)
        time.sleep(0.6 * HOLD / 1000)
        assert lib.zkelect_election_destroy(h) == 0
    assert lib.zkelect_is_leader(a) == 1 and _token(lib, a) == token
    assert kz.get(path)[0] in (None, b""), "a request was written"

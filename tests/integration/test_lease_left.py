"""zkelect_lease_left_ms and zkelect_is_leader_for (issue 55, "Time left")
through the public C API (ctypes, tests/bed/zkc.py): a leader's time left
is within its lease (0 < left <= T/2 - margin), a follower's and a NULL's
0; and while the leader's renewals are held at a black hole, is_leader_for(D)
turns 0 at least D before is_leader() does: a 1 from it promises D ms more
of leading, which is what a program asks before starting work that must
finish inside the term."""

import time
import uuid

from bed import zkc

T = 3000


def test_a_leader_has_time_left_and_a_follower_none(api, handles, zk):
    lib = api.lib
    path = f"/t/left-{uuid.uuid4().hex[:8]}"
    ca = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    cb = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    a = zkc.new_election(api, handles, ca, path, "a")
    b = zkc.new_election(api, handles, cb, path, "b")
    assert lib.zkelect_lease_left_ms(a) == 0 and lib.zkelect_is_leader_for(a, 0) == 0
    assert lib.zkelect_volunteer(a) == 0
    assert lib.zkelect_await_leader(a, 15000) == 0
    assert lib.zkelect_volunteer(b) == 0
    api.wait_event(b, ("FOLLOWING",), 10)
    t = lib.zkelect_client_session_timeout_ms(ca)
    full = t // 2 - lib.zkelect_client_lease_margin_ms(ca)
    left = lib.zkelect_lease_left_ms(a)
    assert 0 < left <= full, (left, full)
    assert lib.zkelect_is_leader_for(a, 50) == 1
    assert lib.zkelect_is_leader_for(a, 0) == 1 and lib.zkelect_is_leader_for(a, -5) == 1
    assert lib.zkelect_is_leader_for(a, full + 1) == 0
    assert lib.zkelect_is_leader_for(a, 2 * t) == 0
    assert lib.zkelect_lease_left_ms(b) == 0
    assert lib.zkelect_is_leader_for(b, 0) == 0 and lib.zkelect_is_leader_for(b, -1) == 0
    assert lib.zkelect_lease_left_ms(None) == 0 and lib.zkelect_is_leader_for(None, 0) == 0
    assert lib.zkelect_resign(a) == 0
    assert lib.zkelect_lease_left_ms(a) == 0 and lib.zkelect_is_leader_for(a, 0) == 0


def test_is_leader_for_ends_d_before_the_lease(api, handles, zk, proxies):
    lib = api.lib
    D = 400
    path = f"/t/left-{uuid.uuid4().hex[:8]}"
    c = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T)
    e = zkc.new_election(api, handles, c, path, "held")
    assert lib.zkelect_volunteer(e) == 0
    assert lib.zkelect_await_leader(e, 15000) == 0
    proxies.blackhole()
    held_at = time.monotonic()
    try:
        last_for = None      # monotonic time before the last call that answered 1
        first_not_for = None  # ... after the first that answered 0
        prev_left, prev_at = None, None
        deadline = time.monotonic() + 3 * T / 1000
        while True:
            assert time.monotonic() < deadline, "still leading through a black hole"
            before = time.monotonic()
            one_for = lib.zkelect_is_leader_for(e, D)
            left = lib.zkelect_lease_left_ms(e)
            leads = lib.zkelect_is_leader(e)
            after = time.monotonic()
            if one_for:
                last_for = before
                # One reading answered both: leading at least D more.
                assert left >= D - (after - before) * 1000 - 1, (left, D)
            elif first_not_for is None:
                first_not_for = after
            if prev_left is not None and prev_left > 0 and left > 0 and prev_at - held_at > 0.3:
                # No renewal gets through (past one that was on its way
                # when the hole opened): the time left only runs down.
                assert left <= prev_left - (before - prev_at) * 1000 + 1, (prev_left, left)
            prev_left, prev_at = left, after
            if not leads:
                lost = after
                break
            time.sleep(0.005)
        assert lib.zkelect_lease_left_ms(e) == 0 and lib.zkelect_is_leader_for(e, 0) == 0
        assert last_for is not None and first_not_for is not None
        # The lease held D ms past the last 1 of is_leader_for(D) ...
        assert lost - last_for >= D / 1000, (lost - last_for)
        # ... and no time of its own was lost: is_leader_for(D) turned 0 about D before.
        assert lost - first_not_for <= D / 1000 + 0.5, (lost - first_not_for)
    finally:
        proxies.heal()

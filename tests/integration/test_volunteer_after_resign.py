"""Volunteering again right after a resign (issue 33): until 1.2 the
volunteer was refused with ESTATE until RESIGNED arrived (20 of 20 tries in
a port of Curator's LeaderLatch reset tests). Now it queues behind the
resign: the old node goes first, then the new one is made, and the events
come in that order. A leader that does so steps back to the end of the line:
the next candidate leads, never both at once."""

import uuid

from bed import zkc

T = 4000


def _types(seen):
    return [d["type"] for d in seen]


def test_a_volunteer_right_after_a_resign_queues_behind_it(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/requeue-{uuid.uuid4().hex[:8]}"
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    e = zkc.new_election(api, handles, c, path, "x")
    for _ in range(5):
        assert lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"ELECTED"}, 10)
        kz.sync(path)
        (old,) = kz.get_children(path)
        assert lib.zkelect_resign(e) == 0
        assert lib.zkelect_volunteer(e) == 0
        assert lib.zkelect_is_leader(e) == 0
        _, seen = api.wait_event(e, {"ELECTED"}, 10)
        assert _types(seen) == ["DEPOSED", "RESIGNED", "ELECTED"], seen
        kz.sync(path)
        (new,) = kz.get_children(path)
        assert new != old
        assert lib.zkelect_resign(e) == 0
        api.wait_event(e, {"RESIGNED"}, 10)


def test_a_leader_that_resigns_and_volunteers_hands_over_and_follows(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/requeue-{uuid.uuid4().hex[:8]}"
    x = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    y = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    xe = zkc.new_election(api, handles, x, path, "x")
    ye = zkc.new_election(api, handles, y, path, "y")
    assert lib.zkelect_volunteer(xe) == 0
    api.wait_event(xe, {"ELECTED"}, 10)
    assert lib.zkelect_volunteer(ye) == 0
    api.wait_event(ye, {"FOLLOWING"}, 10)
    with zkc.Overlaps(lib, xe, ye) as ov:
        assert lib.zkelect_resign(xe) == 0
        assert lib.zkelect_volunteer(xe) == 0
        api.wait_event(ye, {"ELECTED"}, 10)
        _, seen = api.wait_event(xe, {"FOLLOWING"}, 10)
    assert _types(seen) == ["DEPOSED", "RESIGNED", "FOLLOWING"], seen
    assert not ov.overlaps

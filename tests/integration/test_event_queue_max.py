"""events.queue.max: how many events each handle of a client keeps unread.

A program of many elections that only asks zkelect_is_leader() never reads
its events; each one it leaves costs some 200 bytes, and every reconnect
adds two to each election of the session (docs/limits.md, "Event queues are
bounded"). With the key at 0 the handles keep none; at 2 to 1024 a full
queue drops its oldest for one OVERFLOW marker, as at the default 1024."""

import ctypes as C
import select
import uuid

from bed import zkc

T = 4000


def _path():
    return f"/t/queue-max-{uuid.uuid4().hex[:8]}"


def _readable(fd):
    return bool(select.select([fd], [], [], 0)[0])


def _leads(lib, e, want):
    zkc.until(lambda: lib.zkelect_is_leader(e) == want, f"is_leader == {want}")


def test_zero_keeps_no_event_and_leadership_is_still_told(api, handles, zk):
    lib = api.lib
    lib.zkelect_event_fd.restype, lib.zkelect_event_fd.argtypes = C.c_int, [C.c_void_p]
    path = _path()
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T, events_queue_max=0)
    a = zkc.new_election(api, handles, c, path, "a")
    b = zkc.new_election(api, handles, c, path, "b")
    o = api.observer(c, path)
    handles["o"].append(o)
    fd = lib.zkelect_event_fd(a)
    assert fd >= 0
    assert lib.zkelect_volunteer(a) == 0
    _leads(lib, a, 1)
    assert lib.zkelect_volunteer(b) == 0
    assert lib.zkelect_resign(a) == 0  # b leads next: more events nobody keeps
    _leads(lib, b, 1)
    assert lib.zkelect_is_leader(a) == 0
    assert not _readable(fd), "the event fd of a queue that keeps nothing became readable"
    for e in (a, b):
        assert api.next_event(e, 200) is None
    assert api.observer_event(o, 200) is None


def test_a_small_queue_keeps_an_overflow_marker_and_the_newest(api, handles, zk):
    lib = api.lib
    path = _path()
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T, events_queue_max=2)
    e = zkc.new_election(api, handles, c, path, "a")
    rounds = 3
    for _ in range(rounds):
        assert lib.zkelect_volunteer(e) == 0
        _leads(lib, e, 1)
        assert lib.zkelect_resign(e) == 0
        _leads(lib, e, 0)
    assert lib.zkelect_volunteer(e) == 0
    _leads(lib, e, 1)
    # rounds + 1 ELECTED (and the RESIGNED between them) went into a queue
    # of two: the reader finds the marker, then the newest, up to ELECTED.
    last, seen = api.wait_event(e, {"ELECTED"}, 10)
    print(f"\nseen: {[(d['type'], d['token']) for d in seen]}")
    assert seen[0]["type"] == "OVERFLOW", seen
    assert len(seen) <= 3, seen  # the marker, one kept, and the ELECTED not yet pushed
    assert seen[0]["token"] + len(seen) - 1 >= rounds + 1, seen
    # The default client beside it keeps them all.
    c2 = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    e2 = zkc.new_election(api, handles, c2, _path(), "a")
    for _ in range(2):
        assert lib.zkelect_volunteer(e2) == 0
        _leads(lib, e2, 1)
        assert lib.zkelect_resign(e2) == 0
        _leads(lib, e2, 0)
    got = [api.wait_event(e2, {"ELECTED"}, 10)[1] for _ in range(2)]
    assert all(d["type"] != "OVERFLOW" for s in got for d in s), got

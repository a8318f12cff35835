"""transfer.drain.ms (issue 50, finding 0): a leader deposed by a transfer
keeps its node until zkelect_release() or the bound, so the target leads
only once the old leader's holder has stopped its work
(docs/semantics.md, "Draining before the hand-over")."""

import threading
import time
import uuid

from bed import zkc

T = 4000


def _err(lib, rc):
    return lib.zkelect_err_name(rc).decode() if rc else "OK"


def _pair(api, handles, zk, path, drain_ms):
    lib = api.lib
    ca = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T,
                              transfer_drain_ms=drain_ms)
    a = zkc.new_election(api, handles, ca, path, "a")
    assert lib.zkelect_volunteer(a) == 0
    api.wait_event(a, {"ELECTED"}, 10)
    cb = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    b = zkc.new_election(api, handles, cb, path, "b")
    assert lib.zkelect_volunteer(b) == 0
    api.wait_event(b, {"FOLLOWING"}, 10)
    return ca, a, b


class Transfer:
    """zkelect_transfer on a thread of its own: it blocks through the drain."""

    def __init__(self, lib, e, target, timeout_ms=10000):
        self.rc = None
        self.t = threading.Thread(
            target=lambda: setattr(self, "rc", lib.zkelect_transfer(e, target, timeout_ms)),
            daemon=True)
        self.t.start()

    def result(self, timeout_s=20):
        self.t.join(timeout_s)
        assert not self.t.is_alive(), "zkelect_transfer did not return"
        return self.rc


def test_the_target_leads_only_once_the_holder_releases(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/drain-{uuid.uuid4().hex[:8]}"
    _, a, b = _pair(api, handles, zk, path, 20000)
    assert lib.zkelect_release(a) == lib.zkelect_release(b) != 0  # nothing to release
    assert _err(lib, lib.zkelect_release(a)) == "ZKELECT_ESTATE"
    x = Transfer(lib, a, b"b")
    ev, _ = api.wait_event(a, {"DEPOSED"}, 10)
    assert ev["reason"] == "transferred", ev
    # The lease is gone; the node stands, surely (the drain's lease).
    assert lib.zkelect_is_leader(a) == 0
    assert lib.zkelect_is_draining(a) == 1
    assert lib.zkelect_is_draining(b) == 0
    assert api.stats(a)["engine_state"] == "draining"
    # Well past a transfer's round trips: the target waits for the node.
    held_until = time.monotonic() + 1.5
    while time.monotonic() < held_until:
        assert lib.zkelect_is_leader(b) == 0
        assert lib.zkelect_is_draining(a) == 1
        time.sleep(0.05)
    assert kz.get_children(path) and len(kz.get_children(path)) == 2
    t_release = time.monotonic()
    assert lib.zkelect_release(a) == 0
    assert lib.zkelect_is_draining(a) == 0
    assert _err(lib, lib.zkelect_release(a)) == "ZKELECT_ESTATE"
    api.wait_event(b, {"ELECTED"}, 10)
    elected_after = time.monotonic() - t_release
    assert x.result() == 0
    assert elected_after < 2, elected_after
    api.wait_event(a, {"FOLLOWING"}, 10)
    assert lib.zkelect_is_leader(a) == 0 and lib.zkelect_is_leader(b) == 1


def test_a_holder_that_never_releases_is_bounded(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/drain-{uuid.uuid4().hex[:8]}"
    ca, a, b = _pair(api, handles, zk, path, 1500)
    margin_ms = lib.zkelect_client_lease_margin_ms(ca)
    began = time.monotonic()
    x = Transfer(lib, a, b"b")
    api.wait_event(a, {"DEPOSED"}, 10)
    assert lib.zkelect_is_draining(a) == 1
    api.wait_event(b, {"ELECTED"}, 15)
    waited_ms = (time.monotonic() - began) * 1000
    assert lib.zkelect_is_draining(a) == 0
    assert 1500 + margin_ms <= waited_ms < 1500 + margin_ms + 2000, (waited_ms, margin_ms)
    assert x.result() == 0
    api.wait_event(a, {"FOLLOWING"}, 10)
    assert _err(lib, lib.zkelect_release(a)) == "ZKELECT_ESTATE"


def test_a_resign_while_draining_ends_the_drain(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/drain-{uuid.uuid4().hex[:8]}"
    _, a, b = _pair(api, handles, zk, path, 20000)
    x = Transfer(lib, a, b"b")
    api.wait_event(a, {"DEPOSED"}, 10)
    assert lib.zkelect_is_draining(a) == 1
    assert lib.zkelect_resign(a) == 0
    api.wait_event(a, {"RESIGNED"}, 10)
    assert lib.zkelect_is_draining(a) == 0
    api.wait_event(b, {"ELECTED"}, 10)
    assert x.result() == 0
    assert _err(lib, lib.zkelect_release(a)) == "ZKELECT_ESTATE"


def test_no_drain_by_default(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/drain-{uuid.uuid4().hex[:8]}"
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    a = zkc.new_election(api, handles, c, path, "a")
    assert lib.zkelect_volunteer(a) == 0
    api.wait_event(a, {"ELECTED"}, 10)
    b = zkc.new_election(api, handles, c, path, "b")
    assert lib.zkelect_volunteer(b) == 0
    api.wait_event(b, {"FOLLOWING"}, 10)
    assert lib.zkelect_transfer(a, b"b", 10000) == 0
    assert lib.zkelect_is_draining(a) == 0
    assert _err(lib, lib.zkelect_release(a)) == "ZKELECT_ESTATE"
    api.wait_event(b, {"ELECTED"}, 10)

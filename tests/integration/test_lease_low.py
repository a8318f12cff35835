"""LEASE_LOW (issue 55, "Warning before the lease runs out"): with
lease.warn.percent set, a leader whose keepalives are held at a fault proxy
(tests/bed/faultproxy.py) is told that its lease runs low before it is
DEPOSED at the deadline, once per term until a renewal clears it, and the
lease_low counter counts it; at rest and by default it is never said."""

import time
import uuid

import ctypes as C

from bed import zkc

T = 3000
PERCENT = 30  # of T/2 - margin = 1350 ms: the mark is 405 ms left


def _leader(api, handles, proxies, **conf):
    path = f"/t/low-{uuid.uuid4().hex[:8]}"
    c = zkc.connected_client(api, handles, proxies.connect_string, timeout_ms=T, **conf)
    e = zkc.new_election(api, handles, c, path, "low")
    assert api.lib.zkelect_volunteer(e) == 0
    assert api.lib.zkelect_await_leader(e, 15000) == 0
    api.wait_event(e, ("ELECTED",), 10)
    tok = C.c_int64()
    assert api.lib.zkelect_fencing_token(e, C.byref(tok)) == 0
    return c, e, tok.value


def _events_for(api, e, seconds):
    """Every event of `seconds`, each with the monotonic time it was read."""
    out = []
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        d = api.next_event(e, max(1, min(int(left * 1000), 100)))
        if d is not None:
            out.append((time.monotonic(), d))
    return out


def _until_deposed(api, e, limit_s):
    out = []
    end = time.monotonic() + limit_s
    while not any(d["type"] == "DEPOSED" for _, d in out):
        assert time.monotonic() < end, f"no DEPOSED within {limit_s} s: {out}"
        d = api.next_event(e, 100)
        if d is not None:
            out.append((time.monotonic(), d))
    return out


def test_lease_low_comes_before_deposed_when_renewals_are_held(api, handles, proxies):
    c, e, token = _leader(api, handles, proxies, lease_warn_percent=PERCENT)
    rest = _events_for(api, e, 1.5)  # three renewals at rest: nothing to say
    assert not [d for _, d in rest if d["type"] == "LEASE_LOW"], rest
    assert api.counter_named(c, "lease_low") == 0
    proxies.blackhole()
    try:
        seen = _until_deposed(api, e, 3 * T / 1000)
    finally:
        proxies.heal()
    kinds = [d["type"] for _, d in seen]
    assert "LEASE_LOW" in kinds, kinds
    assert kinds.count("LEASE_LOW") == 1, kinds
    low_at, low = next((t, d) for t, d in seen if d["type"] == "LEASE_LOW")
    dep_at, dep = next((t, d) for t, d in seen if d["type"] == "DEPOSED")
    assert kinds.index("LEASE_LOW") < kinds.index("DEPOSED"), kinds
    assert dep["reason"] == "lease_ended", dep
    assert low["token"] == token and low["id"] == "low", low
    assert "ms left" in low["message"], low
    # Said at the mark, not at the deadline: the time to stop on one's own.
    assert dep_at - low_at >= 0.2, (dep_at - low_at, kinds)
    assert api.counter_named(c, "lease_low") == 1


def test_a_renewal_clears_it_and_a_late_one_says_it_again(api, handles, proxies):
    """Replies 200 ms late (100 ms each way), at lease.warn.percent=50 (a
    mark of 675 ms): the next keepalive goes T/6 after a reply and its own
    reply comes 200 ms after that, so the lease falls to about 1350 - 500 -
    2 x 200 = 450 ms left, below the mark, and each reply brings it back
    to about 1150, above: LEASE_LOW again after each, never twice without
    a renewal between, and the leader keeps leading."""
    c, e, _ = _leader(api, handles, proxies, lease_warn_percent=50)
    _events_for(api, e, 0.5)
    ka0 = api.counter(c, zkc.COUNTER_KEEPALIVES)
    proxies.delay(100)
    try:
        seen = _events_for(api, e, 3.0)
        ka1 = api.counter(c, zkc.COUNTER_KEEPALIVES)
        assert api.lib.zkelect_is_leader(e) == 1
    finally:
        proxies.set_pass()
    kinds = [d["type"] for _, d in seen]
    assert "DEPOSED" not in kinds, kinds
    lows = kinds.count("LEASE_LOW")
    assert lows >= 2, kinds
    assert lows <= ka1 - ka0 + 1, (lows, ka1 - ka0)
    assert api.counter_named(c, "lease_low") == lows
    _events_for(api, e, 1.0)  # the delayed replies drain
    calm = _events_for(api, e, 1.5)
    assert not [d for _, d in calm if d["type"] == "LEASE_LOW"], calm


def test_never_said_by_default(api, handles, proxies):
    c, e, _ = _leader(api, handles, proxies)
    proxies.blackhole()
    try:
        seen = _until_deposed(api, e, 3 * T / 1000)
    finally:
        proxies.heal()
    assert "LEASE_LOW" not in [d["type"] for _, d in seen], seen
    assert api.counter_named(c, "lease_low") == 0

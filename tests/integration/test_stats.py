"""zkelect_election_stats / zkelect_client_stats (1.2): the JSON snapshot,
parsed by a real JSON parser, against a real ensemble. Each figure is
checked to move with the election: a term, a resign, a failover."""

import ctypes as C
import time
import uuid

import pytest

from bed import zkc

T = 4000


def _client(api, handles, hosts):
    return zkc.connected_client(api, handles, hosts, T)


_election = zkc.new_election
_until = zkc.until


def _hist_ok(h, bounds_sorted=True):
    les = [b["le_us"] for b in h["buckets"]]
    counts = [b["count"] for b in h["buckets"]]
    assert les == sorted(les) and len(set(les)) == len(les), h
    assert counts == sorted(counts), f"buckets are not cumulative: {h}"
    assert counts[-1] <= h["count"], h


@pytest.mark.zk_versions
def test_snapshot_follows_a_term_a_resign_and_a_failover(api, handles, zk):
    path = f"/t/stats-{uuid.uuid4().hex[:8]}"
    ca = _client(api, handles, zk.connect_string)
    cb = _client(api, handles, zk.connect_string)
    a = _election(api, handles, ca, path, "a")
    b = _election(api, handles, cb, path, "b")

    idle = api.stats(a)
    assert idle["version"] == 1
    assert (idle["path"], idle["id"]) == (path, "a")
    assert idle["state"] == "idle" and idle["is_leader"] is False
    assert idle["terms_won"] == 0 and idle["queue_position"] == -1
    assert idle["token"] == 0 and idle["lease_left_us"] == 0
    assert idle["failover"]["count"] == 0 and idle["failover"]["last_us"] == -1
    assert set(idle["losses"]) == {"resigned", "suspended", "lease_ended", "expired",
                                   "node_deleted", "closed", "transferred"}

    assert api.lib.zkelect_volunteer(a) == 0
    elected, _ = api.wait_event(a, ("ELECTED",), 15)
    assert api.lib.zkelect_volunteer(b) == 0
    api.wait_event(b, ("FOLLOWING",), 15)

    sa = api.stats(a)
    assert sa["state"] == "leader" and sa["is_leader"] is True, sa
    assert sa["token"] == elected["token"] == sa["term_token"] > 0
    assert sa["terms_won"] == 1
    assert sa["queue_position"] == 0
    assert 0 < sa["lease_left_us"] <= T * 1000 // 2, sa["lease_left_us"]
    assert sa["term_began_at_ms"] > 0 and sa["term_ended_at_ms"] == 0
    assert abs(sa["time_at_ms"] - time.time() * 1000) < 60000
    assert sa["term_began_at_ms"] <= sa["time_at_ms"]
    assert sa["requests"] > 0
    assert sa["failover"]["count"] == 0, "the first leader took over from nobody"

    sb = api.stats(b)
    assert sb["state"] == "follower" and sb["is_leader"] is False, sb
    assert (sb["queue_position"], sb["queue_length"]) == (1, 2)
    assert sb["token"] == 0 and sb["terms_won"] == 0

    # The leader's keepalives: a round trip measured and bucketed.
    ka = _until(lambda: (s := api.stats(a))["keepalive_rtt"]["count"] > 0 and s,
                "a keepalive round trip in the leader's stats")["keepalive_rtt"]
    assert 0 <= ka["min_us"] <= ka["last_us"] <= ka["max_us"] < T * 1000, ka
    _hist_ok(ka)

    before_b = api.stats(b)
    assert api.lib.zkelect_resign(a) == 0
    dep, _ = api.wait_event(a, ("DEPOSED",), 15)
    assert dep["reason"] == "resigned"
    api.wait_event(a, ("RESIGNED",), 15)
    api.wait_event(b, ("ELECTED",), 15)

    sa = api.stats(a)
    assert sa["state"] == "idle" and sa["is_leader"] is False, sa
    assert sa["losses"]["resigned"] == 1 and sum(sa["losses"].values()) == 1, sa["losses"]
    assert sa["term_ended_at_ms"] >= sa["term_began_at_ms"] > 0
    assert sa["token"] == 0 and sa["lease_left_us"] == 0
    assert sa["queue_position"] == -1

    sb = api.stats(b)
    assert sb["state"] == "leader" and sb["terms_won"] == 1, sb
    assert sb["queue_position"] == 0
    assert sb["notifications"] > before_b["notifications"], "the deletion was notified"
    # A heir holding a lease takes over without a request; it sent some to
    # enroll and keep that lease.
    assert sb["requests"] >= before_b["requests"] > 0
    fo = sb["failover"]
    assert fo["count"] == 1, fo
    assert 0 <= fo["last_us"] == fo["min_us"] == fo["max_us"] == fo["sum_us"] < T * 1000, fo
    _hist_ok(fo)
    assert fo["buckets"][-1]["count"] == 1 or fo["last_us"] > fo["buckets"][-1]["le_us"]

    # The client's snapshot: its counters, and its one election inside.
    cs = api.stats(cb, client=True)
    assert cs["version"] == 1 and cs["connected"] is True
    assert cs["session_id"] == api.lib.zkelect_client_session_id(cb) != 0
    assert 0 < cs["session_timeout_us"] <= T * 1000
    assert cs["counters"]["terms_won"] == 1
    assert {"expiries", "reconnects", "zk_requests", "keepalives"} <= set(cs["counters"])
    assert [(x["path"], x["id"], x["terms_won"]) for x in cs["elections"]] == [(path, "b", 1)]


def test_snapshot_escapes_ids_and_outlives_its_election(api, handles, zk):
    path = f"/t/stats-esc-{uuid.uuid4().hex[:8]}"
    c = _client(api, handles, zk.connect_string)
    weird = 'q"uo\\te \u00e9'
    e = api.election(c, path, weird)
    other = _election(api, handles, c, path + "-2", "plain")
    err = C.create_string_buffer(512)
    st = api.lib.zkelect_election_stats(e, err, 512)
    assert st
    assert api.lib.zkelect_election_destroy(e) == 0
    import json
    doc = json.loads(api.lib.zkelect_stats_json(st).decode())
    api.lib.zkelect_stats_destroy(st)
    assert doc["id"] == weird
    cs = api.stats(c, client=True)
    assert [x["id"] for x in cs["elections"]] == ["plain"], "a destroyed election is left out"
    assert other


def test_null_handles(api):
    err = C.create_string_buffer(256)
    assert not api.lib.zkelect_election_stats(None, err, 256)
    assert b"election is NULL" in err.value
    assert not api.lib.zkelect_client_stats(None, err, 256)
    assert b"client is NULL" in err.value
    assert api.lib.zkelect_stats_json(None) is None
    api.lib.zkelect_stats_destroy(None)

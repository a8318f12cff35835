"""Issue 3 fault scenarios: `zkelect candidate` processes behind fault proxies.

Every scenario samples `status <id>` (zkelect_is_leader, the lease check) of
every participant continuously and fails on a proven overlap, and also checks
the LEADER..LOST/RESIGNED/FOLLOWER intervals of the event lines. Observed
timings are printed (run with -s) and appended to $ZKELECT_FAULT_REPORT when
that is set.
"""

import time

import pytest

from bed.candidates import Sampler
from bed.faultutil import check_safety, ms, nodes_of, report, start_pair, wait_for

pytestmark = [pytest.mark.fault, pytest.mark.slow]


@pytest.mark.zk_versions
def test_leader_blackholed_past_session_timeout(zk, zk_path, proxies, spawn):
    """The cut-off leader gives up before anyone else leads, then rejoins."""
    T = 2000
    a, b = start_pair(spawn, proxies.connect_string, zk.connect_string, zk_path, T)
    sampler = Sampler([(a, "1"), (b, "2")]).start()
    try:
        sampler.wait_count("1", 1, 5, 5)
        t0 = time.time_ns()
        proxies.blackhole()
        lost_ns = a.wait_event("LOST", "1", T / 1000 + 3)
        elected_ns = b.wait_event("LEADER", "2", 3 * T / 1000 + 10)
        sampler.wait_count("2", 1, 3, 5)
        m = a.mark()
        t_heal = time.time_ns()
        proxies.heal()
        rejoin_ns = a.wait_event("FOLLOWER", "1", 15, since=m)
        sampler.wait_count("1", 0, 3, 5)
    finally:
        sampler.stop()
    lost_kv = a.events("LOST", "1")[-1][3]
    last1 = sampler.last("1", 1, before_ns=elected_ns)
    first0 = sampler.first("1", 0, after_ns=t0)
    first_b = sampler.first("2", 1)
    report("leader_blackholed_past_session_timeout",
           session_timeout_ms=T, lost_reason=lost_kv.get("reason"),
           blackhole_to_LOST_ms=ms(t0, lost_ns),
           blackhole_to_last_is_leader_1_ms=ms(t0, last1 and last1[1]),
           blackhole_to_first_is_leader_0_ms=ms(t0, first0 and first0[0]),
           blackhole_to_next_LEADER_ms=ms(t0, elected_ns),
           LOST_to_next_LEADER_ms=ms(lost_ns, elected_ns),
           heal_to_old_leader_FOLLOWER_ms=ms(t_heal, rejoin_ns),
           samples={k: len(v) for k, v in sampler.samples.items()})
    assert lost_ns < elected_ns, "old leader still claimed when the next was elected"
    assert first0 is not None and first0[0] < elected_ns
    assert first_b is not None and first_b[0] >= lost_ns   # 2 answers 1 only after 1 printed LOST
    check_safety(sampler, [a, b])
    assert a.quit() == 0 and b.quit() == 0


def test_follower_blackholed_briefly_keeps_its_place(zk, zk_path, proxies, spawn, kz):
    """A follower cut off for less than its session keeps its node and place."""
    T = 4000
    a, b = start_pair(spawn, zk.connect_string, proxies.connect_string, zk_path, T)
    before = nodes_of(kz, zk_path, "2")
    assert len(before) == 1
    sampler = Sampler([(a, "1"), (b, "2")]).start()
    try:
        sampler.wait_count("1", 1, 5, 5)
        m = b.mark()
        t0 = time.time_ns()
        proxies.blackhole()
        susp_ns, _ = b.wait_info("2", "SUSPENDED", T / 1000 + 2, since=m)
        t_heal = time.time_ns()
        proxies.heal()
        rec_ns, _ = b.wait_info("2", "RECONNECTED", 5, since=m)
        sampler.wait_count("2", 0, sampler.count("2", 0) + 3, 5)
    finally:
        sampler.stop()
    after = nodes_of(kz, zk_path, "2")
    report("follower_blackholed_briefly", session_timeout_ms=T,
           blackhole_to_SUSPENDED_ms=ms(t0, susp_ns),
           heal_to_RECONNECTED_ms=ms(t_heal, rec_ns))
    assert after == before, f"follower's node changed: {before} -> {after}"
    assert not b.events("LEADER") and not b.events("LOST")
    assert not a.events("LOST"), "the leader was deposed by a follower's trouble"
    assert sampler.count("1", 0) == 0 and sampler.count("2", 1) == 0
    check_safety(sampler, [a, b])
    assert a.quit() == 0 and b.quit() == 0


@pytest.mark.parametrize("then", ["reset", None])
@pytest.mark.zk_versions
def test_dropped_create_reply_leaves_one_node(zk, zk_path, proxies, spawn, kz, then):
    """The create of the candidate's node succeeds but its reply is lost."""
    T = 4000
    kz.ensure_path(zk_path)
    a = spawn(zk.connect_string, zk_path, 1, T)
    a.wait_event("CONNECTED", "1", 15)
    a.send("join")
    a.wait_event("LEADER", "1", 15)
    rule = proxies.drop_reply(["create", "create2"], then=then, match="-latch-")
    c = spawn(proxies.connect_string, zk_path, 3, T)
    c.wait_event("CONNECTED", "3", 15)
    sampler = Sampler([(a, "1"), (c, "3")]).start()
    try:
        t0 = time.time_ns()
        c.send("join")
        assert rule.done.wait(10), "the candidate's create never went through the proxy"
        t_drop = time.time_ns()
        # The create took effect: its node (the "ghost" the client never
        # heard of) is in ZooKeeper now.
        ghost = wait_for(lambda: nodes_of(kz, zk_path, "3") or None, 5,
                         "the node of the create whose reply was dropped")
        fol_ns = c.wait_event("FOLLOWER", "3", 3 * T / 1000 + 5)
        mine = nodes_of(kz, zk_path, "3")
        sessions = {s for s, _ in proxies.stats()["total"]["sessions"]}
        # docs/semantics.md: the candidacy adopts the node carrying its uuid
        # in place (it keeps its place in line), it does not create another
        assert mine == ghost, f"participant 3 did not adopt its node: {ghost} -> {mine}"
        assert mine[0][1] in sessions
        # and it is a working candidacy: it takes over when 1 resigns
        a.send("resign 1")
        lead_ns = c.wait_event("LEADER", "3", 10)
    finally:
        sampler.stop()
    st = proxies.stats()["total"]
    report("dropped_create_reply", then=then, session_timeout_ms=T,
           join_to_drop_ms=ms(t0, t_drop), drop_to_FOLLOWER_ms=ms(t_drop, fol_ns),
           resign_to_LEADER_ms=ms(fol_ns, lead_ns), replies_dropped=st["replies_dropped"],
           creates_seen=st["requests"].get("create", 0) + st["requests"].get("create2", 0),
           reconnects=st["reconnect_requests"])
    assert st["replies_dropped"] == 1
    check_safety(sampler, [a, c])
    assert a.quit() == 0 and c.quit() == 0


def test_leader_connection_reset_keeps_leadership(zk, zk_path, proxies, spawn):
    """A short disconnect (RST, reconnect at once) does not depose a leader
    whose lease still runs (docs/semantics.md, "Consequences": a short
    disconnect does not cause a failover)."""
    T = 4000
    a, b = start_pair(spawn, proxies.connect_string, zk.connect_string, zk_path, T)
    sampler = Sampler([(a, "1"), (b, "2")]).start()
    try:
        sampler.wait_count("1", 1, 5, 5)
        m = a.mark()
        t0 = time.time_ns()
        assert proxies.reset() >= 1
        susp_ns, _ = a.wait_info("1", "SUSPENDED", 5, since=m)
        rec_ns, _ = a.wait_info("1", "RECONNECTED", 5, since=m)
        sampler.wait_count("1", 1, sampler.count("1", 1) + 5, 5)
    finally:
        sampler.stop()
    report("leader_connection_reset", session_timeout_ms=T,
           reset_to_SUSPENDED_ms=ms(t0, susp_ns), reset_to_RECONNECTED_ms=ms(t0, rec_ns))
    assert not a.events("LOST"), a.tail()
    assert sampler.count("1", 0) == 0, "leader answered 0 during a short disconnect"
    assert not b.events("LEADER")
    assert proxies.stats()["total"]["reconnect_requests"] >= 1
    check_safety(sampler, [a, b])
    assert a.quit() == 0 and b.quit() == 0

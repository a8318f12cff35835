"""Issue 3: ZooKeeper servers die under the election.

- the server the leader is connected to is killed, then the one it moved to:
  the leader moves and, its lease running, keeps leading on its node;
- the ensemble's own leader is killed: the election survives;
- the quorum is lost and restored: nobody answers is_leader=1 beyond its
  lease without a quorum, and an election completes after the restore.
"""

import re
import time

import pytest

from bed.candidates import Sampler
from bed.faultutil import (check_safety, lease_ms, ms, nodes_of, report, start_pair,
                       wait_for)

pytestmark = [pytest.mark.fault, pytest.mark.slow]


def server_of(zk, sid, indexes):
    """Index of the server that holds session `sid` (its `cons` lists it)."""
    on = []
    for i in indexes:
        try:
            if re.search(rf"sid=0x{sid:x}\b", zk.four(i, "cons")):
                on.append(i)
        except OSError:          # down, or not serving
            continue
    return on[0] if len(on) == 1 else None


def one_leader(sampler, pids, n=3, after_ns=0):
    """The pid whose last n samples (taken after after_ns) are all 1 while
    every other pid's last n are all 0, else None."""
    lead = []
    for pid in pids:
        last = [x for x in sampler.samples[pid][-n:] if x[0] >= after_ns]
        if len(last) < n:
            return None
        vals = {v for _, _, v in last}
        if vals == {1}:
            lead.append(pid)
        elif vals != {0}:
            return None
    return lead[0] if len(lead) == 1 else None


def _leader_on_followers(zk, spawn, kz, path, T):
    quorum_leader = zk.leader_index()
    followers = [i for i in range(zk.n) if i != quorum_leader]
    # The candidate reaches only the followers: killing the server it is on
    # leaves the quorum (and its write path) intact, which is the case where
    # the lease promises no failover. Direct connections: a proxy whose
    # server is dead would still accept and then drop.
    hosts = ",".join(f"127.0.0.1:{zk.client_port(i)}" for i in followers)
    a, b = start_pair(spawn, hosts, zk.connect_string, path, T)
    node = nodes_of(kz, path, "1")
    return a, b, node, followers


def _move(zk, a, sampler, sid, followers, T, restart=True):
    """Kill the server `a` is on; it must move to the other follower and go
    on leading within its lease."""
    s1 = wait_for(lambda: server_of(zk, sid, followers), 10, "the leader's server")
    m = a.mark()
    t_kill = time.time_ns()
    zk.kill_server(s1)
    try:
        rec_ns, _ = a.wait_info("1", "RECONNECTED", lease_ms(T) / 1000, since=m)
        s2 = wait_for(lambda: server_of(zk, sid, [i for i in followers if i != s1]), 10,
                      "the leader's new server")
        # still leading on the new server: fresh 1-answers after the move
        sampler.wait_count("1", 1, sampler.count("1", 1) + 5, 5)
        t_ok = time.time_ns()
    finally:
        if restart:
            zk.start_server(s1)
    assert s2 != s1
    assert not a.events("LOST"), a.tail()
    assert sampler.count("1", 0) == 0, "leader answered 0 while its lease ran"
    assert not [v for s, r, v in sampler.samples["2"] if v == 1 and s <= t_ok]
    return {"killed": s1, "moved_to": s2, "kill_to_RECONNECTED_ms": ms(t_kill, rec_ns)}


@pytest.mark.zk_versions
def test_leaders_server_killed_then_ensemble_leader(zk, zk_path, spawn, kz):
    T = 4000
    a, b, node, followers = _leader_on_followers(zk, spawn, kz, zk_path, T)
    sid = node[0][1]
    token0 = a.events("LEADER", "1")[-1][3]["token"]
    sampler = Sampler([(a, "1"), (b, "2")]).start()
    try:
        sampler.wait_count("1", 1, 5, 5)
        move = _move(zk, a, sampler, sid, followers, T)
        assert a.events("LEADER", "1")[-1][3]["token"] == token0
        assert nodes_of(kz, zk_path, "1") == node

        # The ensemble's own leader dies: the followers drop their clients
        # while they elect a new one; the election must come out whole.
        ql = zk.leader_index()
        m = a.mark()
        t_kill = time.time_ns()
        zk.kill_server(ql)
        try:
            # the server the candidate is on drops it while the quorum re-forms
            susp_ns, _ = a.wait_info("1", "SUSPENDED", 10, since=m)
            zk.leader_index(timeout=20)
            t_quorum = time.time_ns()
            rec_ns, _ = a.wait_info("1", "RECONNECTED", 4 * T / 1000, since=m)
            leader = wait_for(lambda: one_leader(sampler, ["1", "2"], 5, rec_ns),
                              4 * T / 1000 + 10, "one leader after the ensemble's leader died")
            t_one = time.time_ns()
            # a resign still hands over
            cur, other = (a, b) if leader == "1" else (b, a)
            opid = "2" if leader == "1" else "1"
            m = other.mark()
            t_res = time.time_ns()
            cur.send(f"resign {leader}")
            handover_ns = other.wait_event("LEADER", opid, 10, since=m)
            sampler.wait_count(opid, 1, sampler.count(opid, 1) + 3, 5)
        finally:
            zk.start_server(ql)
    finally:
        sampler.stop()
    lost = a.events("LOST", "1")
    report("servers_killed_under_leader", session_timeout_ms=T, lease_ms=lease_ms(T),
           move=move, ensemble_leader_killed=ql,
           kill_to_SUSPENDED_ms=ms(t_kill, susp_ns), kill_to_new_quorum_ms=ms(t_kill, t_quorum),
           kill_to_RECONNECTED_ms=ms(t_kill, rec_ns),
           kill_to_one_leader_ms=ms(t_kill, t_one), leader_after=leader,
           lost_after_ensemble_leader_kill=[e[3].get("reason") for e in lost],
           resign_to_handover_ms=ms(t_res, handover_ns))
    check_safety(sampler, [a, b])
    assert a.quit() == 0 and b.quit() == 0


@pytest.mark.zk_versions
def test_leader_moves_again_after_its_second_server_dies(zk, zk_path, spawn, kz):
    """The server the leader moved to dies too (the first is back): the
    leader must move back, still within its lease. Its host list has two
    addresses, the case where libzookeeper-mt 3.8.0 alone retries the dead
    one until the session expires (see Client::nudge_while_disconnected)."""
    T = 4000
    a, b, node, followers = _leader_on_followers(zk, spawn, kz, zk_path, T)
    sid = node[0][1]
    sampler = Sampler([(a, "1"), (b, "2")]).start()
    moves = []
    try:
        sampler.wait_count("1", 1, 5, 5)
        moves.append(_move(zk, a, sampler, sid, followers, T))
        moves.append(_move(zk, a, sampler, sid, followers, T))
    finally:
        sampler.stop()
        report("leader_moves_again_after_second_server_dies", session_timeout_ms=T,
               lease_ms=lease_ms(T), moves=moves)
    check_safety(sampler, [a, b])
    assert a.quit() == 0 and b.quit() == 0


@pytest.mark.zk_versions
def test_quorum_lost_and_restored(fresh_ensemble, spawn, tmp_path):
    ens = fresh_ensemble(n=3, tick_ms=200)
    T = 2000
    path = "/t/quorum-lost"
    a, b = start_pair(spawn, ens.connect_string, ens.connect_string, path, T)
    sampler = Sampler([(a, "1"), (b, "2")]).start()
    try:
        sampler.wait_count("1", 1, 5, 5)
        victims = [0, 1]
        ens.kill_server(victims[0])
        m = a.mark()
        t_loss = time.time_ns()              # the quorum is gone with the next kill
        ens.kill_server(victims[1])
        lost_ns = a.wait_event("LOST", "1", T / 1000 + 5, since=m)
        first0 = wait_for(lambda: sampler.first("1", 0, after_ns=t_loss), 5,
                          "is_leader 0 after the quorum loss")
        # stay without a quorum for a while longer than the lease, sampling
        sampler.wait_count("1", 0, sampler.count("1", 0) + 20, 10)
        t_restore = time.time_ns()
        # with one of the two back the quorum is back (2 of 3)
        ens.start_server(victims[0])
        t_quorum = time.time_ns()
        leader = wait_for(lambda: one_leader(sampler, ["1", "2"], 5), 3 * T / 1000 + 10,
                          "one leader after the restore")
        t_one = time.time_ns()
        ev = [c.events("LEADER", pid) for c, pid in ((a, "1"), (b, "2"))]
        elected_after = [e[0] for es in ev for e in es if e[0] >= t_restore]
        ens.start_server(victims[1])
    finally:
        sampler.stop()
    lease = lease_ms(T)
    # no election can happen without a quorum: the first one after the
    # restore marks (no earlier than) the quorum's return
    t_back = min(elected_after) if elected_after else t_one
    # A sample is judged by when it was asked (s) and answered (r): the
    # process answered somewhere in between. Without a quorum, from the
    # lease's end after the loss until the restore began, nobody may answer
    # 1. (Judging by s against the re-election event flagged a sample asked
    # just before a legitimate re-election and answered just after it.)
    late = [(pid, s) for pid in ("1", "2") for s, r, v in sampler.samples[pid]
            if v == 1 and s > t_loss + (lease + 300) * 1e6 and r < t_restore]
    reasons = [e[3].get("reason") for e in a.events("LOST", "1")]
    report("quorum_lost_and_restored", session_timeout_ms=T, lease_ms=lease,
           quorum_loss_to_LOST_ms=ms(t_loss, lost_ns), lost_reason=reasons,
           quorum_loss_to_first_is_leader_0_ms=ms(t_loss, first0[0]),
           quorum_loss_to_restore_ms=ms(t_loss, t_restore),
           restore_call_ms=ms(t_restore, t_quorum),
           restore_to_LEADER_event_ms=ms(t_restore, t_back),
           restore_to_one_leader_ms=ms(t_restore, t_one),
           is_leader_1_without_quorum_beyond_lease=len(late),
           leader_after=leader)
    assert not late, f"is_leader=1 beyond the lease without a quorum: {late[:3]}"
    assert first0[0] <= t_loss + (lease + 300) * 1e6, ms(t_loss, first0[0])
    assert reasons and reasons[0] in ("lease_ended", "expired"), reasons
    # The follower cannot lead before the quorum is back.
    assert not [v for s, r, v in sampler.samples["2"] if v == 1 and r < t_restore]
    assert elected_after, "no ELECTED after the restore"
    check_safety(sampler, [a, b])
    assert a.quit() == 0 and b.quit() == 0

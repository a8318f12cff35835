"""The scenario the lease exists for (docs/semantics.md, "Leadership is a
lease"): the leader's ZooKeeper server is cut off from its peers but not from
its clients. It goes on answering the leader's reads and pings until it has
heard nothing from the quorum's leader for syncLimit x tickTime, while the
rest of the ensemble stops hearing of the leader's session, expires it after
the session timeout T, deletes its node and lets the next candidate lead.
A leader that trusted its reads would then be a second leader for several
seconds.

How the cut is made: the ensemble's server-to-server links (quorum and
election ports) run through fault proxies (zkbed's peer_links; each server's
config names its peers by the proxies' ports), and isolate() turns every link
of one server into a black hole: connections stay open, nothing crosses, no
FIN or RST reaches either end, as in a real partition. The clients reach
every server directly, so the cut server keeps serving its own. This was
chosen over network namespaces or netfilter because it needs nothing beyond
loopback and this repository (no nft/iptables on the machines, no privileges)
and because what ZooKeeper sees is the same: links that go silent. One
limit: ZooKeeper sometimes opens its election connection back to the address
a peer announced, which bypasses the proxy; that channel only matters once a
server is LOOKING, after the part of the scenario this test checks. The test
proves the quorum link was cut by the proxies' byte counters standing still.

Samples come from inside each candidate process (tests/fault/paused_leader.c
asks zkelect_is_leader() in a tight loop and reports every change with
CLOCK_MONOTONIC stamps around the calls), merged here on that one clock.
"""

import os
import time
import uuid

import pytest

from bed.faultutil import PausedLeader, first_one_ns, last_one_ns, report

pytestmark = [pytest.mark.fault, pytest.mark.slow]

T = 2000            # session timeout (ms)
TICK = 200
SYNC_LIMIT = 30     # the cut server notices after 6 s, long after T


def _env(build_dir):
    env = dict(os.environ)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = str(build_dir / "capi") + (os.pathsep + old if old else "")
    return env


@pytest.mark.zk_versions
def test_leader_on_isolated_server_stops_before_next_leader(fresh_ensemble, build_dir,
                                                             paused_leader_bin):
    """The leader's server is cut off from its peers; the other candidate,
    on the other servers, is elected once the quorum expires the leader's
    session, while the cut server still serves (it has not noticed). The
    old leader's last is_leader()=1 must come before the new leader's
    first 1."""
    assert T < SYNC_LIMIT * TICK
    ens = fresh_ensemble(n=3, tick_ms=TICK, sync_limit=SYNC_LIMIT, peer_links=True)
    zl = ens.leader_index()
    cut = next(i for i in range(ens.n) if i != zl)     # a follower
    rest = [i for i in range(ens.n) if i != cut]
    env = _env(build_dir)
    path = f"/t/partition-{uuid.uuid4().hex[:8]}"
    a = PausedLeader(paused_leader_bin, f"127.0.0.1:{ens.client_port(cut)}", path, "1", T, env)
    b = None
    try:
        a.wait(lambda w: w[0] == "READY", 15, "READY of the leader")
        a.wait_event("ELECTED", 15)
        a.wait(lambda w: w[:2] == ["FLIP", "1"], 5, "is_leader 1 in the leader")
        b = PausedLeader(paused_leader_bin,
                         ",".join(f"127.0.0.1:{ens.client_port(i)}" for i in rest),
                         path, "2", T, env)
        b.wait(lambda w: w[0] == "READY", 15, "READY of the follower")
        b.wait_event("FOLLOWING", 15)

        t_cut = time.monotonic_ns()
        ens.isolate(cut)
        # isolate() returns once every proxy discards: nothing may cross now.
        cut_bytes = ens.link_bytes(cut)
        b.wait_event("ELECTED", 3 * T / 1000 + 10)
        # The point of the scenario: the cut server had not yet noticed;
        # it was still a follower serving its clients when the next leader
        # was elected.
        mode_at_election = ens.mode(cut)
        t_elected = time.monotonic_ns()
        b.wait(lambda w: w[:2] == ["FLIP", "1"], 5, "is_leader 1 in the new leader")
        leaked = ens.link_bytes(cut) - cut_bytes
    finally:
        a.close()
        if b is not None:
            b.close()

    a_last = last_one_ns(a)
    b_first = first_one_ns(b, after_ns=t_cut)
    report("leader_on_isolated_server", session_timeout_ms=T, tick_ms=TICK,
           sync_limit=SYNC_LIMIT, cut_server_mode_at_next_election=mode_at_election,
           cut_to_old_last_1_ms=round((a_last - t_cut) / 1e6, 1),
           cut_to_new_first_1_ms=round((b_first - t_cut) / 1e6, 1) if b_first else None,
           cut_to_next_elected_ms=round((t_elected - t_cut) / 1e6, 1),
           bytes_over_cut_links=leaked)
    assert leaked == 0, f"{leaked} bytes crossed the cut links: the partition did not hold"
    assert mode_at_election == "follower", \
        f"the cut server was {mode_at_election!r} when the next leader was elected"
    assert first_one_ns(a) is not None and first_one_ns(a) < t_cut
    assert b_first is not None, "the new leader's sampler never saw is_leader 1"
    assert a_last < b_first, (
        f"two leaders: the old leader answered is_leader 1 until "
        f"{(a_last - t_cut) / 1e6:.1f} ms after the cut, the new one from "
        f"{(b_first - t_cut) / 1e6:.1f} ms")

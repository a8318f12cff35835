"""A session that reconnects to a server with a lower maxSessionTimeout gets a
shorter timeout T' (docs/semantics.md, "A shorter timeout after a
reconnect"). The quorum revalidates the session with T' at the handshake, so
it can expire it at handshake + T', before a lease earned under the old,
longer T would end. The leader must cap its lease at touch + T' - margin.

The servers really differ: server `long` allows 20 s, server `short` 2 s.
The leader connects through two fault proxies, first to `long` (T = 10 s
negotiated), then, when that connection is reset, to `short` (T' = 2 s),
whose proxy turns into a black hole the moment the handshake is seen. The
quorum expires the session about T' later and the other candidate, on the
third server, is elected. Samples come from inside both candidate processes
(tests/fault/paused_leader.c) on CLOCK_MONOTONIC: the old leader's last
is_leader() = 1 must come before the new leader's first.
"""

import os
import time
import uuid

import pytest

from bed.faultproxy import FaultProxy
from bed.faultutil import PausedLeader, first_one_ns, last_one_ns, report, wait_for

pytestmark = [pytest.mark.fault, pytest.mark.slow]

T = 10000           # requested, and granted by `long`
T_SHORT = 2000      # what `short` grants on the reconnect
TICK = 200
QUIET_S = 0.5       # the old connection's silence before it is reset


def _env(build_dir):
    env = dict(os.environ)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = str(build_dir / "capi") + (os.pathsep + old if old else "")
    return env


@pytest.mark.zk_versions
def test_lease_earned_under_a_longer_timeout_ends_before_the_shorter_one_expires_it(
        fresh_ensemble, build_dir, paused_leader_bin):
    LONG, OTHER, SHORT = 0, 1, 2
    ens = fresh_ensemble(n=3, tick_ms=TICK, server_cfg={
        LONG: {"maxSessionTimeout": 20000},
        OTHER: {"maxSessionTimeout": 20000},
        SHORT: {"maxSessionTimeout": T_SHORT},
    })
    to_long = FaultProxy(("127.0.0.1", ens.client_port(LONG)))
    to_short = FaultProxy(("127.0.0.1", ens.client_port(SHORT)))
    env = _env(build_dir)
    path = f"/t/renegotiated-{uuid.uuid4().hex[:8]}"
    a = b = None
    try:
        to_short.refuse()           # the first session goes to `long`
        a = PausedLeader(paused_leader_bin,
                         f"127.0.0.1:{to_long.port},127.0.0.1:{to_short.port}",
                         path, "1", T, env)
        a.wait(lambda w: w[0] == "READY", 15, "READY of the leader")
        a.wait_event("ELECTED", 15)
        a.wait(lambda w: w[:2] == ["FLIP", "1"], 5, "is_leader 1 in the leader")
        granted = [t for _sid, t in to_long.stats()["sessions"]]
        to_short.set_pass()
        b = PausedLeader(paused_leader_bin, f"127.0.0.1:{ens.client_port(OTHER)}", path, "2",
                         T, env)
        b.wait(lambda w: w[0] == "READY", 15, "READY of the follower")
        b.wait_event("FOLLOWING", 15)
        # Let a few keepalives earn the leader a lease under T.
        time.sleep(1.0)

        # Cut the old connection silently first, long enough for `long` to
        # have reported the session's last touch to the quorum's leader
        # (followers report touches every tick/2, with the session's old
        # T): a report arriving after the reconnect would extend the
        # session by the old T and hide what the new T' does.
        t_cut = time.monotonic_ns()
        to_long.blackhole()
        time.sleep(QUIET_S)
        to_long.reset(refuse=True)
        # The black hole falls right after the handshake with `short`: what
        # the quorum heard last of the session is that handshake, at T'.
        regranted = wait_for(lambda: [t for _sid, t in to_short.stats()["sessions"]] or None,
                             10, "the reconnect to the short-timeout server", period=0.001)
        to_short.blackhole()
        t_hole = time.monotonic_ns()
        b.wait_event("ELECTED", 3 * T / 1000 + 10)
        t_elected = time.monotonic_ns()
        b.wait(lambda w: w[:2] == ["FLIP", "1"], 5, "is_leader 1 in the new leader")
    finally:
        if a is not None:
            a.close()
        if b is not None:
            b.close()
        to_long.close()
        to_short.close()

    a_last = last_one_ns(a)
    b_first = first_one_ns(b, after_ns=t_cut)
    report("renegotiated_timeout", requested_ms=T, granted_first_ms=granted,
           granted_on_reconnect_ms=regranted,
           cut_to_hole_ms=round((t_hole - t_cut) / 1e6, 1),
           cut_to_old_last_1_ms=round((a_last - t_cut) / 1e6, 1),
           cut_to_new_first_1_ms=round((b_first - t_cut) / 1e6, 1) if b_first else None,
           cut_to_next_elected_ms=round((t_elected - t_cut) / 1e6, 1))
    assert granted == [T], f"the first server granted {granted}, not {T} ms"
    assert regranted == [T_SHORT], f"the reconnect was granted {regranted}, not {T_SHORT} ms"
    assert b_first is not None, "the new leader's sampler never saw is_leader 1"
    assert a_last < b_first, (
        f"two leaders: the old leader answered is_leader 1 until "
        f"{(a_last - t_cut) / 1e6:.1f} ms after the cut, the new one from "
        f"{(b_first - t_cut) / 1e6:.1f} ms: a lease earned under {T} ms outlived "
        f"the {T_SHORT} ms timeout granted on the reconnect")

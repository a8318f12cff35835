"""A rolling restart of the ensemble, as operators do every week (issue 32):
every server stopped and started again in turn, the followers first and the
quorum's leader last, each down DOWN_S, the next one only once the quorum
serves again.

Three candidates (tests/fault/paused_leader.c, one session each, spread
over the servers by the C client's random pick) sample is_leader in their
own loops on CLOCK_MONOTONIC. The lease (T/2 - margin from the last touch)
carries a leader across its server's restart when the client reconnects to
another server in time:

  T = 6 s   the leader never stops leading, nobody else ever leads, and no
            two candidates answer 1 at once;
  T = 2 s   (a lease of about 0.9 s, which can be shorter than the quorum's
            own re-election when its leader restarts) leadership may lapse
            while the quorum has no leader, but it never moves to another
            candidate and never overlaps.

A rolling upgrade is the same restart with each server started again as
the newest release (Debian's 3.8.0 to 3.9.5, the ensemble mixed on the
way): at T = 6 s it must keep the leader as the restart does.

In strict mode (leadership=strict) a leader stops leading as soon as its
connection breaks, so it lapses at least once (when its own server
restarts) and leads again on the same node once it reconnects: never
another candidate, never two at once.
"""

import os
import time
import uuid

import pytest

from bed import zkdist
from bed.faultutil import PausedLeader, report, wait_for
from inproc import one_runs, run_overlaps

pytestmark = [pytest.mark.fault, pytest.mark.slow]

DOWN_S = 1.0
TICK_MS = 200


def _env(build_dir):
    env = dict(os.environ)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = str(build_dir / "capi") + (os.pathsep + old if old else "")
    return env


def restart_in_turn(ens, version=None):
    """Followers first, the quorum's leader last, each started again as
    `version` if given (an upgrade); returns [(server, stop_ns,
    serving_again_ns)] on CLOCK_MONOTONIC."""
    leader = ens.leader_index()
    order = [i for i in range(ens.n) if i != leader] + [leader]
    out = []
    for i in order:
        t_stop = time.monotonic_ns()
        ens.stop_server(i)
        time.sleep(DOWN_S)
        ens.start_server(i, timeout=60, version=version)
        ens.wait_quorum(timeout=60)
        out.append((i, t_stop, time.monotonic_ns()))
    return out


@pytest.mark.parametrize("T,mode,upgrade", [(6000, "lease", False), (2000, "lease", False),
                                            (6000, "strict", False), (6000, "lease", True)],
                         ids=["6000-lease", "2000-lease", "6000-strict", "6000-lease-upgrade"])
def test_rolling_restart_keeps_the_leader(fresh_ensemble, build_dir, paused_leader_bin, T, mode,
                                          upgrade):
    to = zkdist.normalize(zkdist.NEWEST) if upgrade else None
    ens = fresh_ensemble(n=3, tick_ms=TICK_MS, **({"version": zkdist.DEBIAN} if upgrade else {}))
    env = _env(build_dir)
    path = f"/t/rolling-{uuid.uuid4().hex[:8]}"
    cands = {}
    try:
        for pid in ("a", "b", "c"):
            cands[pid] = PausedLeader(paused_leader_bin, ens.connect_string, path, pid, T, env,
                                      extra=[f"leadership={mode}"], max_s=180)
            cands[pid].wait(lambda w: w[0] == "READY", 20, f"READY of {pid}")
        wait_for(lambda: any(p.all("FLIP") for p in cands.values()), 20, "a first leader")
        time.sleep(0.5)
        first = [pid for pid, p in cands.items() if p.all("FLIP")]
        assert len(first) == 1, f"more than one candidate led before the restarts: {first}"
        leader = first[0]
        t0 = time.monotonic_ns()
        steps = restart_in_turn(ens, version=to)
        time.sleep(2.0)             # a lapse at the end has time to heal (> lease)
        t_end = time.monotonic_ns()
    finally:
        for p in cands.values():
            p.close()
    runs = {pid: one_runs(p.lines) for pid, p in cands.items()}
    overlaps = run_overlaps(runs)
    # Closing the candidates one by one hands leadership down the line:
    # only what happened before t_end counts.
    others = {pid: [r for r in rs if r[0] < t_end] for pid, rs in runs.items() if pid != leader}
    others = {pid: rs for pid, rs in others.items() if rs}
    # Lapses from the sampler's changes of value (a HOLE, a stretch the loop
    # was not scheduled, splits a run but is no change).
    lapses, down = [], None
    for w in cands[leader].all("FLIP"):
        v, first = int(w[1]), int(w[3])
        if v == 0 and t0 <= first < t_end:
            down = first
        elif v == 1 and down is not None:
            lapses.append((down, first))
            down = None
    if down is not None:
        lapses.append((down, t_end))
    if upgrade:
        # Each server really runs the new release (srvr's own answer).
        assert all(ens.server_version(i).startswith(to + "-") for i in range(ens.n)), \
            [ens.server_version(i) for i in range(ens.n)]
    report("rolling_restart", session_timeout_ms=T, leadership=mode, down_s=DOWN_S,
           upgraded_to=to,
           restarts=[(i, (s - t0) / 1e6, (b - t0) / 1e6) for i, s, b in steps],
           lapses_ms=[(a - t0) / 1e6 for a, b in lapses],
           lapse_lengths_ms=[(b - a) / 1e6 for a, b in lapses],
           others_led=sorted(others), overlaps=len(overlaps))
    assert not overlaps, f"two candidates answered 1 at once: {overlaps[:3]}"
    assert not others, f"leadership moved from {leader} to {sorted(others)}"
    assert down is None, f"{leader} did not lead at the end"
    # A lapse falls inside a restart (from the stop until the quorum served
    # again) and ends at most a moment (scheduling, one round trip) after it.
    for a, b in lapses:
        assert any(st <= a and b <= back + 500_000_000 for _i, st, back in steps), \
            f"a lapse of {(b - a) / 1e6:.0f} ms at {(a - t0) / 1e6:.0f} ms outside the " \
            f"restarts and their quorum's return: {steps}"
    if mode == "strict":
        assert lapses, "strict mode: no lapse, though the leader's server restarted"
    elif T >= 6000:
        assert not lapses, f"the leader stopped leading {len(lapses)} times: " \
            f"{[(b - a) / 1e6 for a, b in lapses]} ms"

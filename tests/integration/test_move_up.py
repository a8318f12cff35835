"""Moving up without a listing (docs/semantics.md, issue 35), in a real
build against the real ensemble: a follower whose last listing showed 256
candidates or more, when the nodes ahead of it are deleted, moves up in that
listing with reads instead of listing the path. It may become heir that way,
but it leads only once the leader's node is gone.

N candidates on one path over a few sessions. The 40 candidates right
behind the leader resign (the nearest to the mover first, alone, so that
the mover lists the whole queue), so the candidate behind them sees its
predecessor go, then every node it moves up to found gone, until its list
runs out. Then it must be heir and nobody but the leader may lead; once the
leader resigns it leads. A build that made a follower heir on any move up
(the mutation heir_from_any_gpred) lets it lead beside the old leader
(seen in the simulator within 5 runs). The check is of states, not time.
"""

import time
import uuid

from bed import zkc

N = 300  # at least the 256 from which a follower moves up
GONE = 40
SESSIONS = 4


def test_a_follower_that_moves_up_leads_only_after_the_leader(api, handles, zk):
    path = f"/t/moveup-{uuid.uuid4().hex[:8]}"
    cs = [zkc.connected_client(api, handles, zk.connect_string, 20000) for _ in range(SESSIONS)]
    es = [zkc.new_election(api, handles, cs[k % SESSIONS], path, str(k)) for k in range(N)]
    for e in es:
        assert api.lib.zkelect_volunteer(e) == 0
    for e in es:
        api.wait_event(e, ("ELECTED", "FOLLOWING"), 30)
    # Each one's place at its listing: joins only, so every place is exact.
    at = {}
    zkc.until(lambda: all(api.stats(e)["queue_position"] >= 0 for e in es), "every place known", 30)
    for e in es:
        at[api.stats(e)["queue_position"]] = e
    assert sorted(at) == list(range(N)), "places are not 0..N-1"
    leader, mover, behind = at[0], at[GONE + 1], at[GONE + 2]
    assert api.lib.zkelect_is_leader(leader) == 1

    # Its listing at the join was sent while the others were still joining
    # (shorter than 256): its predecessor goes first, and its next listing
    # shows the whole queue.
    assert api.lib.zkelect_resign(at[GONE]) == 0
    zkc.until(lambda: api.stats(at[GONE])["engine_state"] == "idle", "its node gone", 30)
    zkc.until(lambda: api.stats(mover)["queue_position"] == GONE, "the mover listed again", 30)
    assert api.stats(mover)["queue_length"] >= 256
    for p in range(GONE - 1, 0, -1):  # the nearest first
        assert api.lib.zkelect_resign(at[p]) == 0
    for p in range(1, GONE):
        zkc.until(lambda: api.stats(at[p])["engine_state"] == "idle", "their nodes gone", 30)
    # The mover settles: heir (or, wrongly, claiming or leading).
    zkc.until(lambda: api.stats(mover)["engine_state"] in ("heir", "claiming", "leading"),
              "the mover moved up to the front", 30)
    # Its notifications may still be on their way: watch for a while that
    # nobody but the leader leads (a window, not a bound on anything).
    end = time.monotonic() + 2
    while time.monotonic() < end:
        leading = [e for e in es if api.lib.zkelect_is_leader(e) == 1]
        state = api.stats(mover)["engine_state"]
        assert leading == [leader] and state == "heir", (
            f"{len(leading)} lead while the leader's node stands; the mover is {state}")
        time.sleep(0.02)
    zkc.until(lambda: api.stats(behind)["engine_state"] == "following", "the one behind follows", 30)

    assert api.lib.zkelect_resign(leader) == 0
    api.wait_event(mover, ("ELECTED",), 30)
    leading = [e for e in es if api.lib.zkelect_is_leader(e) == 1]
    assert leading == [mover], f"{len(leading)} lead after the leader resigned"
    zkc.until(lambda: api.stats(behind)["engine_state"] == "heir", "the one behind is heir", 30)

"""A leader elected on a session that sat quiet keeps its lease (issue 31).

The create of a candidate earns the session's lease on the latest touch of
the session known to have reached the quorum's leader: an answer to a
request of ours at least the report lag L (T/4) old. The client makes sure
one was sent at most T/3 before that (its probe, docs/semantics.md). A
client that connected and then waited, here 1.25 to 1.7 s at T = 2 s, before
its first volunteer had, before this was fixed, only its handshake or an
answer up to 2T/3 old: the create's lease ran out a few hundred
milliseconds after ELECTED, before the first keepalive that could count the
create itself (sent at least L after its acknowledgement), and the leader
said DEPOSED (lease_ended), then ELECTED again. The WAN bench saw it in
convergences (bench/results/ANALYSIS.md); 3 to 4 of 4 joins on 6009375.

Each case: a fresh client with one idle election, a wait, a volunteer on a
fresh path (it leads at once), then 1.5 s in which nothing may depose it.
"""

import time
import uuid

import pytest

from bed import zkc

T = 2000


@pytest.mark.parametrize("quiet_s", [1.25, 1.4, 1.55, 1.7])
def test_a_leader_elected_after_a_quiet_spell_keeps_its_lease(api, handles, zk, quiet_s):
    c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    assert api.lib.zkelect_client_session_timeout_ms(c) == T
    e = zkc.new_election(api, handles, c, f"/t/quiet-{uuid.uuid4().hex[:8]}", "x")
    time.sleep(quiet_s)  # the scenario: the session has nothing to do
    assert api.lib.zkelect_volunteer(e) == 0
    api.wait_event(e, {"ELECTED"}, 10)
    seen = []
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        d = api.next_event(e, 50)
        if d:
            seen.append((d["type"], d["reason"]))
    assert not [s for s in seen if s[0] == "DEPOSED"], (
        f"after {quiet_s} s quiet at T = {T} ms the new leader lost its lease: {seen}")
    assert api.lib.zkelect_is_leader(e) == 1

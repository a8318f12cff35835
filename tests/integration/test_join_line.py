"""A client joins at most 1,024 elections at once; the rest wait in line.

E elections volunteered at once on one client used to send every create,
listing and read of all E at once, and every reply of the burst was held
until the loop got to it: at 100,000 elections on one session the resident
set kept that peak, 4.8 KB an election, where the same elections joined
2,000 at a time kept 3.3 KB (issue 35, docs/limits.md). Now at most 1,024
candidacies of a client are between their create and their first place in
line; the others send nothing until a turn is free (engine state
`awaiting-session`, as before a session).

The server is stopped (SIGSTOP) while they volunteer, so that no reply
frees a turn: exactly 1,024 are creating. A candidacy still in line resigns
at once (nothing of it is on the server), and once the server runs again
every other one leads: nobody is left in line.
"""

import concurrent.futures
import time
import uuid

import pytest

from bed import zkc

T = 10000
WINDOW = 1024
N = 1500


def _engine_states(api, es):
    counts = {}
    for e in es:
        s = api.stats(e)["engine_state"]
        counts[s] = counts.get(s, 0) + 1
    return counts


@pytest.mark.slow
def test_at_most_1024_join_at_once_and_the_rest_wait_in_line(api, handles, fresh_ensemble):
    lib = api.lib
    ens = fresh_ensemble(n=1)
    c = zkc.connected_client(api, handles, f"127.0.0.1:{ens.client_port(0)}", timeout_ms=T)
    prefix = f"/t/line-{uuid.uuid4().hex[:8]}"
    es = [zkc.new_election(api, handles, c, f"{prefix}/s{i:04d}", "p") for i in range(N)]
    # The parent, made first, so that every election's path is one create.
    warm = zkc.new_election(api, handles, c, f"{prefix}/warm", "p")
    assert lib.zkelect_volunteer(warm) == 0
    zkc.until(lambda: lib.zkelect_is_leader(warm) == 1, "the first election leads")
    ens.pause_server(0)
    try:
        for e in es:
            assert lib.zkelect_volunteer(e) == 0
        def settled():
            s = _engine_states(api, es)
            waiting = s.get("creating", 0) + s.get("awaiting-session", 0)
            return s if waiting == N and s.get("creating", 0) >= WINDOW else None

        states = zkc.until(settled, "every candidacy creating or in line", 5)
        print(f"\nJOIN-LINE server stopped: {states}")
        assert states.get("creating") == WINDOW, states
        assert states.get("awaiting-session") == N - WINDOW, states
        # The last one is in line: its resign needs nothing from the server.
        last = es[-1]
        assert lib.zkelect_resign(last) == 0
        api.wait_event(last, {"RESIGNED"}, 2)
    finally:
        ens.resume_server(0)
    t0 = time.monotonic()
    zkc.until(lambda: all(lib.zkelect_is_leader(e) == 1 for e in es[:-1]),
              f"the other {N - 1} lead", 60)
    print(f"JOIN-LINE all lead {time.monotonic() - t0:.1f} s after the server resumed")
    assert lib.zkelect_is_leader(last) == 0
    assert _engine_states(api, [last]) == {"idle": 1}
    # Destroyed one after another (the handles fixture), each waiting for
    # its node's delete, the 1,500 took 30 s; side by side (destroy is for
    # any thread) the loop has many deletes in flight at once.
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        assert set(pool.map(lib.zkelect_election_destroy, es)) == {0}
    gone = set(map(id, es))
    handles["e"][:] = [e for e in handles["e"] if id(e) not in gone]

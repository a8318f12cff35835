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
    _destroy_side_by_side(lib, handles)


def _destroy_side_by_side(lib, handles):
    """Every election of the test, destroyed side by side (destroy is for any
    thread), so the loop has many deletes in flight at once: one after
    another (the handles fixture), each waiting for its node's delete, the
    1,500 of the test above took 30 s of teardown, 1,030 took 21 s."""
    es = [e for e in handles["e"] if e]
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        assert all(rc == 0 for rc in pool.map(lib.zkelect_election_destroy, es))
    handles["e"][:] = []


# --- the line's order (issue 50, finding 6) ----------------------------------
#
# First asked, first served: a candidacy's place is taken by its volunteer
# and kept while it waits, for a session too. Seen from outside in the order
# the servers created the nodes (czxid, one counter for every path).

PROBES = 5


def _creation_order(kz, paths):
    """The paths, in the order their (single) candidate node was created."""
    made = []
    for p in paths:
        kids = kz.get_children(p)
        assert len(kids) == 1, (p, kids)
        made.append((kz.get(f"{p}/{kids[0]}")[1].czxid, p))
    return [p for _, p in sorted(made)]


def _kazoo(ens):
    from kazoo.client import KazooClient
    kz = KazooClient(hosts=ens.connect_string, timeout=10)
    kz.start(timeout=10)
    return kz


def _stop_while_the_line_is_full(api, ens, fillers):
    """Server stopped, every filler volunteered: all 1,024 turns are held by
    creates the server will not answer until it runs again."""
    ens.pause_server(0)
    for e in fillers:
        assert api.lib.zkelect_volunteer(e) == 0
    zkc.until(lambda: _engine_states(api, fillers).get("creating") == WINDOW,
              "every turn held by a create", 10)


@pytest.mark.slow
def test_a_turn_freed_while_disconnected_keeps_the_line_in_order(api, handles, fresh_ensemble):
    # Before: the freed turn went from one member to the next while no one
    # could create (each gave it back at once), emptying the line; on the
    # reconnect they asked again in member-id order: p0 p1 p2 p3 p4.
    lib = api.lib
    T = 6000
    ens = fresh_ensemble(n=1)
    c = zkc.connected_client(api, handles, f"127.0.0.1:{ens.client_port(0)}", timeout_ms=T)
    prefix = f"/t/order-{uuid.uuid4().hex[:8]}"
    warm = zkc.new_election(api, handles, c, f"{prefix}/warm", "p")
    assert lib.zkelect_volunteer(warm) == 0
    api.wait_event(warm, {"ELECTED"}, 10)
    fillers = [zkc.new_election(api, handles, c, f"{prefix}/f{i:04d}", "p") for i in range(WINDOW)]
    paths = [f"{prefix}/p{i}" for i in range(PROBES)]
    probes = [zkc.new_election(api, handles, c, p, "p") for p in paths]
    try:
        _stop_while_the_line_is_full(api, ens, fillers)
        asked = list(reversed(range(PROBES)))  # against the member ids
        for i in asked:
            assert lib.zkelect_volunteer(probes[i]) == 0
        api.wait_event(fillers[0], {"SUSPENDED"}, T / 1000 + 2)
        # A turn freed while no one can create.
        assert lib.zkelect_resign(fillers[0]) == 0
        time.sleep(0.3)
    finally:
        ens.resume_server(0)
    zkc.until(lambda: all(lib.zkelect_is_leader(e) == 1 for e in probes), "every probe leads", 60)
    kz = _kazoo(ens)
    try:
        order = _creation_order(kz, paths)
    finally:
        kz.stop()
        kz.close()
    print(f"\nJOIN-LINE asked {[paths[i][-2:] for i in asked]}, created {[p[-2:] for p in order]}")
    assert order == [paths[i] for i in asked]
    _destroy_side_by_side(lib, handles)


@pytest.mark.slow
def test_a_volunteer_behind_its_resign_keeps_its_place(api, handles, fresh_ensemble):
    # a leads; while the line is full and the server stopped, a resigns and
    # volunteers again (the volunteer waits for the old node's delete), then
    # b0..b4 volunteer. a asked first, so its new node comes first. Before:
    # a asked for a turn only once its delete was answered, behind b0..b4.
    lib = api.lib
    T = 6000
    ens = fresh_ensemble(n=1)
    c = zkc.connected_client(api, handles, f"127.0.0.1:{ens.client_port(0)}", timeout_ms=T)
    prefix = f"/t/behind-{uuid.uuid4().hex[:8]}"
    # The lowest member id: after the reconnect its delete goes out first,
    # ahead of the fillers' recovery listings that free turns.
    a = zkc.new_election(api, handles, c, f"{prefix}/a", "p")
    assert lib.zkelect_volunteer(a) == 0
    api.wait_event(a, {"ELECTED"}, 10)
    fillers = [zkc.new_election(api, handles, c, f"{prefix}/f{i:04d}", "p") for i in range(WINDOW)]
    bpaths = [f"{prefix}/b{i}" for i in range(PROBES)]
    bs = [zkc.new_election(api, handles, c, p, "p") for p in bpaths]
    try:
        _stop_while_the_line_is_full(api, ens, fillers)
        assert lib.zkelect_resign(a) == 0
        assert lib.zkelect_volunteer(a) == 0
        for b in bs:
            assert lib.zkelect_volunteer(b) == 0
        api.wait_event(fillers[0], {"SUSPENDED"}, T / 1000 + 2)
    finally:
        ens.resume_server(0)
    zkc.until(lambda: all(lib.zkelect_is_leader(e) == 1 for e in [a] + bs), "a and every b lead", 60)
    kz = _kazoo(ens)
    try:
        order = _creation_order(kz, [f"{prefix}/a"] + bpaths)
    finally:
        kz.stop()
        kz.close()
    print(f"\nJOIN-LINE created {[p.rsplit('/', 1)[1] for p in order]}")
    assert order == [f"{prefix}/a"] + bpaths
    _destroy_side_by_side(lib, handles)


@pytest.mark.slow
def test_a_claim_that_cannot_be_made_holds_no_turn(api, handles):
    # A server whose tickTime leaves this session no lease (tests/integration/
    # test_ticktime.py): every candidacy first in line waits in `claiming`
    # for as long as the client stays on it. Before: each kept its turn, and
    # after 1,024 of them nobody else ever created a node (unless the
    # session expired, on a loaded machine with T = 1 s: the new nodes stood
    # behind the old ones, following, and gave their turns back; seen once).
    from bed.zkbed import Ensemble
    ens = Ensemble(n=1, tick_ms=2000, extra_cfg={"minSessionTimeout": 1000})
    ens.start()
    try:
        c = zkc.connected_client(api, handles, ens.connect_string, timeout_ms=1000)
        prefix = f"/t/stuck-{uuid.uuid4().hex[:8]}"
        es = [zkc.new_election(api, handles, c, f"{prefix}/s{i:04d}", "p")
              for i in range(WINDOW + PROBES)]
        for e in es:
            assert api.lib.zkelect_volunteer(e) == 0

        def all_claiming():
            s = _engine_states(api, es)
            return s if s.get("claiming") == len(es) else None

        try:
            zkc.until(all_claiming, "every candidacy first on its path, claiming", 30)
        except AssertionError:
            print(f"\nJOIN-LINE stuck: {_engine_states(api, es)}")
            raise
        _destroy_side_by_side(api.lib, handles)  # while the server still answers
    finally:
        ens.stop()

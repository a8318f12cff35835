"""Issue 27, finding 6: a server that answers a reconnect of our live
session with that session's id and a timeout of 0.

The client refuses such a handshake and, after a pause, opens a new
session. Before the fix the candidacies kept the old session's node, place
and lease: the new session's keepalives checked the old session's node (a
check does not look at the owner), so the candidacy led on a node nobody
kept alive, beside the candidate elected when the old session expired. Now
the refusal ends the old session for its candidacies as an expiry does
(DEPOSED, EXPIRED) and they join again on the new session.

X reaches a real server through a fault proxy, and a hostile server
(evilzk's zerotimeout) that echoes the session X asks for with timeout 0.
is_leader of X and Z (direct) is sampled in this process on one thread.
"""

import time
from pathlib import Path

import pytest

from bed import zkc
from bed.faultproxy import FaultProxy
from evilzk import EvilZk

HERE = Path(__file__).resolve().parent

T = 4000


def test_refused_reconnect_ends_the_old_sessions_candidacies(zk, zk_path):
    api = zkc.Api(zkc.build_dir())
    lib = api.lib
    gen = zkc.handles_fixture(api)
    handles = next(gen)
    evil = EvilZk("zerotimeout", max_seconds=120)
    evil.start()
    proxy = FaultProxy(("127.0.0.1", zk.client_port(0)))
    try:
        hosts = f"{proxy.address},{evil.hosts}"
        # libzookeeper picks a host at random: X must first get its session
        # from the real server (a refused first handshake is retried after 1 s).
        x = zkc.connected_client(api, handles, hosts, timeout_ms=T)
        zkc.until(lambda: proxy.connections(), "X's session on the real server", 20)
        z = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        xe = zkc.new_election(api, handles, x, zk_path, "x")
        ze = zkc.new_election(api, handles, z, zk_path, "z")
        assert lib.zkelect_volunteer(xe) == 0
        assert lib.zkelect_await_leader(xe, 15000) == 0
        assert lib.zkelect_volunteer(ze) == 0
        api.wait_event(ze, {"FOLLOWING"}, 10)
        with zkc.Overlaps(lib, xe, ze) as ov:
            before = evil.connections
            proxy.reset(refuse=True)  # X reconnects to the hostile server
            zkc.until(lambda: evil.connections > before, "X's reconnect to the hostile server", 10)
            time.sleep(0.3)
            proxy.set_pass()          # X's next session may reach the real server
            # Z leads once the old session expires (about T); watch 2 T more.
            assert lib.zkelect_await_leader(ze, 3 * T) == 0, "Z never led"
            time.sleep(2 * T / 1000)
        assert ov.samples > 100
        assert not ov.overlaps, f"X and Z both answered 1 in {len(ov.overlaps)} samples"
        evs = []
        for _ in range(100):
            d = api.next_event(xe, 0)
            if d is None:
                break
            evs.append(d)
        kinds = [e["type"] for e in evs]
        assert "EXPIRED" in kinds, kinds
    finally:
        proxy.close()
        evil.stop()
        for _ in gen:
            pass

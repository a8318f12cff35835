"""What holding leadership costs ZooKeeper when nothing happens (issue 17,
docs/semantics.md "One lease per session"): one keepalive write per session
every T/6, however many elections the session leads or waits in as heir.

Measured as a server measures it: the growth of the ensemble's last zxid
(every write, keepalives included, takes one) over a window at rest, on a
one-server ensemble of its own so no other test's traffic counts.
"""

import re
import time
import uuid

import pytest

from bed import zkc
from bed.zkbed import four_letter

T = 3000          # keepalives every T/6 = 500 ms: 2 writes a second per session
WINDOW_S = 3.0    # the rate is a measurement over a window, not a wait for state


def _zxid(ens):
    m = re.search(r"Zxid: 0x([0-9a-f]+)", four_letter(ens.client_port(0), "srvr"))
    assert m, "srvr gave no zxid"
    return int(m.group(1), 16) & 0xFFFFFFFF   # the counter, without the epoch


def _writes_per_second(ens):
    z0 = _zxid(ens)
    t0 = time.monotonic()
    time.sleep(WINDOW_S)
    z1 = _zxid(ens)
    return (z1 - z0) / (time.monotonic() - t0)


def _hold(api, made, hosts, n, pid):
    """One client; n elections on distinct paths, all volunteered."""
    c = api.client(zk_hosts=hosts, zk_session_timeout_ms=T, zk_log_level="none")
    made.append(("c", c))
    assert api.lib.zkelect_client_await_connected(c, 15000) == 0
    es = []
    for i in range(n):
        e = api.election(c, f"/idle/{pid}-{i}", pid)
        made.append(("e", e))
        assert api.lib.zkelect_volunteer(e) == 0
        es.append(e)
    return es


@pytest.mark.slow
def test_keepalive_writes_at_rest_do_not_grow_with_the_number_of_elections(build_dir,
                                                                           fresh_ensemble):
    ens = fresh_ensemble(n=1)
    hosts = f"127.0.0.1:{ens.client_port(0)}"
    api = zkc.Api(build_dir)
    made = []
    rates = {}
    try:
        for n in (1, 40):
            tag = uuid.uuid4().hex[:6]
            # One session leads n elections; a second waits as heir in each.
            leads = _hold(api, made, hosts, n, f"lead{tag}")
            for e in leads:
                assert api.lib.zkelect_await_leader(e, 10000) == 0
            _hold(api, made, hosts, n, f"heir{tag}")
            time.sleep(T / 6 / 1000 * 2)      # the heirs' first keepalives are past
            rates[n] = _writes_per_second(ens)
            # The leaders still lead (the writes counted are theirs).
            assert all(api.lib.zkelect_is_leader(e) == 1 for e in leads)
            for kind, h in reversed(made):
                (api.lib.zkelect_election_destroy if kind == "e"
                 else api.lib.zkelect_client_destroy)(h)
            made.clear()
    finally:
        for kind, h in reversed(made):
            (api.lib.zkelect_election_destroy if kind == "e" else api.lib.zkelect_client_destroy)(h)
    print(f"\nIDLE-COST writes/s at rest, T={T} ms, 2 sessions: "
          + ", ".join(f"E={n}: {r:.2f}" for n, r in rates.items()))
    # Two sessions, each one keepalive per T/6: 4 writes a second, plus one
    # for a keepalive sent early or late in the window. One stream per
    # candidacy would be 2 x 40 x 2 = 160 a second at E = 40.
    per_second = 2 * 6000 / T
    assert rates[1] <= per_second + 1, rates
    assert rates[40] <= per_second + 1, (
        f"{rates[40]:.1f} writes a second at rest with 40 elections led and 40 heirs on two "
        f"sessions, against {rates[1]:.1f} with one each: the cost grows with the elections")

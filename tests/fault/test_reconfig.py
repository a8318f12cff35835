"""An ensemble replaced one server at a time with ZooKeeper's dynamic
reconfiguration (issue 32): servers 4 and 5 added, then 1-3 removed and
stopped, until nothing of the connect string the clients were given is left.
The client follows /zookeeper/config (zk.hosts.follow, on by default), so
every candidacy keeps its session and the leader keeps leading; with the key
off the client keeps the servers it was given (shown by hand when this was
written: the test then fails waiting for the client to follow)."""

import time
import uuid

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss

from bed import zkc

pytestmark = [pytest.mark.fault]

T = 6000


def test_an_ensemble_replaced_by_reconfig_keeps_every_session_and_the_leader(
        api, handles, fresh_ensemble):
    ens = fresh_ensemble(n=5, members=3, reconfig=True)
    first = ",".join(f"127.0.0.1:{ens.client_port(i)}" for i in range(3))
    path = f"/t/reconfig-{uuid.uuid4().hex[:8]}"
    x = zkc.connected_client(api, handles, first, timeout_ms=T)
    y = zkc.connected_client(api, handles, first, timeout_ms=T)
    xe = zkc.new_election(api, handles, x, path, "x")
    ye = zkc.new_election(api, handles, y, path, "y")
    assert api.lib.zkelect_volunteer(xe) == 0
    api.wait_event(xe, {"ELECTED"}, 15)
    assert api.lib.zkelect_volunteer(ye) == 0
    api.wait_event(ye, {"FOLLOWING"}, 15)
    sessions = (api.lib.zkelect_client_session_id(x), api.lib.zkelect_client_session_id(y))
    # Nothing changed yet: the config names the servers zk.hosts does.
    assert api.stats(x, client=True)["hosts"] == first

    ens.start_server(3)
    ens.start_server(4)
    kz = KazooClient(hosts=f"127.0.0.1:{ens.client_port(3)},127.0.0.1:{ens.client_port(4)}",
                     timeout=10.0)
    kz.start(timeout=15)
    try:
        kz.reconfig(joining=",".join(ens.server_spec(i) for i in (3, 4)), leaving=None,
                    new_members=None)
        try:
            kz.reconfig(joining=None, leaving="1,2,3", new_members=None)
        except ConnectionLoss:
            pass  # the quorum's leader left with 1-3: the change may be in
        zkc.until(lambda: b"server.1=" not in kz.retry(kz.get, "/zookeeper/config")[0],
                  "servers 1-3 out of the configuration", 15)
    finally:
        kz.stop()
        kz.close()
    last = sorted(f"127.0.0.1:{ens.client_port(i)}" for i in (3, 4))
    for c in (x, y):
        zkc.until(lambda c=c: sorted(api.stats(c, client=True)["hosts"].split(",")) == last,
                  "the client following the new membership", 10)
    for i in range(3):
        ens.stop_server(i)
    # The clients' servers are gone: each carries on through 4 or 5.
    for c in (x, y):
        zkc.until(lambda c=c: api.stats(c, client=True)["connected"], "a connection to 4 or 5", 15)
    assert (api.lib.zkelect_client_session_id(x), api.lib.zkelect_client_session_id(y)) == sessions
    # The leader keeps leading: no other is elected, and should its lease
    # lapse while the quorum's leader moves (the leaving servers held it),
    # it leads again on its own node. Seen in 1 run of 5 on a loaded
    # machine: ZooKeeper's hand-over took longer than the lease (T/2).
    zkc.until(lambda: api.lib.zkelect_is_leader(xe) == 1, "x leading", 10)
    for e in (xe, ye):
        while (d := api.next_event(e, 0)) is not None:
            assert d["type"] not in ("EXPIRED", "ERROR"), d
            assert (e, d["type"]) != (ye, "ELECTED"), "leadership moved"
            if d["type"] == "DEPOSED":
                assert d["reason"] == "lease_ended", d
    # And the election still works on the new ensemble.
    assert api.lib.zkelect_resign(xe) == 0
    api.wait_event(ye, {"ELECTED"}, 15)

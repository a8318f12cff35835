"""A transfer whose marker's write took effect but whose answer was lost.

The leader starts a hand-over by writing its marker in the election path's
data ("zkelect-transfer 1 <leader> <target> asked ..."); the candidates
ahead of the target read it and step back. When the connection goes down
with that write's answer, the write may have taken effect or not. Before,
the leader took the lost answer for "nothing written": the call answered
ZKELECT_ECONNLOSS and the transfer ended, but the marker stood in the
path's data naming the live leader's node. The candidates ahead of the
target stepped back for a transfer nobody ran, and every transfer asked
from outside (zkelect_client_transfer, `zkelect transfer`) saw a transfer
under way and waited it out to its timeout, for as long as that leader
led (the explorer's seed 11: transfer-estate).

Now the read of the path's data on the next connection tells which it was:
our marker stands, and the transfer goes on; it does not (the write was
lost before the server, the fault proxy's drop_request), and the call
answers ZKELECT_ECONNLOSS with nothing changed.
"""

import contextlib
import time
import uuid

import pytest

from bed import zkc
from bed.faultproxy import ProxiedEnsemble

pytestmark = [pytest.mark.fault]

T = 6000


def _err(lib, rc):
    return lib.zkelect_err_name(rc).decode() if rc else "OK"


@contextlib.contextmanager
def _a_b_t(api, handles, zk):
    """a leads through the fault proxy; b and t follow on a direct session:
    (proxies, path, a, b, t)."""
    path = f"/t/xfer-marker-{uuid.uuid4().hex[:8]}"
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        x = zkc.connected_client(api, handles, pe.connect_string, timeout_ms=T,
                                 zk_hosts_follow="false")
        a = zkc.volunteered(api, handles, x, path, "a", {"ELECTED"}, 15)
        d = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        b = zkc.volunteered(api, handles, d, path, "b", {"FOLLOWING"})
        t = zkc.volunteered(api, handles, d, path, "t", {"FOLLOWING"})
        yield pe, path, a, b, t


def test_a_marker_written_with_its_answer_lost_is_carried_through(api, handles, zk, kz):
    lib = api.lib
    with _a_b_t(api, handles, zk) as (pe, path, a, _b, t):

        # The marker's write reaches the server; its answer is dropped and
        # the connection reset: the leader hears connection loss for it.
        rule = pe.drop_reply("setData", then="reset", match="zkelect-transfer 1 ")
        began = time.monotonic()
        rc = lib.zkelect_transfer(a, b"t", 5000)
        took = time.monotonic() - began
        assert rule.dropped == 1, "the marker's answer was not dropped"
        data = kz.get(path)[0] or b""
        # Whatever the call says, no marker may be left naming a node that
        # runs no transfer.
        assert not (data.startswith(b"zkelect-transfer 1 ") and lib.zkelect_is_leader(a) == 1), (
            f"{_err(lib, rc)} after {took:.2f} s, a still leads and the path's data still "
            f"names its transfer: {data!r}")
        # The write took effect: the hand-over runs to its end.
        assert _err(lib, rc) == "OK", f"{_err(lib, rc)} after {took:.2f} s; path data {data!r}"
        api.wait_event(t, {"ELECTED"}, 10)
        assert lib.zkelect_is_leader(a) == 0


def test_a_marker_lost_before_the_server_changes_nothing(api, handles, zk, kz):
    """The other side of the same answer: the connection goes down before
    the marker's write reaches the server. The read on the next connection
    finds no marker of ours: ZKELECT_ECONNLOSS, nothing changed (nobody
    stepped back, the leader leads on), and the next transfer runs."""
    lib = api.lib
    with _a_b_t(api, handles, zk) as (pe, path, a, b, t):

        rule = pe.drop_request("setData", match="zkelect-transfer 1 ")
        began = time.monotonic()
        rc = lib.zkelect_transfer(a, b"t", 5000)
        took = time.monotonic() - began
        assert rule.dropped == 1, "the marker's write was not dropped"
        data = kz.get(path)[0] or b""
        assert _err(lib, rc) == "ZKELECT_ECONNLOSS", \
            f"{_err(lib, rc)} after {took:.2f} s; path data {data!r}"
        assert not data.startswith(b"zkelect-transfer"), data
        assert lib.zkelect_is_leader(t) == 0
        zkc.until(lambda: lib.zkelect_is_leader(a) == 1, "a leads on")
        seen = [ev["type"] for ev in api.drain(b)]
        assert "STEPPED_BACK" not in seen, seen

        # Nothing is left that holds the next one up.
        assert _err(lib, lib.zkelect_transfer(a, b"t", 5000)) == "OK"
        api.wait_event(t, {"ELECTED"}, 10)
        assert lib.zkelect_is_leader(a) == 0

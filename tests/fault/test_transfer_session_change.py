"""A transfer cut by a session change still ends (issue 50, finding 3).

The hand-over's last step lists the path to tell whether the target is
first. A new session drops every listing of the old one unanswered: that
listing never came back, the transfer never ended, the call waited out its
bound, and every later transfer of the handle answered ZKELECT_ESTATE
("another transfer runs"). Here the leader's connection is reset and its
reconnect held while the transfer's deadline hands over; its session is
closed from outside; the held reconnect then hears EXPIRED.
"""

import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient

from bed import zkc
from bed.faultproxy import ProxiedEnsemble

pytestmark = [pytest.mark.fault]

T = 12000
XFER_MS = 2500


def _err(lib, rc):
    return lib.zkelect_err_name(rc).decode() if rc else "OK"


def _ghost(kz, path, pid):
    """A version-8 node (libzkelect's shape: it says it steps back) whose
    owner never reads a request: the transfer waits out its deadline."""
    u = uuid.UUID(int=(uuid.uuid4().int & ~(0xF << 76)) | (8 << 76))
    return kz.create(f"{path}/_c_{u}-latch-", pid.encode(), ephemeral=True, sequence=True)


def test_a_transfer_cut_by_a_new_session_ends_and_the_next_one_runs(api, handles, zk, kz):
    lib = api.lib
    path = f"/t/xfer-expiry-{uuid.uuid4().hex[:8]}"
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        x = zkc.connected_client(api, handles, pe.connect_string, timeout_ms=T,
                                 zk_hosts_follow="false")
        a = zkc.volunteered(api, handles, x, path, "a", {"ELECTED"}, 15)
        ghost = _ghost(kz, path, "ghost")
        d = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
        t = zkc.volunteered(api, handles, d, path, "t", {"FOLLOWING"})

        out = {}
        began = time.monotonic()
        th = threading.Thread(target=lambda: out.update(rc=lib.zkelect_transfer(a, b"t", XFER_MS)),
                              daemon=True)
        th.start()
        zkc.until(lambda: (kz.get(path)[0] or b"").startswith(b"zkelect-transfer 1 "),
                  "the leader's request in the path's data", 10)
        # Its reply too (a loopback round trip): a reset that loses that
        # reply ends the transfer with nothing handed over.
        time.sleep(0.3)
        assert api.stats(a)["engine_state"] == "transferring" and th.is_alive()
        sid, _tmo, pw = pe.last_session()
        # Cut off, and the reconnect held (its bytes kept, not lost).
        pe.blackhole(discard=False)
        pe.reset()
        # The deadline hands over on the cut-off session.
        ev, _ = api.wait_event(a, {"DEPOSED"}, 10)
        assert ev["reason"] == "transferred", ev
        closer = KazooClient(hosts=zk.connect_string, client_id=(sid, pw), timeout=4.0)
        closer.start(timeout=10)
        closer.stop()
        closer.close()
        t_pass = time.monotonic()
        pe.set_pass()
        api.wait_event(a, {"EXPIRED"}, 20)
        th.join(20)
        assert not th.is_alive(), "zkelect_transfer did not return"
        took = time.monotonic() - began
        # It ended with the new session's listing, not at the call's bound
        # (XFER_MS + 2T from the call).
        assert time.monotonic() - t_pass < 8 and took < (XFER_MS + 2 * T) / 1000 - 1, took
        assert _err(lib, out["rc"]) in ("ZKELECT_ETIMEDOUT", "ZKELECT_ETARGET_LOST"), out

        # a leads again: the ghost goes, t resigns.
        kz.delete(ghost)
        api.wait_event(t, {"ELECTED"}, 15)
        assert lib.zkelect_resign(t) == 0
        api.wait_event(a, {"ELECTED"}, 20)
        for _ in range(3):
            rc = lib.zkelect_transfer(a, b"nobody", 1000)
            assert _err(lib, rc) == "ZKELECT_ENOCANDIDATE", _err(lib, rc)
        assert lib.zkelect_is_leader(a) == 1

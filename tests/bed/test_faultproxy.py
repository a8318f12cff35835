"""Self-tests of the fault proxy against a real ZooKeeper ensemble (kazoo)."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss

from bed.faultproxy import FaultProxy, ProxiedEnsemble

HERE = Path(__file__).resolve().parent


pytestmark = pytest.mark.fault


def wait_for(cond, timeout, what, step=0.02):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)


class StateLog:
    """Records kazoo state transitions with their monotonic times."""

    def __init__(self, client):
        self.events = []
        self.cv = threading.Condition()
        client.add_listener(self._on)

    def _on(self, state):
        with self.cv:
            self.events.append((state, time.monotonic()))
            self.cv.notify_all()
        return False

    def wait(self, state, timeout, after=0):
        """Time of the first `state` at index >= after."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for s, t in self.events[after:]:
                    if s == state:
                        return t
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {state} within {timeout} s: {self.events}")
                self.cv.wait(left)

    def __len__(self):
        with self.cv:
            return len(self.events)


def client(hosts, timeout_s=2.0):
    c = KazooClient(hosts=hosts, timeout=timeout_s,
                    connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.2})
    c.start(timeout=10)
    return c


def stop(c):
    try:
        c.stop()
    finally:
        c.close()


@pytest.fixture
def direct(zk):
    c = client(zk.connect_string)
    yield c
    stop(c)


@pytest.fixture
def base(direct):
    p = f"/fp/{uuid.uuid4().hex[:12]}"
    direct.ensure_path(p)
    return p


def rtt(c, path):
    t = time.monotonic()
    c.get(path)
    return time.monotonic() - t


def test_pass_and_stats(zk, direct, base):
    with FaultProxy(("127.0.0.1", zk.client_port(0))) as p:
        c = client(p.address)
        try:
            c.create(base + "/a", b"hello")
            assert c.get(base + "/a")[0] == b"hello"
            assert c.get_children(base) == ["a"]
            sid = c.client_id[0]
        finally:
            stop(c)
        wait_for(lambda: p.stats()["connections_open"] == 0, 5, "connection closed")
        s = p.stats()
    direct.sync(base)
    assert direct.get(base + "/a")[0] == b"hello"
    assert s["connections_accepted"] == 1
    assert s["connect_requests"] == 1 and s["reconnect_requests"] == 0
    assert [x[0] for x in s["sessions"]] == [sid]
    assert s["requests"].get("create", 0) == 1
    assert s["requests"].get("getData", 0) == 1
    assert s["requests"].get("getChildren2", 0) + s["requests"].get("getChildren", 0) == 1
    assert s["requests"].get("closeSession", 0) == 1
    # every request got exactly one reply; the connect pair is counted too
    n_req = sum(s["requests"].values())
    assert s["packets_c2s"] == n_req + 1
    assert s["packets_s2c"] == s["packets_c2s"]
    assert s["bytes_in_c2s"] == s["bytes_out_c2s"] > 0
    assert s["bytes_in_s2c"] == s["bytes_out_s2c"] > 0
    assert s["replies_dropped"] == 0 and s["bytes_discarded_c2s"] == 0


def test_delay_adds_latency(zk, direct, base):
    direct.create(base + "/d", b"x")
    with FaultProxy(("127.0.0.1", zk.client_port(1))) as p:
        c = client(p.address, timeout_s=4.0)
        try:
            c.sync(base)
            p.delay(150)
            for _ in range(3):
                assert rtt(c, base + "/d") >= 0.300      # 150 ms each way
            p.delay(200, direction="c2s")
            p.delay(0, direction="s2c")
            assert rtt(c, base + "/d") >= 0.200
            p.delay(50, jitter_ms=100)
            times = [rtt(c, base + "/d") for _ in range(5)]
            assert min(times) >= 0.100
            p.set_pass()
            assert c.get(base + "/d")[0] == b"x"
        finally:
            stop(c)


def test_blackhole_hold_delivers_late(zk, direct, base):
    direct.create(base + "/h", b"x")
    with FaultProxy(("127.0.0.1", zk.client_port(2))) as p:
        c = client(p.address, timeout_s=4.0)     # read timeout ~2.7 s
        try:
            c.sync(base)
            log = StateLog(c)
            p.blackhole(discard=False)
            t0 = time.monotonic()
            r = c.get_async(base + "/h")
            assert not r.wait(0.8)                # nothing crosses
            p.set_pass()
            assert r.get(timeout=5)[0] == b"x"
            assert time.monotonic() - t0 >= 0.8
            assert len(log) == 0                  # no connection loss
            assert p.stats()["connections_accepted"] == 1
        finally:
            stop(c)


def test_blackhole_shorter_than_session_keeps_it(zk, direct, base):
    with FaultProxy(("127.0.0.1", zk.client_port(0))) as p:
        c = client(p.address, timeout_s=4.0)
        try:
            log = StateLog(c)
            sid = c.client_id[0]
            c.create(base + "/e", b"", ephemeral=True)
            p.blackhole()
            t0 = time.monotonic()
            t_susp = log.wait(KazooState.SUSPENDED, 4.0)
            p.set_pass()                          # ~2.7 s in, T = 4 s
            n = len(log)
            log.wait(KazooState.CONNECTED, 5.0, after=n - 1)
            assert c.client_id[0] == sid
            assert KazooState.LOST not in [s for s, _ in log.events]
            direct.sync(base)
            assert direct.exists(base + "/e").ephemeralOwner == sid
            s = p.stats()
            assert s["bytes_discarded_c2s"] > 0       # pings went nowhere
            assert s["reconnect_requests"] >= 1
            assert t_susp - t0 < 4.0
        finally:
            stop(c)


def test_blackhole_past_session_timeout_expires(zk, direct, base):
    """A client cut off from every server loses its session; others do not."""
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        c = client(pe.connect_string, timeout_s=2.0)
        try:
            log = StateLog(c)
            sid = c.client_id[0]
            c.create(base + "/e", b"", ephemeral=True)
            gone = threading.Event()

            def watch(ev):
                gone.set()
            direct.sync(base)
            assert direct.exists(base + "/e", watch=watch)
            pe.blackhole()
            t0 = time.monotonic()
            log.wait(KazooState.SUSPENDED, 3.0)
            assert gone.wait(8.0), "ephemeral node outlived the partition"
            t_gone = time.monotonic() - t0
            assert direct.exists(base + "/e") is None
            assert t_gone >= 1.5                       # not before ~T
            pe.set_pass()
            log.wait(KazooState.LOST, 10.0)            # told of the expiry
            wait_for(lambda: c.connected and c.client_id[0] != sid, 10, "new session")
            st = pe.stats()["total"]
            assert len({x[0] for x in st["sessions"]}) >= 2
            assert st["bytes_discarded_c2s"] > 0
        finally:
            stop(c)


def test_one_server_blackholed_client_fails_over(zk, direct, base):
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        assert [t.name for t in threading.enumerate()].count("faultproxy-ensemble") >= 1
        c = client(pe.connect_string, timeout_s=4.0)
        try:
            log = StateLog(c)
            sid = c.client_id[0]
            used = [i for i, p in enumerate(pe.proxies) if p.stats()["connections_open"]]
            assert len(used) == 1
            pe[used[0]].blackhole()
            log.wait(KazooState.SUSPENDED, 5.0)
            log.wait(KazooState.CONNECTED, 5.0, after=len(log) - 1)
            assert c.client_id[0] == sid
            others = [i for i in range(3) if i != used[0]]
            assert sum(pe[i].stats()["reconnect_requests"] for i in others) >= 1
            pe.set_pass()
        finally:
            stop(c)


def test_reset_reconnects_same_session_and_refuse(zk, direct, base):
    with FaultProxy(("127.0.0.1", zk.client_port(1))) as p:
        c = client(p.address, timeout_s=4.0)
        try:
            log = StateLog(c)
            sid = c.client_id[0]
            c.create(base + "/e", b"", ephemeral=True)
            assert p.reset() == 1
            log.wait(KazooState.SUSPENDED, 3.0)
            log.wait(KazooState.CONNECTED, 3.0, after=len(log) - 1)
            assert c.client_id[0] == sid
            direct.sync(base)
            assert direct.exists(base + "/e").ephemeralOwner == sid
            assert p.stats()["reconnect_requests"] == 1

            n = len(log)
            p.reset(refuse=True)
            log.wait(KazooState.SUSPENDED, 3.0, after=n)
            wait_for(lambda: p.stats()["connections_refused"] >= 2, 3, "refused retries")
            assert not c.connected
            p.set_pass()
            log.wait(KazooState.CONNECTED, 3.0, after=n + 1)
            assert c.client_id[0] == sid
            direct.sync(base)
            assert direct.exists(base + "/e").ephemeralOwner == sid
            assert p.stats()["resets"] >= 2
        finally:
            stop(c)


def test_drop_create_reply_then_reset_leaves_ghost(zk, direct, base):
    with FaultProxy(("127.0.0.1", zk.client_port(2))) as p:
        c = client(p.address, timeout_s=4.0)
        try:
            sid = c.client_id[0]
            rule = p.drop_reply("create", then="reset")
            with pytest.raises(ConnectionLoss):
                c.create(base + "/ghost", b"g", ephemeral=True)
            assert rule.done.is_set()
            direct.sync(base)
            st = direct.exists(base + "/ghost")
            assert st is not None and st.ephemeralOwner == sid
            # the client reconnects on its own, with the same session
            wait_for(lambda: c.connected, 5, "reconnect")
            assert c.client_id[0] == sid
            assert c.exists(base + "/ghost") is not None
            s = p.stats()
            assert s["replies_dropped"] == 1 and s["resets"] == 1
            assert s["requests"]["create"] == 1
            # the rule is spent: the next create gets its reply
            c.create(base + "/next", b"")
        finally:
            stop(c)


def test_drop_request_leaves_nothing_and_resets(zk, direct, base):
    with FaultProxy(("127.0.0.1", zk.client_port(1))) as p:
        c = client(p.address, timeout_s=4.0)
        try:
            sid = c.client_id[0]
            rule = p.drop_request("create", match="/lost")
            with pytest.raises(ConnectionLoss):
                c.create(base + "/lost", b"g", ephemeral=True)
            assert rule.done.is_set()
            direct.sync(base)
            assert direct.exists(base + "/lost") is None   # it never reached the server
            wait_for(lambda: c.connected, 5, "reconnect")
            assert c.client_id[0] == sid
            s = p.stats()
            assert s["requests_dropped"] == 1 and s["resets"] == 1
            assert s["replies_dropped"] == 0
            # the rule is spent: the same create goes through now
            c.create(base + "/lost", b"g", ephemeral=True)
            direct.sync(base)
            assert direct.exists(base + "/lost") is not None
        finally:
            stop(c)


def test_drop_reply_without_reset_hangs_the_call(zk, direct, base):
    with FaultProxy(("127.0.0.1", zk.client_port(0))) as p:
        c = client(p.address, timeout_s=4.0)
        try:
            rule = p.drop_reply("create")
            r = c.create_async(base + "/ghost", b"g")
            assert rule.done.wait(5)
            assert not r.wait(1.0)                # no reply, no error
            direct.sync(base)
            assert direct.exists(base + "/ghost") is not None
            assert c.connected                   # pings still answered
            # a later reply would not match the lost xid (kazoo 2.8 then
            # kills its connection thread), so end the connection instead
            p.reset()
            with pytest.raises(ConnectionLoss):
                r.get(timeout=5)
            wait_for(lambda: c.connected, 5, "reconnect")
        finally:
            stop(c)


def test_close_leaves_no_thread_or_listener(zk):
    p = FaultProxy(("127.0.0.1", zk.client_port(0)))
    c = client(p.address)
    port = p.port
    p.close()
    p.close()                                    # idempotent
    stop(c)
    assert [t.name for t in threading.enumerate()
            if t.name.startswith(("proxy", "faultproxy"))] == []
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_cli_and_control_socket(zk, direct, base, tmp_path):
    ctl = str(tmp_path / "ctl.sock")
    script = str(HERE / "faultproxy.py")
    proc = subprocess.Popen(
        [sys.executable, script, "--target", f"127.0.0.1:{zk.client_port(0)}",
         "--target", f"127.0.0.1:{zk.client_port(1)}", "--control", ctl],
        stdout=subprocess.PIPE, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line or line.strip() == "READY":
                break
            lines.append(line.split())
        assert len(lines) == 2 and lines[0][0] == "LISTEN"
        addrs = [w[2] for w in lines]

        def ctl_cmd(*words):
            out = subprocess.run([sys.executable, script, "ctl", ctl, *words],
                                 capture_output=True, text=True, timeout=15)
            return out.returncode, out.stdout.strip()

        assert ctl_cmd("delay", "100") == (0, "OK")
        c = client(addrs[0], timeout_s=4.0)
        try:
            direct.create(base + "/x", b"1")
            c.sync(base)
            assert rtt(c, base + "/x") >= 0.2
            assert ctl_cmd("@1", "blackhole")[0] == 0
            assert ctl_cmd("pass") == (0, "OK")
            assert rtt(c, base + "/x") < 0.2 + 0.5   # delay gone (loose bound)
            rc, out = ctl_cmd("stats")
            assert rc == 0
            s = json.loads(out)
            assert s[0]["requests"]["getData"] == 2 and s[0]["requests"]["sync"] == 1 and s[1]["connections_accepted"] == 0
            assert ctl_cmd("bogus")[0] == 1
            assert ctl_cmd("@7", "pass")[0] == 1
        finally:
            stop(c)
        assert ctl_cmd("shutdown") == (0, "OK")
        assert proc.wait(10) == 0
        assert not os.path.exists(ctl)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_rewrite_reconnect_and_last_session(zk, direct, base):
    """The explorer's 'shrink' and 'sclose' steps: a reconnect that asks the
    server for less than the client asked (the server grants it, and the
    client hears it), and another client that closes a session with the
    credentials the proxy saw (its ephemeral node goes at once)."""
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        c = client(pe.connect_string, timeout_s=6.0)
        try:
            sid, tmo, pw = pe.last_session()
            assert sid == c.client_id[0] and pw == c.client_id[1] and tmo == 6000
            rule = pe.rewrite_reconnect(request_timeout_ms=3000)
            pe.reset()
            assert rule.done.wait(10), "no reconnect went through the proxy"
            wait_for(lambda: c.connected, 10, "reconnected")
            assert pe.last_session()[:2] == (sid, 3000)
            c.create(base + "/eph", b"", ephemeral=True)
            closer = KazooClient(hosts=zk.connect_string, client_id=(sid, pw), timeout=6.0)
            closer.start(timeout=10)
            stop(closer)                 # closeSession for our client's session
            direct.sync(base)
            assert direct.exists(base + "/eph") is None
        finally:
            stop(c)


def test_rewrite_reconnect_reply_timeout_zero(zk, base):
    """A reconnect answered with the live session id and timeout 0."""
    with ProxiedEnsemble([zk.client_port(i) for i in range(3)]) as pe:
        c = client(pe.connect_string, timeout_s=6.0)
        try:
            sid = c.client_id[0]
            rule = pe.rewrite_reconnect(reply_timeout_ms=0)
            pe.reset()
            assert rule.done.wait(10), "no reconnect went through the proxy"
            sids = [s for s, t in pe.stats()["total"]["sessions"] if t == 0]
            assert sids == [sid]
        finally:
            stop(c)

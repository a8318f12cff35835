"""Fenced ZooKeeper writes (issue 54, items 1 and 3(c); docs/fencing.md,
"Fenced ZooKeeper writes") through the Python package and the C API, against
the real ensemble: a leader's batch commits whole, a refused operation
commits nothing and says which, a follower's write is refused before
anything is sent, a write whose reply is lost reports ECONNLOSS although it
committed (the outcome is unknown, as documented), and the scenario:
leader A's write held at a fault proxy while A's node is deleted from
outside and B is elected and writes; released, A's write is refused
(Fenced) and B's data stays. The same with a plain write, held the same
way, lands after B's and overwrites it: what the fence prevents."""

import threading
import time
import uuid

import pytest

import zkelect  # bindings/python, on the path by pytest.ini

T = 12000  # A's session timeout, ms: well above the time its write is held


def _wait(cond, what, limit=15):
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, f"{what}: not within {limit} s"
        time.sleep(0.02)


def _follows(e, limit=15):
    deadline = time.monotonic() + limit
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no FOLLOWING within {limit} s"
        ev = e.next_event(left)
        if ev is not None and ev.kind == "FOLLOWING":
            return


@pytest.fixture
def base(kz):
    path = f"/t/fenced-{uuid.uuid4().hex[:8]}"
    kz.create(path + "/data", b"init", makepath=True)
    return path


def _read(kz, path):
    """path's data, as of now: kz may be on a server behind the quorum."""
    kz.sync(path)
    return kz.get(path)[0]


def _exists(kz, path):
    kz.sync(path)
    return kz.exists(path) is not None


def _leader_node(kz, path):
    kz.sync(path + "/elect")
    names = [n for n in kz.get_children(path + "/elect") if "latch-" in n]
    return min(names, key=lambda n: n.rsplit("-", 1)[1])


def test_a_leaders_batch_commits_whole_and_a_refused_one_not_at_all(zk, kz, base):
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as c:
        c.await_connected(20)
        with c.election(base + "/elect", "a") as a:
            a.volunteer()
            a.await_leader(20)
            a.fenced_set(base + "/data", b"one")
            assert _read(kz, base + "/data") == b"one"
            with zkelect.FencedOps() as ops:
                ops.set(base + "/data", "two", version=1).create(base + "/new", b"n")
                ops.create(base + "/gone", b"").delete(base + "/gone")
                assert len(ops) == 4
                a.fenced_commit(ops)
                assert ops.failed() is None
            assert _read(kz, base + "/data") == b"two"
            assert _read(kz, base + "/new") == b"n" and not _exists(kz, base + "/gone")
            # The second operation fails (the node exists): the first, a
            # valid set, is not committed either.
            with zkelect.FencedOps() as ops:
                ops.set(base + "/data", b"three").create(base + "/new", b"again")
                with pytest.raises(zkelect.ZooKeeper) as err:
                    a.fenced_commit(ops)
                assert ops.failed() == (1, -110)  # ZNODEEXISTS
                assert "operation 1" in str(err.value)
            assert _read(kz, base + "/data") == b"two"
            with zkelect.FencedOps() as ops:
                with pytest.raises(zkelect.InvalidArgument):
                    a.fenced_commit(ops)  # empty
                with pytest.raises(zkelect.InvalidArgument):
                    ops.set("relative", b"x")
                with pytest.raises(zkelect.InvalidArgument):
                    ops.set(base + "/data", b"x", version=-2)


def test_a_followers_write_is_refused_with_nothing_sent(zk, kz, base, proxies):
    marker = uuid.uuid4().hex.encode()
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as ca, \
            zkelect.connect(proxies.connect_string, session_timeout_ms=6000) as cb:
        ca.await_connected(20)
        cb.await_connected(20)
        with ca.election(base + "/elect", "a") as a, cb.election(base + "/elect", "b") as b:
            a.volunteer()
            a.await_leader(20)
            b.volunteer()
            _follows(b)
            # Any multi carrying the marker that crosses b's proxy claims
            # the rule (and would lose its reply).
            rule = proxies.drop_reply("multi", count=1, match=marker)
            with pytest.raises(zkelect.NotLeader) as err:
                b.fenced_set(base + "/data", marker)
            assert "nothing was sent" in str(err.value)
            time.sleep(0.3)
            assert rule.armed == 1, "the follower's write reached the proxy"
            assert _read(kz, base + "/data") == b"init"
            proxies.clear_rules()
            b.resign()
            with pytest.raises(zkelect.NotLeader):
                b.fenced_set(base + "/data", marker)  # not even a candidate


def test_a_lost_reply_is_an_unknown_outcome_not_a_failure(zk, kz, base, proxies):
    """The write commits, its reply is lost with the connection: the call
    says ConnectionLoss, and reading what it wrote is how to find out."""
    marker = uuid.uuid4().hex.encode()
    with zkelect.connect(proxies.connect_string, session_timeout_ms=T) as c:
        c.await_connected(20)
        with c.election(base + "/elect", "a") as a:
            a.volunteer()
            a.await_leader(20)
            proxies.drop_reply("multi", count=1, then="reset", match=marker)
            with pytest.raises(zkelect.ConnectionLoss) as err:
                a.fenced_set(base + "/data", marker, timeout=T / 1000)
            assert "may or may not have committed" in str(err.value)
            assert _read(kz, base + "/data") == marker  # it had committed


def test_another_clients_write_with_the_leaders_node_and_token(zk, kz, base):
    """zkelect_client_fenced_commit (Client.fenced_commit): a client that
    holds no candidacy writes with the leader's node and token while the
    term lasts; with another term's token, or once the node is gone, it is
    refused (Fenced) and nothing changes."""
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as c, \
            zkelect.connect(zk.connect_string, session_timeout_ms=6000) as other:
        c.await_connected(20)
        other.await_connected(20)
        with c.election(base + "/elect", "a") as a:
            a.volunteer()
            a.await_leader(20)
            node = base + "/elect/" + _leader_node(kz, base)
            token = a.fencing_token()
            with zkelect.FencedOps() as ops:
                other.fenced_commit(node, token, ops.set(base + "/data", b"other"))
            assert _read(kz, base + "/data") == b"other"
            with zkelect.FencedOps() as ops, pytest.raises(zkelect.Fenced) as err:
                other.fenced_commit(node, token - 1, ops.set(base + "/data", b"x"))
            assert "another term's node" in str(err.value)
            a.resign()
            # resign() only starts the delete: the node is gone at RESIGNED.
            deadline = time.monotonic() + 20
            while (ev := a.next_event(1)) is None or ev.kind != "RESIGNED":
                assert time.monotonic() < deadline, "no RESIGNED within 20 s"
            with zkelect.FencedOps() as ops, pytest.raises(zkelect.Fenced) as err:
                other.fenced_commit(node, token, ops.set(base + "/data", b"late"))
            assert "is gone" in str(err.value)
            assert _read(kz, base + "/data") == b"other"


def test_a_lost_reply_the_client_finds_out_of_order_is_an_unknown_outcome(zk, kz, base, proxies):
    """The reply is lost and the connection stays up: the leader's next
    keepalive (a request behind the write) is answered, libzookeeper finds
    that reply out of order, drops the connection and fails the write with
    ZRUNTIMEINCONSISTENCY. That is not ZooKeeper refusing the write (it
    committed): ConnectionLoss, as for a lost connection. (The explorer
    found the write reported as refused, EZK, though committed: seed 5501.)"""
    marker = uuid.uuid4().hex.encode()
    with zkelect.connect(proxies.connect_string, session_timeout_ms=T) as c:
        c.await_connected(20)
        with c.election(base + "/elect", "a") as a:
            a.volunteer()
            a.await_leader(20)
            rule = proxies.drop_reply("multi", count=1, match=marker)
            with pytest.raises(zkelect.ConnectionLoss) as err:
                a.fenced_set(base + "/data", marker, timeout=T / 1000)
            assert rule.dropped == 1
            assert "may or may not have committed" in str(err.value)
            assert _read(kz, base + "/data") == marker  # it had committed


def _held_write(zk, kz, base, proxies, write):
    """Leader A on the proxy, B direct. A's write(a) starts while the proxy
    holds everything A sends for HOLD ms; A's node is deleted from outside,
    B is elected and makes its fenced write, all inside HOLD; then the
    proxy lets A's write through. What A's call ended with."""
    HOLD = 4000
    with zkelect.connect(proxies.connect_string, session_timeout_ms=T) as ca, \
            zkelect.connect(zk.connect_string, session_timeout_ms=6000) as cb:
        ca.await_connected(20)
        cb.await_connected(20)
        with ca.election(base + "/elect", "a") as a, cb.election(base + "/elect", "b") as b:
            a.volunteer()
            a.await_leader(20)
            b.volunteer()
            _follows(b)
            node = _leader_node(kz, base)
            outcome = {}

            def run():
                try:
                    write(a)
                    outcome["rc"] = "committed"
                except zkelect.Error as e:
                    outcome["rc"] = e
                outcome["at"] = time.monotonic()

            proxies.delay(HOLD, direction="c2s")
            t0 = time.monotonic()
            th = threading.Thread(target=run)
            th.start()
            time.sleep(0.3)  # A's write is in the proxy, held
            kz.delete(base + "/elect/" + node)
            b.await_leader(5)
            b.fenced_set(base + "/data", b"B")
            t_b = time.monotonic()
            assert t_b - t0 < HOLD / 1000 - 0.5, "B's write was not inside A's hold"
            assert "rc" not in outcome, "A's write returned while held"
            th.join(HOLD / 1000 + 20)
            assert not th.is_alive()
            proxies.set_pass()
            assert outcome["at"] - t0 >= HOLD / 1000 - 0.2
            return outcome["rc"], _read(kz, base + "/data")


def test_a_deposed_leaders_held_write_is_fenced(zk, kz, base, proxies):
    rc, data = _held_write(zk, kz, base, proxies,
                           lambda a: a.fenced_set(base + "/data", b"A", timeout=15))
    assert isinstance(rc, zkelect.Fenced), rc
    assert "term is over" in str(rc)
    assert data == b"B"


def test_a_plain_write_held_the_same_way_overwrites_the_successors(zk, kz, base, proxies):
    """The control: without the fence the same schedule loses B's write, so
    the test above can fail."""
    from kazoo.client import KazooClient
    plain = KazooClient(hosts=proxies.connect_string, timeout=T / 1000)
    plain.start(timeout=10)
    try:
        rc, data = _held_write(
            zk, kz, base, proxies,
            lambda a: plain.set_async(base + "/data", b"A").get(timeout=15))
    finally:
        plain.stop()
        plain.close()
    assert rc == "committed"
    assert data == b"A"  # B's write is gone

"""The Python package (bindings/python, `import zkelect`) against the real
ensemble: an election between two of its clients, asyncio on the event
descriptor, close() under a blocked wait, a forgotten leader collected and
resigned, bad input, and the library it loads (missing, wrong major).
The cross-language election (test_crosslang.py) has a Python candidate too;
the installed package (deb, wheel, meson install) is tests/packaging's.

The package is imported from the source tree, in this process: it is pure
Python and finds libzkelect.so.1 through LD_LIBRARY_PATH, as ./dev test sets it.
"""

import asyncio
import gc
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from bed.sh import ok as _ok, run as _run

REPO = Path(__file__).resolve().parents[2]
import zkelect  # bindings/python, on the path by pytest.ini


@pytest.fixture
def client(zk):
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as c:
        c.await_connected(20)
        yield c


def _wait(cond, what, limit=15):
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, f"{what}: not within {limit} s"
        time.sleep(0.02)


def _lead_and_follow(a, b):
    """a volunteers and leads, then b volunteers and follows it."""
    a.volunteer()
    a.await_leader(20)
    b.volunteer()
    _until(b, "FOLLOWING")


def _until(election, kind, limit=15):
    got = []
    deadline = time.monotonic() + limit
    while not any(e.kind == kind for e in got):
        left = deadline - time.monotonic()
        assert left > 0, f"no {kind} within {limit} s: {got}"
        ev = election.next_event(left)
        if ev is not None:
            got.append(ev)
    return got


def test_two_clients_elect_and_hand_over(zk, zk_path, client):
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as other:
        with client.election(zk_path, "py-a-\u00e9") as a, other.election(zk_path, "py-b") as b:
            assert not a.is_leader()
            a.volunteer()
            a.await_leader(20)
            assert a.is_leader()
            # Session timeout 6 s: a lease is at most T/2 less the margin.
            left = a.lease_left()
            assert 0 < left <= 3.0, left
            assert a.is_leader_for(0.05) and a.is_leader_for(0) and a.is_leader_for(-1)
            assert not a.is_leader_for(12.0)
            ev = _until(a, "ELECTED")[-1]
            token = a.fencing_token()
            assert ev.token == token > 0 and ev.id == "py-a-\u00e9"
            b.volunteer()
            follow = _until(b, "FOLLOWING")[-1]
            assert follow.id == "py-a-\u00e9", follow
            assert not b.is_leader()
            assert b.lease_left() == 0 and not b.is_leader_for(0)
            with pytest.raises(zkelect.NotLeader):
                b.fencing_token()
            assert b.leader_id() == "py-a-\u00e9"
            ps = b.participants()
            assert [p.id for p in ps] == ["py-a-\u00e9", "py-b"]
            assert ps[0].token == token and ps[1].token > token
            assert client.participants(zk_path) == ps
            st = a.stats()
            assert st["version"] == 1 and st["is_leader"] is True, st
            assert client.stats()["connected"] is True
            assert client.counter("terms_won") == 1
            assert set(client.counters()) == set(zkelect.COUNTERS)

            a.resign()
            assert not a.is_leader()
            assert a.lease_left() == 0 and not a.is_leader_for(0)
            assert [e.kind for e in _until(a, "RESIGNED")] == ["DEPOSED", "RESIGNED"]
            b.await_leader(20)
            assert b.fencing_token() > token
            with pytest.raises(zkelect.State):
                a.resign()


def test_closing_a_client_ends_its_elections_at_once(zk, zk_path):
    """Client.close and Client.shutdown (zkelect_client_shutdown, issue 56):
    every election of the client ends together, what a resign says is
    said, another client's candidates lead, the handles raise Closed."""
    paths = [f"{zk_path}/s{i}" for i in range(20)]
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as other:
        a = zkelect.connect(zk.connect_string, session_timeout_ms=6000)
        ours = [a.election(p, "a") for p in paths]
        for e in ours:
            e.volunteer()
        for e in ours:
            e.await_leader(20)
        theirs = [other.election(p, "b") for p in paths]
        for e in theirs:
            e.volunteer()
        for e in theirs:
            _until(e, "FOLLOWING")
        a.shutdown(10)
        assert not any(e.is_leader() for e in ours)
        for e in ours:
            assert [ev.kind for ev in _until(e, "RESIGNED")][-2:] == ["DEPOSED", "RESIGNED"]
        for e in theirs:
            e.await_leader(20)
        with pytest.raises(zkelect.Closed):
            ours[0].volunteer()
        with pytest.raises(zkelect.Closed):
            a.shutdown()
        a.close()  # each destroy after the shutdown is cheap
        assert all(e.closed for e in ours)
        # close() alone does the same for a client with elections left.
        b = zkelect.connect(zk.connect_string, session_timeout_ms=6000)
        for e in theirs:
            e.close()
        mine = [b.election(p, "c") for p in paths]
        for e in mine:
            e.volunteer()
        for e in mine:
            e.await_leader(20)
        b.close()
        with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as c:
            assert all(c.participants(p) == [] for p in paths)


def test_transfer_hands_over_and_says_why(zk, zk_path, client):
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as other:
        with client.election(zk_path, "py-a") as a, other.election(zk_path, "py-b") as b:
            _lead_and_follow(a, b)
            with pytest.raises(zkelect.NoCandidate):
                a.transfer("nobody", 5)
            with pytest.raises(zkelect.NotLeader):
                b.transfer("py-a", 5)
            with pytest.raises(zkelect.InvalidArgument):
                a.transfer("py-a", 5)
            token = a.fencing_token()
            a.transfer("py-b", None)  # None: the longest the library allows
            b.await_leader(10)
            assert b.fencing_token() > token and not a.is_leader()
            deposed = [e for e in _until(a, "FOLLOWING") if e.kind == "DEPOSED"]
            assert [e.reason for e in deposed] == ["transferred"], deposed


def test_leader_wsgi_answers_for_the_leader_only(zk, zk_path, client):
    """leader_wsgi (issue 55), served by wsgiref on loopback and asked over
    HTTP: 200 with the term's token from the leader, 503 from the follower,
    and the two swap with a transfer; never cached."""
    import json
    import urllib.error
    import urllib.request
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    def ask(port):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/leader", timeout=5) as r:
                return r.status, json.loads(r.read()), r.headers["Cache-Control"]
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read()), e.headers["Cache-Control"]

    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as other:
        with client.election(zk_path, "py-a") as a, other.election(zk_path, "py-b") as b:
            servers = [make_server("127.0.0.1", 0, zkelect.leader_wsgi(e), handler_class=Quiet)
                       for e in (a, b)]
            threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
            for t in threads:
                t.start()
            try:
                pa, pb = (s.server_address[1] for s in servers)
                assert ask(pa) == (503, {"leader": False}, "no-store")
                _lead_and_follow(a, b)
                status, body, cache = ask(pa)
                assert (status, cache) == (200, "no-store")
                assert body["leader"] and body["id"] == "py-a" and body["path"] == zk_path
                assert body["token"] == a.fencing_token() and body["lease_left_ms"] > 0
                assert ask(pb)[:2] == (503, {"leader": False})
                a.transfer("py-b", None)
                b.await_leader(10)
                status, body, _ = ask(pb)
                assert status == 200 and body["id"] == "py-b" and body["token"] == b.fencing_token()
                assert ask(pa)[0] == 503
            finally:
                for s in servers:
                    s.shutdown()
                    s.server_close()
    # Closed: not leading, whatever it was.
    assert a.leader_answer() == (503, '{"leader":false}')


def test_requeue_steps_back_to_the_back_of_the_line(zk, zk_path, client):
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as other:
        with client.election(zk_path, "py-a") as a, other.election(zk_path, "py-b") as b:
            _lead_and_follow(a, b)
            a.requeue()
            assert not a.is_leader()
            seen = _until(a, "FOLLOWING")
            assert [e.kind for e in seen][-3:] == ["DEPOSED", "RESIGNED", "FOLLOWING"], seen
            b.await_leader(10)


def test_participants_carry_the_priority(zk, zk_path, client):
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000,
                         priority=9) as other:
        with client.election(zk_path, "py-a") as a, other.election(zk_path, "py-b") as b:
            _lead_and_follow(a, b)
            assert [(p.id, p.priority) for p in client.participants(zk_path)] == \
                [("py-a", 0), ("py-b", 9)]


def test_transfer_asked_by_a_client_that_is_no_candidate(zk, zk_path, client):
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000) as other, \
            zkelect.connect(zk.connect_string, session_timeout_ms=6000) as asker:
        with pytest.raises(zkelect.NoLeader):
            asker.transfer(zk_path, "py-b", 5)
        with client.election(zk_path, "py-a") as a, other.election(zk_path, "py-b") as b:
            _lead_and_follow(a, b)
            with pytest.raises(zkelect.NoCandidate):
                asker.transfer(zk_path, "nobody", 5)
            token = a.fencing_token()
            asker.transfer(zk_path, "py-b", 10)
            b.await_leader(10)
            assert b.fencing_token() > token and not a.is_leader()


def test_asyncio_leader_and_events_on_the_event_fd(zk, zk_path, client):
    ticks = []

    async def ticker():
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def main():
        t = asyncio.create_task(ticker())
        with client.election(zk_path, "first") as first, \
                client.election(zk_path, "second") as second:
            first.volunteer()
            await first.leader(20)
            second.volunteer()
            seen = []

            async def read():
                async for ev in second.aevents():
                    seen.append(ev.kind)
                    if ev.kind == "ELECTED":
                        return ev.token

            reader = asyncio.create_task(read())
            waiting = asyncio.create_task(second.leader())
            await asyncio.sleep(0.3)
            assert not waiting.done() and not second.is_leader()
            n = len(ticks)
            await asyncio.sleep(0.2)
            assert len(ticks) > n + 5, "the loop was blocked while leader() waited"
            first.resign()
            await asyncio.wait_for(waiting, 20)
            token = await asyncio.wait_for(reader, 20)
            assert second.is_leader() and token == second.fencing_token()
            assert seen[0] == "FOLLOWING" and seen[-1] == "ELECTED", seen
            with pytest.raises(zkelect.State):
                await first.leader(1)  # resigned: not a candidate
            # A reader of a closed election ends; a waiter gets Closed.
            third = client.election(zk_path, "third")
            third.volunteer()
            it = asyncio.create_task(_drain(third))
            w = asyncio.create_task(third.leader())
            await asyncio.sleep(0.3)
            third.close()
            assert (await asyncio.wait_for(it, 5))[0] == "FOLLOWING"
            with pytest.raises(zkelect.Closed):
                await asyncio.wait_for(w, 5)
        t.cancel()

    asyncio.run(main())


async def _drain(election):
    return [ev.kind async for ev in election.aevents()]


def test_asyncio_leader_times_out_and_wants_a_candidate(zk, zk_path, client):
    async def main():
        with client.election(zk_path, "lead") as lead, client.election(zk_path, "wait") as w:
            with pytest.raises(zkelect.State):
                await w.leader(1)  # idle: never volunteered
            lead.volunteer()
            await lead.leader(20)
            w.volunteer()
            t0 = time.monotonic()
            with pytest.raises(zkelect.TimedOut):
                await w.leader(0.3)
            assert 0.25 < time.monotonic() - t0 < 3

    asyncio.run(main())


def test_close_wakes_blocked_calls(zk, zk_path, client):
    lead = client.election(zk_path, "lead")
    lead.volunteer()
    lead.await_leader(20)
    e = client.election(zk_path, "blocked")
    e.volunteer()
    _until(e, "FOLLOWING")
    out = {}

    def awaiting():
        try:
            e.await_leader(None)
            out["await"] = "returned"
        except zkelect.Error as err:
            out["await"] = err

    def iterating():
        out["events"] = list(e.events())

    def waiting():
        out["next"] = e.next_event(None)

    threads = [threading.Thread(target=f) for f in (awaiting, iterating, waiting)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    assert all(t.is_alive() for t in threads)
    t0 = time.monotonic()
    e.close()
    took = time.monotonic() - t0
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads), out
    assert isinstance(out["await"], zkelect.Closed), out
    assert out["events"] == [] and out["next"] is None, out
    assert took < 3, f"close took {took:.2f} s under three blocked calls"
    with pytest.raises(zkelect.Closed):
        e.volunteer()
    assert not e.is_leader() and e.lease_left() == 0 and not e.is_leader_for(0)
    e.close()  # again: nothing
    # Closing the client closes what is still open on it.
    client.close()
    assert lead.closed and not lead.is_leader()


def test_a_forgotten_leader_is_collected_and_resigns(zk, zk_path, client):
    def forget():
        e = client.election(zk_path, "forgotten")
        e.volunteer()
        e.await_leader(20)
        return e.fencing_token()

    token = forget()
    gc.collect()
    with client.election(zk_path, "next") as nxt:
        nxt.volunteer()
        nxt.await_leader(10)
        assert nxt.fencing_token() > token
        assert [p.id for p in nxt.participants()] == ["next"]

    # A forgotten client with an election still open: the election keeps
    # the client alive; both go when the election is forgotten.
    def forget_both():
        c = zkelect.connect(zk.connect_string)
        e = c.election(zk_path, "orphan")
        e.volunteer()
        e.await_leader(20)
        return e
    e = forget_both()
    assert e.is_leader() and e.client.is_connected()
    del e
    gc.collect()
    _wait(lambda: client.participants(zk_path) == [], "the orphan's node removed")


def test_group_stats_of_a_balanced_client(zk, zk_path):
    """Client.group_stats: the group's members as a dict, this client's own
    with its session and counts; bad paths raise InvalidArgument."""
    group = zk_path + "/group"
    with zkelect.connect(zk.connect_string, session_timeout_ms=6000, balance_group=group) as c:
        c.await_connected(20)
        with c.election(zk_path + "/e", "me") as e:
            e.volunteer()
            e.await_leader(20)
            me = hex(c.session_id & (2**64 - 1))

            def shown():
                doc = c.group_stats(group)
                return doc if [(m["session"], m.get("leading")) for m in doc["members"]] \
                    == [(me, 1)] else None
            deadline = time.monotonic() + 15
            while not (doc := shown()):
                assert time.monotonic() < deadline, c.group_stats(group)
                time.sleep(0.02)
            assert doc["group"] == group and doc["leading"] == 1
            assert doc["members"][0]["valid"] and doc["members"][0]["in_line"] == 1
            assert c.stats()["balance"]["leading"] == 1
        for bad in ("relative", "/zookeeper/x"):
            with pytest.raises(zkelect.InvalidArgument):
                c.group_stats(bad)
        assert c.group_stats(zk_path + "/nobody")["members"] == []


def test_bad_input(zk, zk_path, client):
    cases = [
        (lambda: zkelect.connect(""), zkelect.InvalidArgument, "zk.hosts"),
        (lambda: zkelect.connect(zk.connect_string, nope=1), zkelect.InvalidArgument, "nope"),
        (lambda: zkelect.connect(zk.connect_string, session_timeout_ms=5), zkelect.InvalidArgument,
         "zk.session.timeout.ms"),
        (lambda: zkelect.connect(zk.connect_string, leadership="sometimes"),
         zkelect.InvalidArgument, "leadership"),
        (lambda: zkelect.Client(["zk.hosts"]), zkelect.InvalidArgument, "mapping"),
        (lambda: client.election("relative", "x"), zkelect.InvalidArgument, "absolute"),
        (lambda: client.election("/a/../b", "x"), zkelect.InvalidArgument, ""),
        (lambda: client.election("/zookeeper/x", "x"), zkelect.InvalidArgument, "/zookeeper"),
        (lambda: client.election(zk_path, ""), zkelect.InvalidArgument, "empty"),
        (lambda: client.election(zk_path, "a\nb"), zkelect.InvalidArgument, "control"),
        (lambda: client.election(zk_path, "x" * 1025), zkelect.InvalidArgument, ""),
        (lambda: client.election(zk_path, "a\0b"), zkelect.InvalidArgument, "NUL"),
        (lambda: client.election(zk_path, "\ud800"), zkelect.InvalidArgument, "surrogate"),
        (lambda: client.election(zk_path, 7), zkelect.InvalidArgument, "str"),
        (lambda: client.election(b"/x", "x"), zkelect.InvalidArgument, "str"),
        (lambda: client.counter("nope"), zkelect.InvalidArgument, "nope"),
        (lambda: client.crash_guard_wait(-1), zkelect.InvalidArgument, ""),
    ]
    for call, cls, words in cases:
        with pytest.raises(cls) as info:
            call()
        assert words in str(info.value), (words, info.value)
        assert isinstance(info.value, ValueError)
        assert info.value.code == -1 and info.value.name == "ZKELECT_EINVAL"
    with client.election(zk_path, "ok") as e:
        for bad in (-1, float("nan"), "1", True):
            with pytest.raises(zkelect.InvalidArgument):
                e.await_leader(bad)
            with pytest.raises(ValueError):
                e.next_event(bad)
        with pytest.raises(zkelect.State) as info:
            e.await_leader(1)  # idle
        assert info.value.name == "ZKELECT_ESTATE" and info.value.code == -3
        with pytest.raises(zkelect.State):
            e.resign()
        e.volunteer()
        with pytest.raises(zkelect.State):
            e.volunteer()
        e.await_leader(20)
        e.resign()
        with pytest.raises(zkelect.TimedOut) as info:
            zkelect.connect("127.0.0.1:9", connect_timeout_ms=100).await_connected(0.2)
        assert isinstance(info.value, TimeoutError) and info.value.name == "ZKELECT_ETIMEDOUT"
    # The vocabulary: every code the library names has its class.
    for code in range(-1, -64, -1):
        name = zkelect._lib.err_name(code)
        if name == "ZKELECT_EUNKNOWN":
            break
        assert zkelect._lib.CLASSES[code]("x").name == name
    assert list(zkelect._vocab.KEYWORDS.values()) == zkelect.config_keys()


def _stub_library(tmp_path, major):
    src = tmp_path / "stub.c"
    src.write_text(f"unsigned zkelect_version(void) {{ return {major}u << 16 | 2u << 8; }}\n")
    so = tmp_path / "libzkelect-stub.so"
    _ok(_run(["cc", "-shared", "-fPIC", str(src), "-o", str(so)], timeout=60), "cc stub")
    return so


@pytest.mark.parametrize("case", ["missing", "major 2"])
def test_the_library_it_loads(tmp_path, case):
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"))
    env["ZKELECT_LIBRARY"] = (str(tmp_path / "nowhere" / "libzkelect.so.1") if case == "missing"
                              else str(_stub_library(tmp_path, 2)))
    proc = subprocess.run(["/usr/bin/python3", "-c", "import zkelect"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: zkelect: "), proc.stderr
    if case == "missing":
        assert "libzkelect1" in last, last
    else:
        assert "libzkelect 2.2.0" in last and "1.x" in last, last


def _ctype(decl):
    """The ctypes type a C parameter or return type (without its name) must have."""
    from ctypes import (POINTER, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint, c_uint64,
                        c_void_p)
    d = " ".join(decl.replace("const ", "").replace("*", " * ").split())
    # "void *": a fenced write's data, passed as bytes.
    table = {"int": c_int, "unsigned": c_uint, "int64_t": c_int64, "size_t": c_size_t,
             "void": None, "char *": c_char_p, "int64_t *": POINTER(c_int64),
             "uint64_t *": POINTER(c_uint64), "size_t *": POINTER(c_size_t),
             "int32_t": c_int32, "int *": POINTER(c_int), "void *": c_char_p}
    if d in table:
        return table[d]
    assert re.fullmatch(r"zkelect_\w+_t \*", d), decl
    return c_void_p


def test_every_prototype_is_the_headers():
    """_lib.py declares each function it calls by hand; the header is the
    truth: same return type, same parameters, one for one."""
    header = (REPO / "capi" / "zkelect" / "zkelect.h").read_text()
    decls = {m.group(2): (m.group(1), m.group(3)) for m in re.finditer(
        r"ZKELECT_API\s+([\w\s\*]+?)\s*\b(zkelect_\w+)\s*\(([^)]*)\)\s*;", header)}
    for name, (res, args) in zkelect._lib._PROTOS.items():
        assert name in decls, f"{name} is not in the header"
        ret, params = decls[name]
        assert _ctype(ret) == res, (name, ret, res)
        params = [] if params.strip() == "void" else \
            [re.sub(r"\w+$", "", " ".join(p.split())) for p in params.split(",")]
        assert [_ctype(p) for p in params] == args, (name, params, args)

"""Transfers and preferred leaders in an election shared with a real
Curator LeaderLatch candidate (issue 33, "Mixed elections"): Debian's
Curator in the participant of bench/participants/curator, one JVM for the
module on one election path. A Curator candidate has no priority and never
steps back, so a transfer that would need it to is refused at once and
changes nothing, a preferred leader stuck behind a Curator leader is
reported once, and a transfer that leaves the Curator candidate behind the
target works; through all of it Curator's own view of who leads
(`LeaderLatch.getLeader()`, asked with the participant's `view` command)
matches libzkelect's (docs/semantics.md, "Transferring leadership",
"Preferred leaders").

Each test starts and ends with the Curator candidate alone in the line and
leading: the libzkelect candidates a test made are freed after it."""

import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from bed import curatordist, zkc
from procs import Kazoo, curator_candidate
from test_priority import HOLD, _join
from test_transfer import _drain, _err, _line, _token

T = 4000
CID = "100"     # the Curator candidate's id
CURATOR_SRC = str(Path(__file__).resolve().parents[2] / "bench" / "participants" / "curator"
                  / "CuratorParticipant.java")


@pytest.fixture(scope="module")
def _curator_jvm(tmp_path_factory):
    """{}: filled by `cur` on first use (it needs the shared ensemble, a
    per-test fixture), closed once the module is done."""
    held = {}
    yield held
    if "proc" in held:
        held["proc"].close()


@pytest.fixture
def cur(_curator_jvm, zk, test_env, tmp_path_factory):
    """(participant, path): Debian's Curator LeaderLatch, alone and leading
    at `path` when the test starts."""
    if "proc" not in _curator_jvm:
        if not (shutil.which("javac") and shutil.which("java")):
            pytest.fail("javac/java missing (apt-get install default-jdk-headless)", pytrace=False)
        cp = curatordist.classpath(curatordist.DEBIAN)
        out = tmp_path_factory.mktemp("curator-mixed")
        r = subprocess.run(["javac", "-J-XX:TieredStopAtLevel=1", "-Xlint:-options",
                            "--release", "17", "-d", str(out), "-cp", cp, CURATOR_SRC],
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, f"building the Curator participant failed:\n{r.stdout}{r.stderr}"
        path = f"/t/mixed-{uuid.uuid4().hex[:8]}"
        p = curator_candidate(out, test_env, zk.connect_string, path, int(CID), session_ms=T,
                              classpath=cp)
        _curator_jvm.update(proc=p, path=path)
        p.wait_event(("CONNECTED",), CID, 60)
        m = p.mark()
        p.send("join")
        p.wait_event(("LEADER",), CID, 30, since=m)
    p, path = _curator_jvm["proc"], _curator_jvm["path"]
    kz = Kazoo(zk.connect_string)
    try:
        zkc.until(lambda: len(kz.zk.get_children(path)) == 1
                  and _view(p) == {"leader": CID, "has_leadership": "1"},
                  "the Curator candidate alone and leading")
    finally:
        kz.close()
    return p, path


def _view(p):
    """Curator's own view: {"leader": getLeader's id, "has_leadership": 0/1}."""
    m = p.mark()
    p.send(f"view {CID}")
    _, words = p.wait_info(CID, "view", 10, since=m)
    return dict(w.split("=", 1) for w in words[3:])


def _curator_steps_back(p, leader_e, api):
    """The Curator candidate, leading, resigns: it goes to the back of the
    line and libzkelect's leader_e is elected."""
    m = p.mark()
    p.send(f"resign {CID}")
    p.wait_event(("RESIGNED",), CID, 10, since=m)
    api.wait_event(leader_e, {"ELECTED"}, 10)
    p.wait_event(("FOLLOWER",), CID, 10, since=m)


def test_a_transfer_past_a_real_curator_candidate_is_refused_and_changes_nothing(
        api, handles, zk, kz, cur, zkelect_bin, test_env):
    lib = api.lib
    lib.zkelect_last_error.restype = zkc.C.c_char_p
    p, path = cur
    a = _join(api, handles, zk, path, "a", first=("FOLLOWING",))
    _curator_steps_back(p, a, api)
    t = _join(api, handles, zk, path, "t", first=("FOLLOWING",))
    assert _line(kz, path) == ["a", CID, "t"]
    token = _token(lib, a)
    m = p.mark()

    began = time.monotonic()
    rc = lib.zkelect_transfer(a, b"t", 5000)
    took = time.monotonic() - began
    assert _err(lib, rc) == "ZKELECT_ENOTSUP"
    assert b"cannot step back" in lib.zkelect_last_error()
    assert took < 2.5, took     # refused up front, not after the 5 s

    # The same from outside, by the CLI: exit status 1, the code on stderr.
    began = time.monotonic()
    r = subprocess.run([str(zkelect_bin), "transfer", "--connect", zk.connect_string,
                        "--path", path, "--to", "t", "--timeout", "5000"],
                       env=test_env, capture_output=True, text=True, timeout=30)
    took = time.monotonic() - began
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "ZKELECT_ENOTSUP" in r.stderr, r.stderr
    assert r.stdout == "", r.stdout
    assert took < 4.5, took

    # Nothing changed: the same leader and term, the same line, no request
    # in P's data, no step back, and Curator still sees "a" leading.
    assert lib.zkelect_is_leader(a) == 1 and _token(lib, a) == token
    assert lib.zkelect_is_leader(t) == 0
    assert _line(kz, path) == ["a", CID, "t"]
    assert kz.get(path)[0] in (None, b""), "a request was left in P's data"
    for e in (a, t):
        assert all(ev["type"] not in ("DEPOSED", "STEPPED_BACK") for ev in _drain(api, e))
    assert p.events(since=m) == [], p.events(since=m)
    assert _view(p) == {"leader": "a", "has_leadership": "0"}


def test_a_preferred_follower_behind_a_curator_leader_is_warned_once(api, handles, zk, kz, cur):
    lib = api.lib
    p, path = cur
    m = p.mark()
    h = _join(api, handles, zk, path, "h", priority=9, first=("FOLLOWING",))
    warn, _ = api.wait_event(h, {"WARNING"}, 10)
    assert "cannot step back" in warn["message"], warn
    # Several hold-downs later: no second warning, no request, Curator leads.
    time.sleep(4 * HOLD / 1000)
    later = _drain(api, h)
    assert all(d["type"] != "WARNING" for d in later), later
    assert lib.zkelect_is_leader(h) == 0
    assert _line(kz, path) == [CID, "h"]
    assert kz.get(path)[0] in (None, b""), "a request was written"
    assert p.events(since=m) == [], p.events(since=m)
    assert _view(p) == {"leader": CID, "has_leadership": "1"}


def test_a_transfer_with_the_curator_candidate_behind_the_target_works(
        api, handles, zk, kz, cur):
    lib = api.lib
    p, path = cur
    a = _join(api, handles, zk, path, "a", first=("FOLLOWING",))
    b = _join(api, handles, zk, path, "b", first=("FOLLOWING",))
    x = _join(api, handles, zk, path, "x", first=("FOLLOWING",))
    _curator_steps_back(p, a, api)
    assert _line(kz, path) == ["a", "b", "x", CID]
    token = _token(lib, a)
    for e in (a, b, x):
        _drain(api, e)
    m = p.mark()
    rc = lib.zkelect_transfer(a, b"x", 10000)
    assert _err(lib, rc) == "OK"
    ev, _ = api.wait_event(x, {"ELECTED"}, 10)
    assert ev["token"] > token
    assert lib.zkelect_is_leader(a) == 0
    back, _ = api.wait_event(b, {"STEPPED_BACK"}, 10)
    assert back["id"] == "x", back
    zkc.until(lambda: _line(kz, path)[:2] == ["x", CID] and len(_line(kz, path)) == 4,
              "x first, the Curator candidate next, a and b at the back")
    # Curator never thought it led, and now names x as the leader.
    assert [e.kind for e in p.events(since=m)] == [], p.events(since=m)
    assert _view(p) == {"leader": "x", "has_leadership": "0"}

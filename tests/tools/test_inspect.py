"""`zkelect status` and `zkelect observe` agree with the C API."""

import json
import signal
import subprocess
import time

import pytest

from bed.toolutil import Candidates, CApi, Proc, parse_event
from bed.zkbed import free_port

SESSION_MS = 2000


@pytest.fixture
def capi(build_dir):
    return CApi(build_dir)


def _elect(zkelect_bin, test_env, zk, path, ids):
    c = Candidates(zkelect_bin, test_env, zk.connect_string, path, ids, SESSION_MS)
    connected = set()

    def conn(pid_, line):
        assert line is not None
        ev = parse_event(line)
        if ev and ev[0] == "CONNECTED":
            connected.add(ev[1])
        return len(connected) == len(ids)
    c.wait(conn, 30, "all connected")
    # Join one at a time, so the queue order is the join order.
    for i in ids:
        c.procs[i].send("join")
        c.wait(lambda p, l, i=i: l and (parse_event(l) or ("", ""))[1] == i
               and parse_event(l)[0] in ("LEADER", "FOLLOWER"), 20, f"{i} enrolled")
    return c


def _status(zkelect_bin, env, hosts, path, *extra):
    return subprocess.run([str(zkelect_bin), "status", "--connect", hosts, "--path", path, *extra],
                          env=env, capture_output=True, text=True, timeout=30)


def test_status_text_and_json_match_c_api(zk, zk_path, zkelect_bin, test_env, capi):
    ids = ["7", "3", "5"]
    c = _elect(zkelect_bin, test_env, zk, zk_path, ids)
    try:
        api = capi.participants(zk.connect_string, zk_path)
        assert [p[0] for p in api] == ids
        leader_token = int([e for e in c.log if e[0] == "LEADER"][-1][3]["token"])
        assert api[0][1] == leader_token

        r = _status(zkelect_bin, test_env, zk.connect_string, zk_path, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["path"] == zk_path and doc["count"] == 3
        # The shared ensemble has no dynamic configuration: the hosts in use
        # are the connect string as given.
        assert doc["hosts"] == zk.connect_string
        assert doc["leader"]["id"] == "7" and doc["leader"]["token"] == leader_token
        assert doc["leader"]["node"] == api[0][2]
        assert doc["leader"]["age_ms"] >= 0
        assert [(p["id"], p["token"], p["node"], p["ctime_ms"]) for p in doc["participants"]] == api
        assert [p["leader"] for p in doc["participants"]] == [True, False, False]
        assert [p["priority"] for p in doc["participants"]] == [0, 0, 0]
        assert [p["position"] for p in doc["participants"]] == [0, 1, 2]

        r = _status(zkelect_bin, test_env, zk.connect_string, zk_path)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].startswith(f"{zk_path}: 3 candidates")
        assert lines[1].startswith(f"leader: 7  token {leader_token}")
        rows = [l.split() for l in lines if l[:1].isdigit()]
        # POS counts as the JSON's "position" and zkelect_queue_position do:
        # from 0, the leader.
        assert [(int(x[0]), x[1], x[2], int(x[3]), int(x[5]), x[6]) for x in rows] == [
            (p["position"], "leader" if p["leader"] else "queued", p["id"], p["token"],
             p["priority"], p["node"])
            for p in doc["participants"]]
        assert [int(x[0]) for x in rows] == [0, 1, 2]
        assert lines[-1] == f"hosts in use: {zk.connect_string}"

        # After the leader resigns, status follows the C API again.
        c.procs["7"].send("resign 7")
        seen = set()

        def handover(pid_, line):
            ev = parse_event(line or "")
            if ev and ev[0] == "LEADER":
                seen.add("leader")
            if ev and ev[:2] == ("FOLLOWER", "7"):
                seen.add("rejoined")
            return seen == {"leader", "rejoined"}
        # The two lines come from two processes, in either order.
        c.wait(handover, 20, "a new leader and 7 re-joined")
        api = capi.participants(zk.connect_string, zk_path)
        doc = json.loads(_status(zkelect_bin, test_env, zk.connect_string, zk_path,
                                 "--json").stdout)
        assert [p["id"] for p in doc["participants"]] == [p[0] for p in api] == ["3", "5", "7"]
        assert doc["leader"]["token"] == api[0][1] > leader_token
    finally:
        c.close()


def test_status_without_candidates(zk, zk_path, zkelect_bin, test_env, capi):
    c = _elect(zkelect_bin, test_env, zk, zk_path, ["1"])
    c.send_all("quit")
    assert c.procs["1"].proc.wait(10) == 0
    c.close()
    assert capi.participants(zk.connect_string, zk_path) == []
    r = _status(zkelect_bin, test_env, zk.connect_string, zk_path, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["leader"] is None and doc["participants"] == [] and doc["count"] == 0
    r = _status(zkelect_bin, test_env, zk.connect_string, zk_path)
    assert r.returncode == 0 and "no leader" in r.stdout


@pytest.mark.parametrize("json_mode", [False, True])
def test_observe_follows_leader_changes(zk, zk_path, zkelect_bin, test_env, capi, json_mode):
    c = _elect(zkelect_bin, test_env, zk, zk_path, ["1", "2"])
    obs = Proc([zkelect_bin, "observe", "--connect", zk.connect_string, "--path", zk_path]
               + (["--json"] if json_mode else []), test_env, stdin=False)

    def parse(line):
        if json_mode:
            d = json.loads(line)
            return d["leader"], d["token"]
        f = line.split()
        assert f[1] in ("LEADER", "NONE")
        return (f[2], int(f[3].split("=")[1])) if f[1] == "LEADER" else (None, 0)
    try:
        api = capi.participants(zk.connect_string, zk_path)
        first = parse(obs.wait_line(lambda l: True, 20, "first observation"))
        assert first == (api[0][0], api[0][1]) == ("1", api[0][1])

        c.procs["1"].send("resign 1")
        ev = c.wait(lambda p, l: l and (parse_event(l) or ("",))[0] == "LEADER"
                    and parse_event(l), 20, "new leader")
        second = parse(obs.wait_line(lambda l: True, 20, "second observation"))
        assert second == ("2", int(ev[3]["token"]))
        assert capi.participants(zk.connect_string, zk_path)[0][:2] == second

        # Everyone leaves: the observer reports no leader.
        c.send_all("quit")
        for p in c.procs.values():
            assert p.proc.wait(10) == 0
        # 1 re-joined after its resign and may briefly lead before it quits.
        last = parse(obs.wait_line(lambda l: parse(l)[0] is None, 20, "no leader"))
        assert last == (None, 0)

        obs.proc.send_signal(signal.SIGINT)
        assert obs.wait(10) == 0
    finally:
        obs.kill()
        c.close()


def test_observe_count(zk, zk_path, zkelect_bin, test_env):
    c = _elect(zkelect_bin, test_env, zk, zk_path, ["4"])
    try:
        r = subprocess.run([str(zkelect_bin), "observe", "--connect", zk.connect_string,
                            "--path", zk_path, "--count", "1"],
                           env=test_env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split()[1:3] == ["LEADER", "4"]
    finally:
        c.close()


@pytest.mark.parametrize("sub,args", [
    ("status", []),
    ("status", ["--connect", "H"]),
    ("status", ["--connect", "H", "--path", "relative"]),
    ("status", ["--connect", "H", "--path", "/x/"]),
    ("status", ["--connect", "H", "--path", "/x", "--count", "3"]),
    ("status", ["--connect", "H", "--path", "/x", "extra"]),
    ("observe", ["--path", "/x"]),
    ("observe", ["--connect", "H", "--path", "/x", "--count", "0"]),
    ("observe", ["--connect", "H", "--path", "/x", "--jsn"]),
    ("observe", ["--connect", "H", "--path", "no/slash"]),
])
def test_inspect_bad_arguments_exit_2(zk, zkelect_bin, test_env, sub, args):
    env = dict(test_env)
    env.pop("ZKELECT_CONNECT", None)
    args = [zk.connect_string if a == "H" else a for a in args]
    r = subprocess.run([str(zkelect_bin), sub, *args], env=env, capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"usage: zkelect {sub}" in r.stderr


@pytest.mark.parametrize("sub", ["status", "observe"])
def test_inspect_unreachable_exit_3(zkelect_bin, test_env, sub):
    t = time.monotonic()
    r = subprocess.run([str(zkelect_bin), sub, "--connect", f"127.0.0.1:{free_port()}",
                        "--path", "/x", "--connect-timeout-ms", "1500"],
                       env=test_env, capture_output=True, text=True, timeout=20)
    assert r.returncode == 3, r.stderr
    assert time.monotonic() - t < 10
    assert r.stderr.count("\n") == 1


@pytest.mark.parametrize("how", [["status"], ["status", "--json"], ["observe", "--prometheus"]])
def test_inspect_denied_election_exits_5(zk, zk_path, zkelect_bin, test_env, how):
    """An election the reader may not list (its ACL lets only one digest user
    read): "permission denied" is status 5 in every command, as documented."""
    from kazoo.client import KazooClient
    from kazoo.security import make_digest_acl
    kz = KazooClient(hosts=zk.connect_string)
    kz.start(timeout=15)
    try:
        kz.ensure_path(zk_path.rsplit("/", 1)[0])
        kz.create(zk_path, b"", acl=[make_digest_acl("owner", "secret", all=True)])
        r = subprocess.run([str(zkelect_bin), how[0], "--connect", zk.connect_string, "--path",
                            zk_path, *how[1:]],
                           env=test_env, capture_output=True, text=True, timeout=30)
    finally:
        kz.stop()
        kz.close()
    assert r.returncode == 5, (r.returncode, r.stderr)
    assert "ZKELECT_EAUTH" in r.stderr and r.stdout == "", (r.stderr, r.stdout)

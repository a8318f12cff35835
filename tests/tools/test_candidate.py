"""`zkelect candidate`: the participant line protocol (docs/design.md)."""

import subprocess
import time

import pytest

from bed.toolutil import Candidates, CApi, Proc, parse_event
from bed.zkbed import free_port

SESSION_MS = 2000


@pytest.fixture
def capi(build_dir):
    return CApi(build_dir)


def _connected_all(c, ids, timeout=30):
    seen, infos = set(), {}

    def pred(pid_, line):
        assert line is not None, f"candidate {pid_} exited early: {c.procs[pid_].err}"
        ev = parse_event(line)
        if ev and ev[0] == "CONNECTED":
            seen.add(ev[1])
        if line.startswith("INFO ") and "negotiated_session_timeout_ms=" in line:
            infos[line.split()[1]] = int(line.split("=", 1)[1])
        return len(seen) == len(ids) and len(infos) == len(ids)
    c.wait(pred, timeout, "CONNECTED and INFO negotiated_session_timeout_ms from all")
    return infos


def _settled(c, n):
    def pred(pid_, line):
        assert line is not None, f"candidate {pid_} exited: {c.procs[pid_].err}"
        ks = list(c.state.values())
        return len(ks) == n and ks.count("LEADER") == 1 and ks.count("FOLLOWER") == n - 1
    return pred


def test_protocol_join_resign_quit(zk, zk_path, zkelect_bin, test_env, capi):
    ids = ["1", "2", "3"]
    c = Candidates(zkelect_bin, test_env, zk.connect_string, zk_path, ids, SESSION_MS)
    try:
        infos = _connected_all(c, ids)
        assert all(v > 0 for v in infos.values())
        # Nothing enters before join: no node at the path, and no state lines.
        assert not c.leaders() and set(c.state.values()) == {"CONNECTED"}
        assert not capi.participants(zk.connect_string, zk_path)

        c.send_all("join")
        c.wait(_settled(c, 3), 20, "one LEADER and two FOLLOWERs")
        leader = c.leaders()[0]
        first_token = int([e for e in c.log if e[0] == "LEADER"][-1][3]["token"])
        queue_ids = [p[0] for p in capi.participants(zk.connect_string, zk_path)]
        assert sorted(queue_ids) == ids and queue_ids[0] == leader
        assert [p[1] for p in capi.participants(zk.connect_string, zk_path)][0] == first_token

        # Resign hands over in queue order, twice; tokens strictly increase.
        tokens = [first_token]
        for _ in range(2):
            order = [p[0] for p in capi.participants(zk.connect_string, zk_path)]
            old, expect = order[0], order[1]
            got = {}
            c.procs[old].send(f"resign {old}")

            def handover(pid_, line, old=old, got=got):
                assert line is not None
                ev = parse_event(line)
                if not ev:
                    return False
                kind, who, ns, extra = ev
                if who == old and kind == "RESIGNED":
                    got["resigned"] = ns
                if who != old and kind == "LEADER":
                    got["leader"], got["ns"], got["token"] = who, ns, int(extra["token"])
                if who == old and kind == "FOLLOWER" and "resigned" in got:
                    got["rejoined"] = ns
                return "leader" in got and "rejoined" in got
            c.wait(handover, 20, f"handover after resign of {old}")
            assert got["leader"] == expect, f"queue {order}, new leader {got['leader']}"
            assert got["resigned"] <= got["ns"]
            assert got["token"] > tokens[-1]
            tokens.append(got["token"])
            assert len(c.leaders()) == 1
            # The resigned one is now at the back.
            order2 = [p[0] for p in capi.participants(zk.connect_string, zk_path)]
            assert order2 == order[1:] + [old]

        # transfer to the last of three: the one between steps back, the
        # leader's term ends (RESIGNED reason=transferred) before the target
        # leads, the outcome comes as an INFO line, the old leader queues.
        order = [p[0] for p in capi.participants(zk.connect_string, zk_path)]
        old, target = order[0], order[2]
        got = {}
        c.procs[old].send(f"transfer {old} {target}")

        def handed(pid_, line):
            assert line is not None
            ev = parse_event(line)
            if ev:
                kind, who, ns, extra = ev
                if who == old and kind == "RESIGNED":
                    got["resigned"], got["reason"] = ns, extra.get("reason")
                if who != old and kind == "LEADER":
                    got["leader"], got["ns"], got["token"] = who, ns, int(extra["token"])
                if who == old and kind == "FOLLOWER" and "resigned" in got:
                    got["rejoined"] = ns
            elif line.startswith(f"INFO {old} transfer "):
                got["code"] = line.split("code=", 1)[1]
            return {"leader", "rejoined", "code"} <= got.keys()
        c.wait(handed, 20, f"transfer from {old} to {target}")
        assert got["code"] == "OK" and got["leader"] == target and got["reason"] == "transferred"
        assert got["resigned"] <= got["ns"] and got["token"] > tokens[-1]
        after = [p[0] for p in capi.participants(zk.connect_string, zk_path)]
        assert after[0] == target and sorted(after[1:]) == sorted([old, order[1]])
        follower = [i for i in ids if c.state[i] == "FOLLOWER"][0]
        c.procs[follower].send(f"transfer {follower} {old}")
        c.wait(lambda p, l: p == follower and l == f"INFO {follower} transfer_not_leader", 10,
               "transfer_not_leader")

        # resign of a follower does nothing.
        follower = [i for i in ids if c.state[i] == "FOLLOWER"][0]
        c.procs[follower].send(f"resign {follower}")
        c.procs[follower].send(f"status {follower}")
        c.wait(lambda p, l: p == follower and l and l.startswith(f"INFO {follower} status"),
               10, "status line")
        assert c.state[follower] == "FOLLOWER"

        # quit: leader prints RESIGNED, everyone exits 0 within 10 s, nodes gone.
        leader = c.leaders()[0]
        t = time.monotonic()
        c.send_all("quit")
        for pid_, p in c.procs.items():
            assert p.proc.wait(10) == 0, p.err
        assert time.monotonic() - t < 10
        c.wait(lambda p, l: l is None and p == leader, 5, "leader stdout closed")
        assert c.state[leader] == "RESIGNED"
        assert not capi.participants(zk.connect_string, zk_path)
    finally:
        c.close()


def test_shared_session_and_eof(zk, zk_path, zkelect_bin, test_env, capi):
    p = Proc([zkelect_bin, "candidate", "--connect", zk.connect_string, "--path", zk_path,
              "--first-id", 10, "--count", 3, "--session-timeout-ms", SESSION_MS,
              "--shared-session"], test_env)
    try:
        for i in (10, 11, 12):
            p.wait_line(lambda l, i=i: l.startswith(f"EVENT CONNECTED {i} "), 20, f"CONNECTED {i}")
        p.send("join")
        states = {}

        def settled(line):
            ev = parse_event(line)
            if ev:
                states[ev[1]] = ev[0]
            return sorted(states.values()) == ["FOLLOWER", "FOLLOWER", "LEADER"]
        p.wait_line(settled, 20, "one leader, two followers")
        leader = [i for i, k in states.items() if k == "LEADER"][0]
        ps = capi.participants(zk.connect_string, zk_path)
        assert [x[0] for x in ps][0] == leader and sorted(x[0] for x in ps) == ["10", "11", "12"]
        # End of input means quit.
        p.proc.stdin.close()
        p.wait_line(lambda l: l.startswith(f"EVENT RESIGNED {leader} "), 10, "RESIGNED at EOF")
        assert p.wait(10) == 0
        assert not capi.participants(zk.connect_string, zk_path)
    finally:
        p.kill()


def test_sigkill_of_leader_process_fails_over(zk, zk_path, zkelect_bin, test_env):
    c = Candidates(zkelect_bin, test_env, zk.connect_string, zk_path, ["1", "2"], SESSION_MS)
    try:
        infos = _connected_all(c, ["1", "2"])
        c.send_all("join")
        c.wait(_settled(c, 2), 20, "settled")
        leader = c.leaders()[0]
        other = "2" if leader == "1" else "1"
        t_kill = time.time_ns()
        c.procs[leader].kill()
        ev = c.wait(lambda p, l: p == other and l and (parse_event(l) or ("",))[0] == "LEADER"
                    and parse_event(l), 15, "new leader after SIGKILL")
        latency_ms = (ev[2] - t_kill) / 1e6
        # Replaced once ZooKeeper expires the session: within T plus margin.
        assert latency_ms < infos[other] + 1500, latency_ms
    finally:
        c.close()


@pytest.mark.parametrize("args", [
    [],
    ["--path", "/x", "--first-id", "1", "--count", "1"],                        # no --connect
    ["--connect", "H", "--first-id", "1", "--count", "1"],                      # no --path
    ["--connect", "H", "--path", "/x", "--count", "1"],                         # no --first-id
    ["--connect", "H", "--path", "/x", "--first-id", "one", "--count", "1"],
    ["--connect", "H", "--path", "/x", "--first-id", "1", "--count", "0"],
    ["--connect", "H", "--path", "/x", "--first-id", "1", "--count", "1",
     "--session-timeout-ms", "soon"],
    ["--connect", "H", "--path", "/x", "--first-id", "1", "--count", "1", "--bogus", "1"],
    ["--connect", "H", "--path", "/x", "--first-id", "1", "--count", "1", "stray"],
    ["--connect", "H", "--path", "relative", "--first-id", "1", "--count", "1"],
    ["--connect", "H", "--path", "/a//b", "--first-id", "1", "--count", "1"],
    ["--connect", "H", "--path", "/a/", "--first-id", "1", "--count", "1"],
])
def test_bad_arguments_exit_2(zk, zkelect_bin, test_env, args):
    args = [zk.connect_string if a == "H" else a for a in args]
    env = dict(test_env)
    env.pop("ZKELECT_CONNECT", None)
    r = subprocess.run([str(zkelect_bin), "candidate", *args], env=env, capture_output=True,
                       text=True, timeout=20, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "usage: zkelect candidate" in r.stderr
    assert "EVENT" not in r.stdout


def test_unreachable_ensemble_exit_3(zkelect_bin, test_env):
    port = free_port()  # nothing listens there
    t = time.monotonic()
    r = subprocess.run([str(zkelect_bin), "candidate", "--connect", f"127.0.0.1:{port}",
                        "--path", "/x", "--first-id", "1", "--count", "1",
                        "--session-timeout-ms", "2000", "--connect-timeout-ms", "1500"],
                       env=test_env, capture_output=True, text=True, timeout=20,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert time.monotonic() - t < 10
    assert len(r.stderr.strip().splitlines()) == 1 and "connect" in r.stderr
    assert "EVENT CONNECTED" not in r.stdout


def test_help(zkelect_bin, test_env):
    for sub in ("candidate", "run", "status", "observe"):
        r = subprocess.run([str(zkelect_bin), sub, "--help"], env=test_env, capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 0 and f"usage: zkelect {sub}" in r.stdout, (sub, r)
    r = subprocess.run([str(zkelect_bin)], env=test_env, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "usage: zkelect" in r.stderr
    r = subprocess.run([str(zkelect_bin), "elect-me"], env=test_env, capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 2 and "unknown command" in r.stderr


def test_overlong_line_is_dropped_whole_and_words_are_echoed_escaped(zk, zk_path, zkelect_bin,
                                                                      test_env):
    """A command line longer than the protocol keeps is dropped, and said so:
    no part of it runs. (The tail of such a line used to pass for a command of
    its own, so 4095 bytes and then `quit` quit.) Words echoed back cannot
    carry control bytes into the output."""
    p = Proc([zkelect_bin, "candidate", "--connect", zk.connect_string, "--path", zk_path,
              "--first-id", 1, "--count", 1, "--session-timeout-ms", SESSION_MS], test_env)
    try:
        p.wait_line(lambda l: l.startswith("EVENT CONNECTED 1 "), 20, "CONNECTED 1")
        p.send("x" * 4095 + "quit")
        p.send("bogus\x1b[2Jword")
        p.send("status \x07nobody")
        p.send("status 1")
        p.wait_line(lambda l: l == "INFO - line_too_long max=4094", 10, "line_too_long")
        p.wait_line(lambda l: l == "INFO - unknown_command bogus\\x1b[2Jword", 10,
                    "the unknown word, escaped")
        p.wait_line(lambda l: l == "INFO \\x07nobody unknown_participant", 10,
                    "the unknown id, escaped")
        p.wait_line(lambda l: l.startswith("INFO 1 status state=idle "), 10,
                    "still running after the long line")
        p.send("quit")
        assert p.wait(10) == 0
    finally:
        p.kill()

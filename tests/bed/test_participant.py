"""tests/bed/participant.py, the driver of the participant line protocol, on
small shell programs that print protocol lines (no ZooKeeper needed: what is
under test is the driver's reading, waiting and process handling)."""

import signal
import sys
import time

import pytest

from bed.participant import EOF, Hub, Participant, candidate_argv, parse_event, protocol_args


def sh(script, **kw):
    # --first-id/--count after the script only name the ids the driver expects.
    return Participant(["/bin/sh", "-c", script, "sh", "--first-id", "7", "--count", "2"], **kw)


def test_parse_event_takes_only_wellformed_event_lines():
    ev = parse_event("EVENT LEADER 3 1700000000000000000 token=42 reason=x")
    assert (ev.ns, ev.kind, ev.id, ev.kv) == (1700000000000000000, "LEADER", "3",
                                             {"token": "42", "reason": "x"})
    assert parse_event("EVENT LEADER 3 notanumber") is None
    assert parse_event("INFO 3 status is_leader=1") is None
    assert parse_event("EVENT LEADER 3") is None


def test_protocol_options_in_the_protocols_order():
    assert protocol_args("h:1", "/p", 4, 2, 3000) == [
        "--connect", "h:1", "--path", "/p", "--first-id", "4", "--count", "2",
        "--session-timeout-ms", "3000"]
    argv = candidate_argv("/bin/zkelect", "h:1", "/p", 4, extra=["--shared-session"])
    assert argv[:2] == ["/bin/zkelect", "candidate"] and argv[-1] == "--shared-session"


def test_events_waits_and_status():
    p = sh('echo "EVENT CONNECTED 7 100"; echo "INFO 7 negotiated_session_timeout_ms=2000";'
           'read cmd; echo "EVENT LEADER 7 200 token=5";'
           'read cmd; echo "INFO 7 status state=leader is_leader=1 token=5"; read cmd')
    try:
        assert p.ids == ["7", "8"]
        assert p.wait_event("CONNECTED", "7", 5) == 100
        assert p.info("7", "negotiated_session_timeout_ms") == "2000"
        m = p.mark()
        assert p.send("join")
        ev = p.wait_for_event(("LEADER", "FOLLOWER"), "7", 5, since=m)
        assert (ev.kind, ev.kv["token"]) == ("LEADER", "5") and ev.rx > 0
        _, _, leading, state = p.status("7")
        assert (leading, state) == (1, "leader")
        assert [e.kind for e in p.events(pid="7")] == ["CONNECTED", "LEADER"]
        assert p.quit(5) == 0
    finally:
        p.kill()


def test_a_wait_ends_at_its_deadline_and_names_what_it_waited_for():
    p = sh("sleep 30")
    try:
        t = time.monotonic()
        with pytest.raises(AssertionError, match="EVENT LEADER 7"):
            p.wait_event("LEADER", "7", 0.3)
        assert time.monotonic() - t < 5
    finally:
        p.kill()
    assert p.proc.poll() == -signal.SIGKILL


def test_a_wait_ends_when_the_process_does():
    p = sh('echo "EVENT CONNECTED 7 1"; exit 3')
    with pytest.raises(AssertionError, match="exited"):
        p.wait_event("LEADER", "7", 10)
    assert p.close() == 3


def test_hub_merges_processes_in_arrival_order_and_tracks_state():
    hub = Hub()
    a = Participant(["/bin/sh", "-c", 'echo "EVENT FOLLOWER 1 10"; read x; echo "EVENT LEADER 1 30"',
                     "sh", "--first-id", "1", "--count", "1"], hub=hub)
    b = Participant(["/bin/sh", "-c", 'read x; echo "EVENT RESIGNED 2 20"',
                     "sh", "--first-id", "2", "--count", "1"], hub=hub)
    try:
        hub.wait(lambda ln: ln.words[:2] == ["EVENT", "FOLLOWER"], 5, "1 follows")
        b.send("go")
        got = hub.wait(lambda ln: ln.src is b and ln.words != EOF and ln.words, 5, "2's line")
        assert got[1] == "RESIGNED"
        a.send("go")
        hub.wait(lambda ln: hub.state.get("1") == "LEADER", 5, "1 leads")
        assert hub.leaders() == ["1"] and hub.state["2"] == "RESIGNED"
        # The end of each output is a line of the merged stream too.
        assert a.close() == 0 and b.close() == 0
        with hub.cv:
            ends = [ln.src for ln in hub.lines if ln.words == EOF]
        assert sorted(p.ids[0] for p in ends) == ["1", "2"]
        # Lines a wait was offered are consumed: offered again to nobody.
        rest = []
        with pytest.raises(AssertionError, match="timed out"):
            hub.wait(lambda ln: rest.append(ln) or len(rest) > len(hub.lines), 0.3, "nothing new")
        with hub.cv:
            assert len(rest) < len(hub.lines)
    finally:
        a.close()
        b.close()


def test_sigkill_is_recorded_and_reaped():
    p = sh("sleep 30")
    t = p.sigkill()
    assert p.killed and p.kill_ns == t and p.proc.poll() == -signal.SIGKILL
    with pytest.raises(AssertionError, match="exited"):
        p.wait_line(lambda w: False, 5, what="nothing")
    assert p.exited()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

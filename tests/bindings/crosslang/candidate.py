"""The Python candidate of the cross-language test (tests/bindings/test_crosslang.py),
on the zkelect package (bindings/python). Same request/response protocol as
bindings/rust/zkelect/examples/candidate.rs:

    python3 candidate.py HOSTS PATH ID [KEY=VALUE...]   ->  READY
    join | resign | await MS | leader? | who | events MS | counters | quit
"""

import sys

import zkelect


def describe(ev):
    if ev.kind == "ELECTED":
        return f"EVENT ELECTED {ev.token}"
    if ev.kind == "DEPOSED":
        return f"EVENT DEPOSED {ev.reason}"
    if ev.kind == "FOLLOWING":
        return f"EVENT FOLLOWING {ev.id}"
    if ev.kind == "WARNING":
        return f"EVENT WARNING {ev.message}"
    return f"EVENT {ev.kind}"


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: candidate.py HOSTS PATH ID [KEY=VALUE...]")
    hosts, path, pid = sys.argv[1:4]
    keys = dict(kv.split("=", 1) for kv in sys.argv[4:])
    sys.stdout.reconfigure(line_buffering=True, encoding="utf-8")
    with zkelect.connect(hosts, session_timeout_ms=6000, **keys) as client:
        client.await_connected(30)
        with client.election(path, pid) as e:
            print("READY")

            def await_(ms):
                try:
                    e.await_leader(ms / 1000)
                except zkelect.TimedOut:
                    return "TIMEOUT"
                return f"LEADER {e.fencing_token()}"

            def events(ms):
                lines = []
                ev = e.next_event(ms / 1000)
                while ev is not None:
                    lines.append(describe(ev))
                    ev = e.next_event(0)
                return "\n".join(lines + ["END"])

            commands = {
                "join": lambda ms: e.volunteer() or "OK",
                "resign": lambda ms: e.resign() or "OK",
                "await": await_,
                "leader?": lambda ms: "IS 1" if e.is_leader() else "IS 0",
                "who": lambda ms: f"LEADS {e.leader_id()}",
                "counters": lambda ms: " ".join(
                    ["COUNTERS"] + [f"{k}={v}" for k, v in sorted(client.counters().items())]),
                "events": events,
            }
            for line in sys.stdin:
                words = line.split()
                if not words:
                    continue
                if words[0] == "quit":
                    break
                f = commands.get(words[0])
                if f is None:
                    print(f"ERR unknown command {words[0]}")
                    continue
                try:
                    print(f(int(words[1]) if len(words) > 1 else 0))
                except zkelect.Error as err:
                    print(f"ERR {err}")
    print("BYE")


if __name__ == "__main__":
    main()

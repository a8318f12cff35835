"""One process of a balanced group, for bed/balance.py (the test
tests/integration/test_balance.py and the bench's balance part): a client with
balance.group set, holding one candidacy on each of E election paths
(PREFIX-0 .. PREFIX-(E-1), the same in every process), driven by lines on
stdin and answering on stdout:

  READY <session id>            every candidacy volunteered (printed once)
  COUNT -> COUNT <leading> <moves>   its candidacies that lead now, and
                                     its BALANCE_MOVES counter
  SPANS -> SPANS <json>         for each election it led, the spans of
                                CLOCK_BOOTTIME (ns) in which a sampler saw
                                is_leader() == 1 within one term:
                                [token, first seen, last seen]
  ROUND -> ROUND <rounds> <mean ms> <max ms>   the sampler's rounds so far:
                                how coarse its spans are
  SHUTDOWN -> BYE <code>        zkelect_client_shutdown, the sampler still
              SPANS <json>      running (a graceful leave's last spans are
                                seen), then the sampler stopped, the final
                                spans, every destroy

A thread samples is_leader() of every candidacy, round after round. A span
runs from a round that saw 1 to the last round that saw 1 in the same term
(the same fencing token) before one that did not, so it lies inside the
true leadership: spans of two processes that overlap prove two leaders at
once."""

import argparse
import ctypes as C
import json
import sys
import threading
import time

from bed import zkc

COUNTER_BALANCE_MOVES = 15


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--session-ms", type=int, default=4000)
    ap.add_argument("--moves-max", type=int, default=128)
    a = ap.parse_args()
    api = zkc.Api(zkc.build_dir())
    lib = api.lib
    client = api.client(zk_hosts=a.hosts, zk_session_timeout_ms=a.session_ms,
                        balance_group=a.group, balance_moves_max=a.moves_max)
    assert lib.zkelect_client_await_connected(client, 15000) == 0
    els = [api.election(client, f"{a.prefix}-{i}", a.id) for i in range(a.count)]
    for e in els:
        assert lib.zkelect_volunteer(e) == 0
    print("READY %d" % lib.zkelect_client_session_id(client), flush=True)

    spans = {}        # index -> [[first, last], ...]
    open_at = {}      # index -> [first, last] of the span running
    lock = threading.Lock()
    stop = threading.Event()

    t1, t2 = C.c_int64(), C.c_int64()

    took = [0, 0, 0]  # rounds, their sum (ns), the longest (ns)

    def sample():
        rounds = 0
        while not stop.is_set() and rounds < 10_000_000:
            rounds += 1
            r0 = time.monotonic_ns()
            for i, e in enumerate(els):
                # The term's token on both sides of the answer: a span is
                # one term's, never two terms' with a gap between them.
                ok1 = lib.zkelect_fencing_token(e, C.byref(t1)) == 0
                v = lib.zkelect_is_leader(e)
                now = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
                ok2 = lib.zkelect_fencing_token(e, C.byref(t2)) == 0
                one = v == 1 and ok1 and ok2 and t1.value == t2.value
                with lock:
                    s = open_at.get(i)
                    if s is not None and (not one or s[0] != t1.value):
                        spans.setdefault(i, []).append(s)
                        del open_at[i]
                        s = None
                    if one:
                        if s is None:
                            open_at[i] = [t1.value, now, now]
                        else:
                            s[2] = now
            d = time.monotonic_ns() - r0
            took[0], took[1], took[2] = took[0] + 1, took[1] + d, max(took[2], d)
            # A quarter of a core at most: four samplers of 3,000 handles
            # each took a core apiece, and the 2-core machine's load, not
            # the balancer, set the pace of every move measured.
            time.sleep(max(0.001, 3 * d / 1e9))

    def all_spans():
        with lock:
            out = {i: list(v) for i, v in spans.items()}
            for i, s in open_at.items():
                out.setdefault(i, []).append(list(s))
        return json.dumps(out)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "COUNT":
            n = sum(lib.zkelect_is_leader(e) for e in els)
            v = C.c_uint64()
            lib.zkelect_client_counter(client, COUNTER_BALANCE_MOVES, C.byref(v))
            print("COUNT %d %d" % (n, v.value), flush=True)
        elif cmd == "SPANS":
            print("SPANS " + all_spans(), flush=True)
        elif cmd == "ROUND":
            n = max(1, took[0])
            print("ROUND %d %.3f %.3f" % (took[0], took[1] / n / 1e6, took[2] / 1e6), flush=True)
        elif cmd == "SHUTDOWN":
            # The sampler runs on through the shutdown (is_leader() is
            # any thread's, the handles live until destroyed): the spans
            # end where the leaderships did, not where it was asked.
            rc = lib.zkelect_client_shutdown(client, 10000)
            stop.set()
            t.join(10)
            print("BYE %d" % rc, flush=True)
            print("SPANS " + all_spans(), flush=True)
            for e in els:
                lib.zkelect_election_destroy(e)
            lib.zkelect_client_destroy(client)
            return
    stop.set()


if __name__ == "__main__":
    main()

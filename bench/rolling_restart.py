#!/usr/bin/python3
"""The operations group of ./dev bench (issue 32): a rolling restart of a
3-server ensemble under an election of one participant program.

  bench/rolling_restart.py --impl-cmd CMD --name NAME --json OUT
                           [--timeouts 6000,2000] [--repeats 2] [--down 2]
                           [--upgrade-to 3.9]

Starts its own ensemble (bench/run.py's start_ensemble: the bench's
configuration; the servers are restarted, so not the shared one), then for
each session timeout T and each repeat:

  1. 3 participants (one process and one session each) on a fresh path,
     `join`, until 1 LEADER + 2 FOLLOWER (election_bench.Election.start);
  2. every server restarted in turn, the followers first and the quorum's
     leader last: stopped (SIGTERM), down --down seconds, started again,
     the next only once the quorum serves again (zkbed's wait_quorum);
  3. T more seconds, then the participants quit.

Meanwhile a probe thread opens a bare session every PROBE_EVERY_S on the
first server that takes one (zkbed's wire protocol: connect, exists,
closeSession), so the quorum's own unavailability is measured in the same
run: per restart, its longest outage, a stretch of failed probes (every
server refused or dropped the session) from the end of the last success
before it (or the stop, if later) to the end of the first success after it;
0 when no probe failed; within one probe interval. The exists round trip of the probes is the round trip of the
targets.

From the participants' own lines, between the first stop and the end:
LOST lines of the first leader, LEADER lines of any other participant
(leadership changes), the gaps with no participant leading (the longest in
ms), and overlapping leadership (two ids leading at once by their stamps;
election_bench's rule, cut at the end of the window).

--upgrade-to V: a rolling upgrade instead: a fresh ensemble of Debian's
3.8 for each run, each server started again as release V (bed/zkdist.py
fetches it), so the ensemble runs mixed versions on the way.

Writes one JSON document that bench/run.py reads ({"impl": NAME, "results":
{"operations" | "upgrade": [run, ...]}}).
"""
import argparse
import json
import os
import shlex
import signal
import struct
import sys
import threading
import time
import types

from election_bench import NOT_LEADING, BenchError, Election, ms

try:
    from bed import zkbed, zkdist
except ImportError as e:
    sys.exit("rolling_restart: %s: run it with tests/ on PYTHONPATH (./dev bench does)" % e)

PROBE_EVERY_S = 0.025
PROBE_TIMEOUT_S = 0.5


def probe_once(port):
    """A bare session on one server: (ok, exists round trip in ns)."""
    with zkbed._connect(port, PROBE_TIMEOUT_S) as s:
        s.settimeout(PROBE_TIMEOUT_S)
        zkbed._send_frame(s, struct.pack(">iqiqi16s?", 0, 0, 4000, 0, 16, b"\0" * 16, False))
        _proto, neg, sid = struct.unpack(">iiq", zkbed._recv_frame(s)[:16])
        if sid == 0 or neg <= 0:
            return False, None
        path = b"/zookeeper"
        t = time.monotonic_ns()
        zkbed._send_frame(s, struct.pack(">iii", 1, 3, len(path)) + path + b"\0")
        xid, _z, err = struct.unpack(">iqi", zkbed._recv_frame(s)[:16])
        rt = time.monotonic_ns() - t
        if xid != 1 or err != 0:
            return False, None
        zkbed._send_frame(s, struct.pack(">ii", 2, -11))
        zkbed._recv_frame(s)
        return True, rt


class Prober(threading.Thread):
    """Probes until stopped (bounded by max_s): [(start_ns, end_ns, ok)]
    on CLOCK_REALTIME, as the participants stamp their events."""

    def __init__(self, ports, max_s):
        super().__init__(daemon=True, name="quorum-probe")
        self.ports, self.max_s = list(ports), max_s
        self.samples, self.rts = [], []
        self.halt = threading.Event()

    def run(self):
        deadline = time.monotonic() + self.max_s
        k = 0
        while not self.halt.is_set() and time.monotonic() < deadline:
            t0 = time.time_ns()
            ok = False
            for j in range(len(self.ports)):
                port = self.ports[(k + j) % len(self.ports)]
                try:
                    ok, rt = probe_once(port)
                except (OSError, struct.error, ConnectionError):
                    ok = False
                if ok:
                    self.rts.append(rt)
                    break
            k += 1
            self.samples.append((t0, time.time_ns(), ok))
            self.halt.wait(PROBE_EVERY_S)

    def outages(self, t_stop, t_back):
        """The stretches of failed probes that began between t_stop and
        t_back, their first failed probe over by t_back (one that straddles
        the next restart's stop is that restart's): [(from, to)], from the end of the last success before it
        (or t_stop, if later) to the end of the first success after it
        (or t_back)."""
        out, start = [], None
        prev_ok_end = t_stop
        for t0, t1, ok in self.samples:
            if ok:
                if start is not None:
                    out.append((start, t1))
                    start = None
                prev_ok_end = max(t_stop, t1)
            elif t_stop <= t0 and t1 <= t_back and start is None:
                start = max(t_stop, prev_ok_end)
        if start is not None:
            out.append((start, t_back))
        return out


def leadership(el, leader, t0, t_end):
    """What the participants said between t0 and t_end."""
    el._exited()
    evs = sorted((e.ns, e.kind, e.id) for e in el.events())
    evs += sorted((ns, kind, i) for i, (kind, ns) in el.gone.items())
    evs.sort()
    # Overlaps: election_bench's rule on the intervals, cut at t_end.
    opened, spans = {}, []
    for ns, kind, i in evs:
        if ns > t_end:
            break
        if kind == "LEADER":
            opened.setdefault(i, ns)
        elif kind in NOT_LEADING and i in opened:
            spans.append((opened.pop(i), ns, i))
    spans += [(s, t_end, i) for i, s in opened.items()]
    spans.sort()
    overlaps, active = [], []
    for start, stop, i in spans:
        active = [s for s in active if s[1] > start]
        overlaps += [{"a": s[2], "b": i, "at_ms": ms(start - t0), "overlap_ms": ms(min(s[1], stop) - start)}
                     for s in active if s[2] != i]
        active.append((start, stop, i))
    # Gaps with nobody leading, from the state at t0.
    leading = set()
    for ns, kind, i in evs:
        if ns > t0:
            break
        if kind == "LEADER":
            leading.add(i)
        elif kind in NOT_LEADING:
            leading.discard(i)
    gaps, gap_start = [], (t0 if not leading else None)
    lost = regained = changes = 0
    for ns, kind, i in evs:
        if ns <= t0 or ns > t_end:
            continue
        if kind == "LEADER":
            if i == leader:
                regained += 1
            else:
                changes += 1
            leading.add(i)
            if gap_start is not None:
                gaps.append((gap_start, ns))
                gap_start = None
        elif kind in NOT_LEADING:
            if kind == "LOST" and i == leader:
                lost += 1
            leading.discard(i)
            if not leading and gap_start is None:
                gap_start = ns
    if gap_start is not None:
        gaps.append((gap_start, t_end))
    return {"lost": lost, "regained": regained, "changes": changes,
            "gaps": [{"at_ms": ms(a - t0), "ms": ms(b - a)} for a, b in gaps],
            "longest_no_leader_ms": max((ms(b - a) for a, b in gaps), default=0.0),
            "leading_at_end": sorted(leading), "overlaps": len(overlaps),
            "overlap_examples": overlaps[:5], "leader_intervals": len(spans)}


def one_run(a, ens, T, rep, upgrade_to):
    args = types.SimpleNamespace(name=a.name, cmd=a.cmd, connect=ens.connect_string,
                                 session_timeout_ms=T, log_dir=a.log_dir, join_delay=a.join_delay,
                                 per_proc=1)
    el = Election(args, "%s-T%d-%d" % ("upgrade" if upgrade_to else "rolling", T, rep), session_ms=T)
    prober = Prober([ens.client_port(i) for i in range(ens.n)], max_s=600)
    restarts = []
    try:
        el.start(3, 1)
        el.settle(1.0)
        leader = el.wait(lambda: el.leaders(), 30, "a leader")[0]
        prober.start()
        el.settle(0.5)
        q_leader = ens.leader_index()
        order = [i for i in range(ens.n) if i != q_leader] + [q_leader]
        t0 = time.time_ns()
        for i in order:
            t_stop = time.time_ns()
            ens.stop_server(i)
            t_down = time.time_ns()
            time.sleep(a.down)
            if upgrade_to:
                ens.start_server(i, timeout=120, version=upgrade_to)
            else:
                ens.start_server(i, timeout=120)
            ens.wait_quorum(timeout=120)
            restarts.append({"server": i, "role": "leader" if i == q_leader else "follower",
                             "stop_ns": t_stop, "stopped_ms": ms(t_down - t_stop),
                             "back_ns": time.time_ns(), "release": ens.server_release(i),
                             "srvr_version": ens.server_version(i)})
        el.settle(T / 1000.0)
        t_end = time.time_ns()
    finally:
        prober.halt.set()
        el.stop()
    prober.join(5)
    for r in restarts:
        outs = prober.outages(r["stop_ns"], r["back_ns"])
        r["outages"] = [{"at_ms": ms(a - t0), "ms": ms(b - a)} for a, b in outs]
        r["unavailable_ms"] = max((ms(b - a) for a, b in outs), default=0.0)
        r["at_ms"] = ms(r["stop_ns"] - t0)
        r["back_ms"] = ms(r["back_ns"] - t0)
    rts = sorted(prober.rts)
    out = {"T_ms": T, "repeat": rep, "leader": leader, "negotiated_session_timeout_ms": el.negotiated_ms(),
           "down_s": a.down, "restarts": restarts, "window_ms": ms(t_end - t0),
           "quorum_unavailable_ms": max((r["unavailable_ms"] for r in restarts), default=0.0),
           "probe_rt_ms": ms(rts[len(rts) // 2]) if rts else None, "probes": len(prober.samples),
           "probe_every_ms": PROBE_EVERY_S * 1000}
    if upgrade_to:
        out["upgrade_to"] = upgrade_to
    # The failed probes and the successes on either side of each (what the
    # outages are computed from): start (ms from the first stop), duration
    # (ms), served.
    sm = prober.samples
    keep = [k for k in range(len(sm)) if not sm[k][2] or (k > 0 and not sm[k - 1][2])
            or (k + 1 < len(sm) and not sm[k + 1][2])]
    out["probe_samples"] = [[round(ms(sm[k][0] - t0), 1), round(ms(sm[k][1] - sm[k][0]), 1), int(sm[k][2])]
                            for k in keep]
    out.update(leadership(el, leader, t0, t_end))
    print("%s T=%d #%d: lost %d (regained %d), changes %d, longest without a leader %.0f ms "
          "(gaps %s), overlaps %d | quorum unavailable %s ms"
          % (a.name, T, rep, out["lost"], out["regained"], out["changes"], out["longest_no_leader_ms"],
             [round(g["ms"]) for g in out["gaps"]], out["overlaps"],
             [round(r["unavailable_ms"]) for r in restarts]), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl-cmd", required=True, help="the participant program (shell words)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--log-dir", default="/tmp/zkelect-bench-logs")
    ap.add_argument("--timeouts", default="6000,2000", help="session timeouts T (ms)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--down", type=float, default=2.0, help="seconds each server is down")
    ap.add_argument("--join-delay", type=float, default=1.0)
    ap.add_argument("--upgrade-to", help="a rolling upgrade from Debian's 3.8 to this release")
    a = ap.parse_args()
    a.cmd = shlex.split(a.impl_cmd)
    # A SIGTERM (bench/run.py's timeout, an operator) ends the participants
    # and the ensemble on the way out (zkbed's own handler calls this one).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("rolling_restart: signal %d" % signum))
    Ts = [int(x) for x in a.timeouts.split(",") if x.strip()]
    from run import start_ensemble
    key = "upgrade" if a.upgrade_to else "operations"
    upgrade_to = zkdist.normalize(a.upgrade_to) if a.upgrade_to else None
    doc = {"impl": a.name, "cmd": a.cmd, "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "args": {k: v for k, v in vars(a).items() if k != "cmd"}, "results": {key: []}}
    runs = doc["results"][key]
    t_start = time.monotonic()
    ens = None
    try:
        for T in Ts:
            for rep in range(1, a.repeats + 1):
                if ens is None:
                    ens = start_ensemble(version=zkdist.DEBIAN if upgrade_to else None)
                    doc.setdefault("releases", ens.version)
                try:
                    runs.append(one_run(a, ens, T, rep, upgrade_to))
                except (BenchError, zkbed.ZkBedError, AssertionError) as e:
                    print("%s T=%d #%d failed: %s" % (a.name, T, rep, e), flush=True)
                    runs.append({"T_ms": T, "repeat": rep, "error": str(e)[:2000]})
                if upgrade_to or any(not ens.is_running(i) for i in range(ens.n)):
                    ens.stop()       # an upgrade starts each run from 3.8 again
                    ens = None
    finally:
        if ens is not None:
            ens.stop()
        doc["elapsed_s"] = time.monotonic() - t_start
        with open(a.json, "w") as fh:
            json.dump(doc, fh, indent=1)
        print("results: %s (%.0f s)" % (a.json, doc["elapsed_s"]), flush=True)


if __name__ == "__main__":
    main()

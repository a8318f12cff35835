#!/usr/bin/python3
"""bench/wan_ab.py: issue 31's A/B of convergence on the WAN bed.

  bench/wan_ab.py --build BUILD_DIR [--ms 10] [--ns 10,50] [--rounds 7]
                  [--trace] [--out DIR] [--build-b BUILD_DIR]
                  [--variants V,V...]

The WAN bench's bed, as bench/run.py --wan sets it up (its start_ensemble,
one tests/bed/faultproxy.py proxy per server in this process, every byte
held MS each way, a warm-up burst of zkjoin), then, round after round, in a
rotating order, for each N:

  libzkelect   bench/election_bench.py --tests convergence --conv-repeats 1
               on `zkelect candidate` (the WAN bench's convergence group)
  zkjoin       bench/zkjoin, the bare C client's burst (2-3 requests per
               contender)
  zkjoin-path  bench/zkjoin --path-create: the plain burst and the refused
               creates of the path (a write each)
  zkjoin-like  bench/zkjoin --like-libzkelect: the same burst with
               libzkelect's requests (5-7 per contender)
  libzkelect-b the same as libzkelect on the other build's `zkelect`
               (--build-b): an A/B of two engines on one bed, paired by
               round ("libzkelect / libzkelect-b" is new / old when
               --build is the new one)

--variants picks and orders them (default: all but libzkelect-b, and
libzkelect-b too when --build-b is given).

Each zkjoin is a process of its own with one burst measured (after one
thrown away), as each libzkelect figure is one driver run.

For each run: the proxy loop thread's CPU time and the packets it passed
(the proxies' counters), and the servers' CPU time (/proc), all over the
whole run. --trace also wraps the proxy's handlers (in this process, as
they run) and gives, inside the measured burst itself (join -> converged,
from the participants' own time stamps, or zkjoin's --print-bursts): the
loop thread's CPU, the packets, each requests' opcode (counted from the
burst's start to 30 ms after its end, deletes and pings left out), how late
the proxy's timers released held bytes (its backlog), and how long after
the start the last session's first request reached a proxy (the start's
spread). The wrapping costs the proxy a few microseconds per handler call.

Writes DIR/runs.jsonl (one line per run) and DIR/summary.md; prints the
summary. Default DIR: /tmp/wan-ab-<stamp>.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
import run as R  # bench/run.py, beside this script: the WAN bench's set-up

ALL_VARIANTS = ("libzkelect", "libzkelect-b", "zkjoin", "zkjoin-path", "zkjoin-like")
VARIANTS = ("libzkelect", "zkjoin", "zkjoin-path", "zkjoin-like")  # set by main()

# --------------------------------------------------------------------------
# the proxy's handlers, wrapped (--trace)

REC = []   # (wall_ns, thread_cpu_ns at entry, cpu_ns of the call, kind, packets, lateness_ns)
REQ = []   # (wall_ns, opcode, connection, xid): a request reached a proxy
REP = {}   # (connection, xid) -> wall_ns: its reply reached the proxy from the server


def install_trace(fp):
    C = fp._Conn
    side_data, drain, on_request, on_reply = C.side_data, C._drain, C._on_request, C._on_reply
    tt, wt, mono = time.thread_time_ns, time.time_ns, time.monotonic

    def t_side_data(self, side, data):
        w, c0 = wt(), tt()
        st = self.proxy._stats
        p0 = st["packets_c2s"] + st["packets_s2c"]
        side_data(self, side, data)
        c1 = tt()
        REC.append((w, c0, c1 - c0, 0, st["packets_c2s"] + st["packets_s2c"] - p0, 0))

    def t_drain(self, direction):
        w, c0 = wt(), tt()
        q = self.q[direction]
        late = int((mono() - q[0][0]) * 1e9) if q else 0
        n0 = len(q)
        drain(self, direction)
        c1 = tt()
        REC.append((w, c0, c1 - c0, 1, n0 - len(self.q[direction]), late))

    def t_on_request(self, first, pkt):
        on_request(self, first, pkt)
        if not first and len(pkt) >= 12:
            xid, op = struct.unpack_from(">ii", pkt, 4)
            REQ.append((wt(), op, (self.proxy.name, self.cid), xid))

    def t_on_reply(self, first, pkt):
        if not first and len(pkt) >= 8:
            REP[((self.proxy.name, self.cid), struct.unpack_from(">i", pkt, 4)[0])] = wt()
        return on_reply(self, first, pkt)

    C.side_data, C._drain, C._on_request, C._on_reply = t_side_data, t_drain, t_on_request, t_on_reply


def window_trace(t0, t1, opnames, hold_ns):
    """What the proxy did in [t0, t1] (wall ns)."""
    recs = [r for r in REC if t0 <= r[0] <= t1]
    out = {}
    if recs:
        out["loop_cpu_ms"] = (recs[-1][1] + recs[-1][2] - recs[0][1]) / 1e6
        out["handler_cpu_ms"] = sum(r[2] for r in recs) / 1e6
        out["packets_in"] = sum(r[4] for r in recs if r[3] == 0)
        out["packets_out"] = sum(r[4] for r in recs if r[3] == 1)
        late = sorted(r[5] / 1e6 for r in recs if r[3] == 1 and r[4] > 0)
        if late:
            out["late_max_ms"] = late[-1]
            out["late_median_ms"] = statistics.median(late)
            out["late_p90_ms"] = late[max(0, int(0.9 * len(late) + 0.5) - 1)]
        pk = out["packets_in"] + out["packets_out"]
        out["us_per_packet"] = 1e3 * out["loop_cpu_ms"] / pk if pk else None
    ops, first, server = {}, {}, {}
    for w, op, conn, xid in REQ:
        if t0 <= w <= t1 + 30_000_000:
            name = opnames.get(op, str(op))
            if name in ("delete", "ping"):
                continue
            ops[name] = ops.get(name, 0) + 1
            first.setdefault(conn, w)
            # The server's time on it: its reply's arrival at the proxy less
            # the request's arrival and the hold (the timer's lateness aside).
            if (conn, xid) in REP:
                server.setdefault(name, []).append((REP[(conn, xid)] - w - hold_ns) / 1e6)
    out["requests"] = ops
    out["server_ms"] = {k: {"median": statistics.median(v), "max": max(v)} for k, v in server.items()}
    out["server_all_median_ms"] = statistics.median(x for v in server.values() for x in v) if server else None
    out["requests_total"] = sum(ops.values())
    if first:
        out["start_spread_ms"] = (max(first.values()) - t0) / 1e6
        out["sessions"] = len(first)
    return out


# --------------------------------------------------------------------------

def proc_cpu_ms(pid):
    """utime + stime of a process, ms (clock ticks)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def spawn(cmd, out_path, err_path, timeout):
    with open(out_path, "w") as o, open(err_path, "w") as e:
        p = subprocess.Popen(cmd, stdout=o, stderr=e, start_new_session=True)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait(30)
            rc = -9
    return p.pid, rc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="meson build dir (tools/zkelect, bench/zkjoin)")
    ap.add_argument("--ms", type=int, default=10, help="each way, on every client link")
    ap.add_argument("--ns", default="10,50")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--trace", action="store_true", help="wrap the proxy's handlers (see above)")
    ap.add_argument("--out")
    ap.add_argument("--build-b", help="a second build: the variant libzkelect-b runs its zkelect")
    ap.add_argument("--variants", help="comma-separated, from %s" % ",".join(ALL_VARIANTS))
    a = ap.parse_args()
    global VARIANTS
    if a.variants:
        VARIANTS = tuple(a.variants.split(","))
    elif a.build_b:
        VARIANTS = ("libzkelect", "libzkelect-b", "zkjoin", "zkjoin-path", "zkjoin-like")
    if not VARIANTS or VARIANTS[0] != "libzkelect" or any(v not in ALL_VARIANTS for v in VARIANTS):
        ap.error("--variants: libzkelect first, then any of %s" % ",".join(ALL_VARIANTS[1:]))
    if "libzkelect-b" in VARIANTS and not a.build_b:
        ap.error("libzkelect-b needs --build-b")
    ns = [int(x) for x in a.ns.split(",")]
    if not (1 <= a.ms <= 1000 and 1 <= a.rounds <= 50 and all(1 <= n <= 200 for n in ns)):
        ap.error("--ms 1..1000, --rounds 1..50, N 1..200")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out = a.out or "/tmp/wan-ab-%s" % stamp
    os.makedirs(out, exist_ok=True)
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)
    build = os.path.abspath(a.build)
    zkelect = os.path.join(build, "tools", "zkelect")
    zkjoin = os.path.join(build, "bench", "zkjoin")
    zkelect_b = os.path.join(os.path.abspath(a.build_b), "tools", "zkelect") if a.build_b else None
    from bed import faultproxy as fp
    if a.trace:
        install_trace(fp)
    opnames = {v: k for k, v in fp.OPCODES.items()}

    meta = {"stamp": stamp, "commit": R.git_describe(), "build": build, "build_b": a.build_b,
            "variants": list(VARIANTS), "ms": a.ms, "ns": ns, "rounds": a.rounds,
            "trace": a.trace, "load_start": os.getloadavg(), "cpus": os.cpu_count()}
    R.log("starting the bench ensemble")
    ens = R.start_ensemble()
    proxies = None
    runs = []
    jl = open(os.path.join(out, "runs.jsonl"), "w")
    try:
        proxies = fp.ProxiedEnsemble([ens.client_port(i) for i in range(ens.n)])
        proxies.delay(a.ms)
        connect = proxies.connect_string
        loop_clock = time.pthread_getcpuclockid(proxies._lt.thread.ident)
        spids = [ens.pid(i) for i in range(ens.n)]
        R.log("ensemble up, clients through %s, +%d ms each way" % (connect, a.ms))
        pid, rc = spawn([zkjoin, "--connect", connect, "--n", "50", "--repeats", "2", "--warmup", "1",
                         "--label", "warm-up"], os.devnull, os.path.join(logs, "warmup.err"), 300)
        if rc != 0:
            sys.exit("wan_ab: the warm-up zkjoin exited %d" % rc)

        def packets():
            return sum(s["packets_c2s"] + s["packets_s2c"] for s in (p.stats() for p in proxies.proxies))

        def one(variant, n, rnd):
            tag = "%s-n%d-r%d" % (variant, n, rnd)
            so, se = os.path.join(logs, tag + ".out"), os.path.join(logs, tag + ".err")
            if variant.startswith("libzkelect"):
                js = os.path.join(logs, tag + ".json")
                tool = zkelect_b if variant == "libzkelect-b" else zkelect
                cmd = ["/usr/bin/python3", os.path.join(HERE, "election_bench.py"),
                       "--impl-cmd", shlex.join([tool, "candidate"]), "--name", variant,
                       "--connect", connect, "--json", js, "--log-dir", logs,
                       "--tests", "convergence", "--n", str(n), "--conv-repeats", "1"]
            else:
                cmd = [zkjoin, "--connect", connect, "--n", str(n), "--repeats", "1", "--warmup", "1",
                       "--print-bursts", "--label", variant]
                if variant == "zkjoin-like":
                    cmd.append("--like-libzkelect")
                elif variant == "zkjoin-path":
                    cmd.append("--path-create")
            del REC[:], REQ[:]
            REP.clear()
            load = os.getloadavg()[0]
            pk0, c0 = packets(), time.clock_gettime_ns(loop_clock)
            s0 = [proc_cpu_ms(p) for p in spids]
            pid, rc = spawn(cmd, so, se, 600)
            s1 = [proc_cpu_ms(p) for p in spids]
            pk1, c1 = packets(), time.clock_gettime_ns(loop_clock)
            r = {"variant": variant, "n": n, "round": rnd, "rc": rc, "load1": load,
                 "run_proxy_cpu_ms": (c1 - c0) / 1e6, "run_packets": pk1 - pk0,
                 "run_server_cpu_ms": sum(s1) - sum(s0)}
            r["run_us_per_packet"] = 1e3 * r["run_proxy_cpu_ms"] / r["run_packets"] if r["run_packets"] else None
            t0 = t1 = None
            if rc == 0 and variant.startswith("libzkelect"):
                doc = json.load(open(js))
                conv = doc["results"]["convergence"][0]["runs"][0]["converge_ms"]
                ev = os.path.join(logs, "%s-conv%d-%d.events" % (variant, n, pid))
                last = {}
                for line in open(ev):
                    w = line.split()
                    if len(w) >= 5 and w[1] == "EVENT" and w[2] in ("LEADER", "FOLLOWER"):
                        last[w[3]] = int(w[4])
                t1 = max(last.values())
                t0 = t1 - int(conv * 1e6)
                r["converge_ms"] = conv
            elif rc == 0:
                m = [re.match(r"zkjoin: burst (\d+): ([\d.]+) us at (\d+) ns", ln) for ln in open(se)]
                m = [x for x in m if x]
                if m:
                    us, t0 = float(m[-1].group(2)), int(m[-1].group(3))
                    t1 = t0 + int(us * 1e3)
                    r["converge_ms"] = us / 1e3
            if a.trace and t0 is not None:
                r.update(window_trace(t0, t1, opnames, a.ms * 1_000_000))
            jl.write(json.dumps(r) + "\n")
            jl.flush()
            R.log("%s N=%d round %d: %s ms%s" % (variant, n, rnd, r.get("converge_ms", "FAILED rc=%d" % rc),
                                                   " | reqs %s, loop cpu %.1f ms, late max %.2f ms"
                                                   % (r.get("requests_total"), r.get("loop_cpu_ms", 0),
                                                      r.get("late_max_ms", 0)) if a.trace else ""))
            return r

        for rnd in range(a.rounds):
            k = rnd % len(VARIANTS)
            order = VARIANTS[k:] + VARIANTS[:k]
            for n in ns:
                for v in order:
                    runs.append(one(v, n, rnd))
    finally:
        jl.close()
        if proxies is not None:
            proxies.close()
        R.log("stopping the bench ensemble")
        ens.stop()
    meta["load_end"] = os.getloadavg()
    meta["load1_median"] = statistics.median(r["load1"] for r in runs) if runs else None
    text = summary(runs, meta)
    with open(os.path.join(out, "summary.md"), "w") as fh:
        fh.write(text)
    with open(os.path.join(out, "meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    print(text)
    R.log("results in %s" % out)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fm(x, nd=1):
    return "-" if x is None else "%.*f" % (nd, x)


def summary(runs, meta):
    L = ["# wan_ab: +%d ms each way, %s (commit %s, load 1-min median %s, start %s)"
         % (meta["ms"], "traced" if meta["trace"] else "untraced", meta["commit"], fm(meta["load1_median"], 2),
            " ".join("%.2f" % x for x in meta["load_start"])), ""]
    L.append("| N | variant | converge median ms (n) | all, ms | libzkelect / this | run: proxy us/packet | "
             "run: server CPU ms | burst: requests | burst: proxy loop CPU ms | burst: packets | "
             "burst: us/packet | burst: late median / max ms | start spread ms |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in meta["ns"]:
        lib = med(r.get("converge_ms") for r in runs if r["n"] == n and r["variant"] == "libzkelect")
        for v in VARIANTS:
            rs = [r for r in runs if r["n"] == n and r["variant"] == v]
            c = [r["converge_ms"] for r in rs if "converge_ms" in r]
            m = med(c)
            L.append("| %d | %s | %s (%d) | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |" % (
                n, v, fm(m), len(c), " ".join(fm(x) for x in c),
                fm(lib / m, 2) if lib and m else "-",
                fm(med(r.get("run_us_per_packet") for r in rs)),
                fm(med(r.get("run_server_cpu_ms") for r in rs), 0),
                fm(med(r.get("requests_total") for r in rs), 0),
                fm(med(r.get("loop_cpu_ms") for r in rs)),
                fm(med((r.get("packets_in") or 0) + (r.get("packets_out") or 0) if "packets_in" in r else None
                       for r in rs), 0),
                fm(med(r.get("us_per_packet") for r in rs)),
                fm(med(r.get("late_median_ms") for r in rs), 2), fm(med(r.get("late_max_ms") for r in rs), 2),
                fm(med(r.get("start_spread_ms") for r in rs), 1)))
    L.append("")
    L.append("Paired by round (the variants of one round ran back to back): median over the rounds of "
             "libzkelect / variant, and of variant - zkjoin (ms):")
    L.append("")
    for n in meta["ns"]:
        by = {}
        for r in runs:
            if r["n"] == n and "converge_ms" in r:
                by.setdefault(r["round"], {})[r["variant"]] = r["converge_ms"]
        cells = []
        for v in VARIANTS[1:]:
            q = [b["libzkelect"] / b[v] for b in by.values() if "libzkelect" in b and v in b]
            d = [b[v] - b["zkjoin"] for b in by.values() if "zkjoin" in b and v in b]
            cells.append("libzkelect/%s %s (%d rounds), %s - zkjoin %s ms" % (v, fm(med(q), 2), len(q), v, fm(med(d))))
        cells.append("libzkelect - zkjoin %s ms" % fm(med(
            [b["libzkelect"] - b["zkjoin"] for b in by.values() if "libzkelect" in b and "zkjoin" in b])))
        L.append("- N=%d: %s" % (n, "; ".join(cells)))
    L.append("")
    if meta["trace"]:
        L.append("Requests in the burst by opcode (median run):")
        L.append("")
        for n in meta["ns"]:
            for v in VARIANTS:
                rs = [r for r in runs if r["n"] == n and r["variant"] == v and r.get("requests")]
                if rs:
                    rs.sort(key=lambda r: r["requests_total"])
                    L.append("- N=%d %s: %s" % (n, v, json.dumps(rs[len(rs) // 2]["requests"], sort_keys=True)))
                    sv = {}
                    for r in rs:
                        for op, x in r.get("server_ms", {}).items():
                            sv.setdefault(op, ([], []))
                            sv[op][0].append(x["median"])
                            sv[op][1].append(x["max"])
                    if sv:
                        L.append("  the server's time per request in the burst (reply at the proxy - request "
                                 "at the proxy - the hold), median over the runs of each run's median / max, "
                                 "ms: " + ", ".join("%s %s / %s" % (op, fm(med(a), 2), fm(med(b), 2))
                                                    for op, (a, b) in sorted(sv.items())))
        L.append("")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()

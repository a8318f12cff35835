#!/usr/bin/python3
"""What GET /leader costs zkelect run's metrics server (issue 55).

    bench/leader_endpoint.py --build BUILD_DIR [--connect HOSTS] [--rate 1000]
                             [--seconds 10] [--json OUT]

One `zkelect run --metrics-listen 127.0.0.1:0 -- sleep` leads an election
(a 3-server ensemble of tests/bed/zkbed.py on loopback unless --connect
names one). A scraper asks GET /metrics 20 times a second for --seconds,
first alone, then while a probe asks GET /leader at --rate requests a
second on one kept-alive connection (a load balancer's health checks of
many frontends, or a readiness probe gone wild). Reported: /metrics'
median and p99 latency in each phase and their ratio, /leader's own
latency and the rate it reached, and zkelect run's CPU time a second in
each phase (utime + stime from /proc). Each phase's figures come from the
same process, one after the other, so the ratio is what /leader adds.
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))] if xs else float("nan")


class Paced:
    """GET `path` at `rate` a second on one connection, until stopped; the
    latencies (ms) and the statuses."""

    def __init__(self, port, path, rate):
        self.port, self.path, self.period = port, path, 1.0 / rate
        self.lat, self.status, self.stop = [], {}, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        nxt = time.monotonic()
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                conn.request("GET", self.path)
                r = conn.getresponse()
                r.read()
                self.status[r.status] = self.status.get(r.status, 0) + 1
            except (OSError, http.client.HTTPException):
                self.status["error"] = self.status.get("error", 0) + 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            self.lat.append((time.monotonic() - t) * 1e3)
            nxt += self.period
            wait = nxt - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            elif wait < -1:
                nxt = time.monotonic()  # fell behind: no burst to catch up
        conn.close()

    def __enter__(self):
        self.t0 = time.monotonic()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)
        self.seconds = time.monotonic() - self.t0


def phase(pid, port, seconds, rate):
    c0 = cpu_s(pid)
    probe = Paced(port, "/leader", rate) if rate else None
    if probe:
        probe.__enter__()
    try:
        with Paced(port, "/metrics", 20) as scrape:
            time.sleep(seconds)
    finally:
        if probe:
            probe.__exit__()
    cpu = cpu_s(pid) - c0
    out = {"metrics_median_ms": statistics.median(scrape.lat), "metrics_p99_ms": pct(scrape.lat, 99),
           "metrics_n": len(scrape.lat), "metrics_status": scrape.status,
           "run_cpu_ms_per_s": cpu * 1e3 / scrape.seconds}
    if probe:
        out.update({"leader_median_ms": statistics.median(probe.lat),
                    "leader_p99_ms": pct(probe.lat, 99),
                    "leader_rate": len(probe.lat) / probe.seconds, "leader_status": probe.status})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--connect")
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    zkelect = os.path.join(a.build, "tools", "zkelect")
    ens = None
    if not a.connect:
        from bed.zkbed import Ensemble  # tests/ on PYTHONPATH (./dev bench sets it)
        ens = Ensemble(n=3, tick_ms=500)
        ens.start()
    connect = a.connect or ens.connect_string
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(a.build, "capi"))
    run = subprocess.Popen([zkelect, "run", "--connect", connect, "--path",
                            f"/bench/endpoint-{uuid.uuid4().hex[:8]}", "--metrics-listen",
                            "127.0.0.1:0", "--", "sleep", "3600"],
                           env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            line = run.stderr.readline()
            m = re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                port = int(m.group(1))
            if not line and run.poll() is not None:
                break
        if port is None:
            sys.exit("bench: zkelect run named no metrics port")
        threading.Thread(target=lambda: [None for _ in run.stderr], daemon=True).start()
        while time.monotonic() < deadline:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/leader")
            if c.getresponse().status == 200:
                break
            time.sleep(0.1)
        else:
            sys.exit("bench: zkelect run did not lead within 30 s")
        alone = phase(run.pid, port, a.seconds, 0)
        loaded = phase(run.pid, port, a.seconds, a.rate)
    finally:
        run.terminate()
        try:
            run.wait(20)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait(10)
        if ens:
            ens.stop()
    res = {"rate_asked": a.rate, "seconds": a.seconds, "alone": alone, "with_leader_probe": loaded,
           "metrics_median_ratio": loaded["metrics_median_ms"] / alone["metrics_median_ms"]}
    print("| /metrics, 20/s | median ms | p99 ms | zkelect run CPU ms/s |")
    print("|---|---|---|---|")
    for name, p in (("alone", alone), (f"with /leader at {a.rate}/s", loaded)):
        print(f"| {name} | {p['metrics_median_ms']:.2f} | {p['metrics_p99_ms']:.2f} | "
              f"{p['run_cpu_ms_per_s']:.1f} |")
    print(f"\n/metrics median ratio (with/alone): {res['metrics_median_ratio']:.2f}; /leader: "
          f"{loaded['leader_rate']:.0f}/s reached, median {loaded['leader_median_ms']:.2f} ms, "
          f"p99 {loaded['leader_p99_ms']:.2f} ms, statuses {loaded['leader_status']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

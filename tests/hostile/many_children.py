#!/usr/bin/python3
"""Measures libzkelect on an election path with many children, ours and
foreign, against a fresh real ensemble (tests/bed/zkbed.py):

    PYTHONPATH=tests python3 tests/hostile/many_children.py --children 100000 [--build build]

Half of the children are foreign candidate nodes named as Curator's
LeaderLatch names them ("_c_<uuid>-latch-<seq>", persistent, so they stay in
line ahead of us), half are foreign nodes of other names (ignored). Then one
`zkelect candidate` joins (time to its first FOLLOWER/LEADER line, its RSS
and peak RSS, threads, fds) and `zkelect status` lists the candidates (time,
peak RSS, exit code). Prints one JSON object. Not a test: a measurement for
docs/limits.md."""

import argparse
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

from bed.toolutil import Proc
from bed.zkbed import Ensemble

HERE = Path(__file__).resolve().parent


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "Threads"):
                out[k] = int(v.split()[0])
    fds = sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    out["fds"] = len(fds)
    out["fd_kinds"] = sorted({f.split(":")[0].split("[")[0] if ":" in f else "file"
                              for f in fds})
    out["fd_list"] = [f.split("/")[-1] if f.startswith("/") else f for f in fds]
    out["thread_names"] = sorted(open(f"/proc/{pid}/task/{t}/comm").read().strip()
                                 for t in os.listdir(f"/proc/{pid}/task"))
    return out


def populate(zk, path, n):
    zk.ensure_path(path)
    t0 = time.monotonic()
    batch = 1000
    for start in range(0, n, batch):
        tx = zk.transaction()
        for i in range(start, min(n, start + batch)):
            if i % 2 == 0:
                tx.create(f"{path}/_c_{uuid.uuid4()}-latch-{i // 2:010d}", b"foreign-%d" % i)
            else:
                tx.create(f"{path}/junk-{i}-" + "x" * 20, b"")
        res = tx.commit()
        bad = [r for r in res if isinstance(r, Exception)]
        if bad:
            raise RuntimeError(f"create failed: {bad[0]!r}")
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--children", type=int, default=100000)
    ap.add_argument("--build", default=os.environ.get("ZKELECT_BUILD_DIR", "build"))
    args = ap.parse_args()
    build = Path(args.build).resolve()
    zkelect = build / "tools" / "zkelect"
    env = dict(os.environ, LD_LIBRARY_PATH=str(build / "capi"))
    from kazoo.client import KazooClient
    result = {"children": args.children}
    with Ensemble(n=1, tick_ms=200, heap="1g") as ens:
        zk = KazooClient(hosts=ens.connect_string, timeout=30)
        zk.start(timeout=30)
        path = "/many/e"
        result["populate_s"] = round(populate(zk, path, args.children), 1)
        t0 = time.monotonic()
        kids = zk.get_children(path)
        result["kazoo_get_children_s"] = round(time.monotonic() - t0, 2)
        result["listing_bytes"] = sum(len(k) + 4 for k in kids) + 4
        zk.stop()
        zk.close()

        for label, p, count in (("empty", "/many/empty", 1), ("crowded", path, 1),
                                ("crowded_10_candidacies", path, 10)):
            c = Proc([zkelect, "candidate", "--connect", ens.connect_string, "--path", p,
                      "--first-id", "1", "--count", str(count), "--session-timeout-ms", "10000"],
                     env)
            try:
                c.wait_line(lambda l: l.startswith("EVENT CONNECTED"), 30, "CONNECTED")
                before = proc_status(c.pid)
                t0 = time.monotonic()
                c.send("join")
                for _ in range(count):
                    line = c.wait_line(lambda l: l.startswith(("EVENT FOLLOWER", "EVENT LEADER")),
                                       300, "FOLLOWER or LEADER")
                took = time.monotonic() - t0
                time.sleep(1)  # settle; then the steady state
                after = proc_status(c.pid)
                result[label] = {"join_to_state_s": round(took, 2), "state": line.split()[1],
                                 "rss_kb_before": before["VmRSS"], "rss_kb_after": after["VmRSS"],
                                 "peak_rss_kb": after["VmHWM"], "threads": after["Threads"],
                                 "thread_names": after["thread_names"], "fds": after["fds"],
                                 "fd_list": after["fd_list"]}
            finally:
                c.kill()
        t0 = time.monotonic()
        r = subprocess.run(["/usr/bin/time", "-f", "%M", str(zkelect), "status", "--connect",
                            ens.connect_string, "--path", path], env=env, capture_output=True,
                           text=True, timeout=600)
        result["status"] = {"exit": r.returncode, "s": round(time.monotonic() - t0, 1),
                            "peak_rss_kb": int(r.stderr.strip().splitlines()[-1])
                            if r.stderr.strip() else None,
                            "stdout_lines": len(r.stdout.splitlines()),
                            "stderr_head": r.stderr.strip().splitlines()[:2]}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

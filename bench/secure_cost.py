#!/usr/bin/python3
"""What TLS and SASL cost an election: connect, join and graceful failover
of three `zkelect candidate` processes over plain TCP, TLS, and TLS with
SASL (DIGEST-MD5), against one 3-server ensemble that offers both ports
and takes SASL without requiring it (so all three run against the same
servers).

    bench/secure_cost.py --build BUILD [--repeats R] [--json PATH]

Per mode and repeat: connect = the three processes started -> all three
CONNECTED (TLS handshake and SASL exchange included); join = `join` sent
to all -> one LEADER, two FOLLOWERs; failover = the leader's `resign` ->
another's LEADER; crash = SIGKILL of the new leader's process -> the last
one's LEADER (the crash guard closes a dead process's session at once in
every mode: over TLS with the client's files, with SASL authenticating as
the client did; its reconnection pays the TLS handshake and the SASL
exchange). Measured in this process
(time.monotonic), through the candidates' line protocol, which every mode
pays alike. Prints medians and maxima in ms; --json writes every sample
(`./dev bench --secure` runs it and writes the report)."""

import argparse
import json
import os
import statistics
import tempfile
import time

# tests/ is on PYTHONPATH (./dev; by hand: PYTHONPATH=$PWD/tests).
from bed.toolutil import Candidates, parse_event
from bed.zkbed import Ensemble
from sasl import saslbed
from tls import tlsbed

SESSION_MS = 4000


def one(zkelect, env, hosts, extra, path):
    t0 = time.monotonic()
    c = Candidates(zkelect, env, hosts, path, ["1", "2", "3"], SESSION_MS, extra)
    try:
        seen = set()

        def connected(p, line):
            assert line is not None, f"candidate {p} exited"
            if line.startswith("EVENT CONNECTED"):
                seen.add(p)
            return len(seen) == 3
        c.wait(connected, 30, "three connected")
        t1 = time.monotonic()
        c.send_all("join")

        def settled(p, line):
            assert line is not None, f"candidate {p} exited"
            ks = list(c.state.values())
            return len(ks) == 3 and ks.count("LEADER") == 1 and ks.count("FOLLOWER") == 2
        c.wait(settled, 30, "one leader")
        t2 = time.monotonic()
        first = c.leaders()[0]
        c.procs[first].send(f"resign {first}")
        c.wait(lambda p, l: p != first and l and (parse_event(l) or ("",))[0] == "LEADER",
               30, "a new leader")
        t3 = time.monotonic()
        second = [p for p in c.leaders() if p != first][0]
        t4 = time.monotonic()
        c.procs[second].kill()
        c.wait(lambda p, l: p not in (first, second) and l and (parse_event(l) or ("",))[0] == "LEADER",
               3 * SESSION_MS / 1000 + 10, "a leader after the crash")
        t5 = time.monotonic()
        return (t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000, (t5 - t4) * 1000
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", help="write every sample here")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    zkelect = os.path.join(build, "tools", "zkelect")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "capi"),
               ZKELECT_GUARD=os.path.join(build, "guard", "zkelect-guard"))
    d = tempfile.mkdtemp(prefix="zkelect-secure-bench-")
    keys = tlsbed.make_ca_keys(d)
    password = "bench-only-password"
    flags = saslbed.digest_jaas(d, {"alice": password})
    pw = saslbed.password_file(d, "pw", password)
    cfg = {"authProvider.sasl": saslbed.ENFORCE["authProvider.sasl"]}
    ens = Ensemble(n=3, tick_ms=200, tls=keys, plain_port=True, extra_cfg=cfg, jvm_flags=flags)
    ens.start()
    tls = ["--set", f"zk.tls.ca={keys['cafile']}", "--set", f"zk.tls.cert={keys['client_cert']}",
           "--set", f"zk.tls.key={keys['client_key']}"]
    sasl = ["--set", "zk.sasl.mechanism=DIGEST-MD5", "--set", "zk.sasl.user=alice",
            "--set", f"zk.sasl.password.file={pw}"]
    modes = [("plain TCP", ens.connect_string, []),
             ("TLS", ens.secure_connect_string, tls),
             ("TLS + SASL (DIGEST-MD5)", ens.secure_connect_string, tls + sasl)]
    try:
        res = {m: [] for m, _, _ in modes}
        for r in range(a.repeats):  # interleaved: drift hits every mode alike
            for m, hosts, extra in modes:
                res[m].append(one(zkelect, env, hosts, extra, f"/bench/secure-{r}-{len(extra)}"))
        print(f"{'mode':26} {'connect ms':>16} {'join ms':>16} {'failover ms':>16} {'crash ms':>16}"
              f"   (median / max, n={a.repeats}, T = {SESSION_MS} ms)")
        for m, _, _ in modes:
            cols = list(zip(*res[m]))
            print(f"{m:26} " + " ".join(f"{statistics.median(c):8.1f}/{max(c):7.1f}" for c in cols))
        if a.json:
            with open(a.json, "w") as fh:
                json.dump({"repeats": a.repeats, "session_ms": SESSION_MS,
                           "measures": ["connect", "join", "failover", "crash"],
                           "modes": {m: [list(r) for r in res[m]] for m, _, _ in modes}}, fh, indent=1)
    finally:
        ens.stop()


if __name__ == "__main__":
    main()

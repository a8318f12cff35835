#!/usr/bin/python3
"""./dev demo: a leader election on a real ZooKeeper ensemble, narrated.

Starts a 3-server ensemble on loopback (tests/bed/zkbed.py), five
`zkelect candidate` processes (one participant each, 2000 ms sessions) on one
election path, then shows:
  1. who leads and the queue behind it,
  2. a graceful failover (the leader resigns): RESIGNED -> next LEADER,
  3. a crash failover (SIGKILL of the new leader's process): kill -> next
     LEADER, against the negotiated session timeout,
and stops everything. Every wait has a deadline; Ctrl-C or any error still
stops every process this script started.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:
    # The test bed is the package `bed` in tests/; ./dev puts tests/ on
    # PYTHONPATH.
    from bed.participant import EOF, Hub, Participant, candidate_argv, parse_event
    from bed.zkbed import Ensemble
except ImportError as e:
    sys.exit(f"demo: {e}: run it as ./dev demo (or with PYTHONPATH={ROOT / 'tests'})")

SESSION_MS = 2000
N = 5
T0 = time.monotonic()


def say(msg=""):
    print(f"[{time.monotonic() - T0:7.3f}s] {msg}" if msg else "", flush=True)


def ms(ns):
    return ns / 1e6


class DemoError(RuntimeError):
    pass


class World:
    """Every candidate's lines through one Hub (tests/bed/participant.py),
    seen as (id, kind, ns, extra) tuples: EVENT lines as they are, the end of
    a process's output as kind EXIT, anything else as kind INFO."""

    def __init__(self):
        self.hub = Hub()

    @property
    def state(self):
        return self.hub.state

    @property
    def info(self):
        return self.hub.info

    @property
    def log(self):
        return [(e.id, e.kind, e.ns, e.kv) for e in self.hub.events]

    @staticmethod
    def _view(line):
        if line.words == EOF:
            return (line.src.ids[0], "EXIT", 0, {})
        ev = parse_event(line.words)
        return (ev.id, ev.kind, ev.ns, ev.kv) if ev else ("", "INFO", 0, {})

    def wait(self, what, pred, timeout):
        """Offer each new line to pred until it returns a value; bounded."""
        try:
            return self.hub.wait(lambda line: pred(self._view(line)), timeout, what)
        except AssertionError as e:     # the Hub's timeout
            raise DemoError(str(e)) from None

    def leaders(self):
        return self.hub.leaders()


def zk_status(zkelect, hosts, path, env):
    r = subprocess.run([str(zkelect), "status", "--connect", hosts, "--path", path],
                       capture_output=True, text=True, env=env, timeout=30)
    if r.returncode != 0:
        return f"(zkelect status failed: {r.stderr.strip()})"
    return r.stdout.rstrip()


def queue_order(zkelect, hosts, path, env):
    import json
    r = subprocess.run([str(zkelect), "status", "--connect", hosts, "--path", path, "--json"],
                       capture_output=True, text=True, env=env, timeout=30)
    if r.returncode != 0:
        return []
    return [p["id"] for p in json.loads(r.stdout)["participants"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="meson build directory")
    args = ap.parse_args()
    build = Path(args.build).resolve()
    zkelect = build / "tools" / "zkelect"
    if not os.access(zkelect, os.X_OK):
        print(f"demo: {zkelect} is missing; build first (./dev build)", file=sys.stderr)
        return 1
    env = dict(os.environ)
    lib = str(build / "capi")
    env["LD_LIBRARY_PATH"] = lib + (os.pathsep + env["LD_LIBRARY_PATH"]
                                    if env.get("LD_LIBRARY_PATH") else "")

    logdir = tempfile.mkdtemp(prefix="zkelect-demo-")
    ens = None
    cands = {}
    world = World()
    summary = []
    ok = False
    # Ctrl-C and SIGTERM end up in the finally below through KeyboardInterrupt.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        say("Starting a 3-server ZooKeeper ensemble on loopback (tickTime 200 ms)...")
        ens = Ensemble(n=3, tick_ms=200)
        t = time.monotonic()
        ens.start()
        hosts = ens.connect_string
        say(f"ensemble up in {time.monotonic() - t:.1f} s: {hosts} "
            f"(quorum leader: server {ens.leader_index() + 1})")
        path = f"/demo/election-{os.getpid()}"

        say()
        say(f"Starting {N} `zkelect candidate` processes, ids 1..{N}, one ZooKeeper "
            f"session each, requested session timeout {SESSION_MS} ms, path {path}")
        for i in range(1, N + 1):
            cands[str(i)] = Participant(
                candidate_argv(zkelect, hosts, path, i, 1, SESSION_MS), env,
                name=f"candidate {i}", hub=world.hub,
                stderr=os.path.join(logdir, f"candidate-{i}.stderr"))
        connected = set()

        def on_connect(ev):
            if ev[1] == "EXIT":
                raise DemoError(f"candidate {ev[0]} exited early; see {logdir}")
            if ev[1] == "CONNECTED":
                connected.add(ev[0])
            return len(connected) == N
        world.wait("all sessions connected", on_connect, 30)
        negotiated = int(world.info.get("1", {}).get("negotiated_session_timeout_ms", SESSION_MS))
        say(f"all {N} sessions connected; negotiated session timeout {negotiated} ms")

        say()
        say("Sending `join` to every candidate...")
        t_join = time.time_ns()
        for c in cands.values():
            c.send("join")

        def settled(_ev):
            ks = [world.state.get(i) for i in cands]
            return ks.count("LEADER") == 1 and ks.count("FOLLOWER") == N - 1
        world.wait("one leader and four followers", settled, 20)
        leader = world.leaders()[0]
        lead_ev = [e for e in world.log if e[0] == leader and e[1] == "LEADER"][-1]
        conv = ms(max(e[2] for e in world.log if e[1] in ("LEADER", "FOLLOWER")) - t_join)
        say(f"candidate {leader} LEADS (fencing token {lead_ev[3].get('token')}); "
            f"the others follow. Converged {conv:.1f} ms after `join`.")
        summary.append(("election (join -> 1 leader + 4 followers)", conv, None))
        say("The queue as ZooKeeper holds it (`zkelect status`):")
        for line in zk_status(zkelect, hosts, path, env).splitlines():
            print("           | " + line)
        order = queue_order(zkelect, hosts, path, env)

        # -- graceful failover --------------------------------------------
        say()
        expect = order[1] if len(order) > 1 else None
        say(f"Asking leader {leader} to resign; next in queue: {expect}")
        cands[leader].send(f"resign {leader}")
        got = {}

        def handover(ev):
            pid_, kind = ev[0], ev[1]
            if kind == "EXIT":
                raise DemoError(f"candidate {pid_} exited; see {logdir}")
            if pid_ == leader and kind == "RESIGNED":
                got["resigned"] = ev[2]
            elif pid_ != leader and kind == "LEADER":
                # Lines of different processes arrive in any order: the heir's
                # LEADER may be read before the RESIGNED it answers.
                got["leader"], got["leader_ns"], got["token"] = pid_, ev[2], ev[3].get("token")
            elif pid_ == leader and kind == "FOLLOWER" and "resigned" in got:
                got["rejoined"] = ev[2]
            return "leader" in got and "rejoined" in got
        world.wait("the handover after resign", handover, 20)
        lat = ms(got["leader_ns"] - got["resigned"])
        new = got["leader"]
        say(f"{leader} printed RESIGNED; {new} became LEADER "
            f"(token {got['token']}) {lat:.2f} ms later"
            + (" -- the next in queue, as expected" if new == expect else
               f" -- NOT the expected {expect}!"))
        say(f"{leader} re-joined at the back of the queue as FOLLOWER")
        summary.append(("graceful failover (RESIGNED -> LEADER)", lat, None))

        # -- crash failover -----------------------------------------------
        say()
        order = queue_order(zkelect, hosts, path, env)
        expect = order[1] if len(order) > 1 else None
        say(f"SIGKILL of leader {new}'s process (pid {cands[new].proc.pid}); "
            f"next in queue: {expect}. ZooKeeper notices only when its session "
            f"expires (~{negotiated} ms).")
        kill_ns = cands[new].sigkill()
        crash = {}

        def next_leader(ev):
            if ev[1] == "LEADER" and ev[0] != new:
                crash.update(leader=ev[0], ns=ev[2], token=ev[3].get("token"))
                return True
            if ev[1] == "EXIT" and ev[0] != new:
                raise DemoError(f"candidate {ev[0]} exited; see {logdir}")
            return False
        world.wait("a new leader after the crash", next_leader, 3 * negotiated / 1000 + 10)
        lat2 = ms(crash["ns"] - kill_ns)
        say(f"{crash['leader']} became LEADER (token {crash['token']}) {lat2:.0f} ms after "
            f"the kill = {lat2 / negotiated:.2f} x the session timeout"
            + (" -- the next in queue" if crash["leader"] == expect else ""))
        summary.append(("crash failover (SIGKILL -> LEADER)", lat2, lat2 / negotiated))
        say("The queue now:")
        for line in zk_status(zkelect, hosts, path, env).splitlines():
            print("           | " + line)

        # -- shutdown -----------------------------------------------------
        say()
        say("Sending `quit` to the remaining candidates...")
        t = time.monotonic()
        for cid, c in cands.items():
            if not c.killed:
                rc = c.quit(timeout=10)
                if rc != 0:
                    raise DemoError(f"candidate {cid} exited with status {rc}")
        say(f"all candidates exited with status 0 in {time.monotonic() - t:.2f} s")

        say()
        print("Summary", flush=True)
        print(f"  {'what':<45} {'latency':>12}  {'/ session timeout':>17}")
        for what, v, ratio in summary:
            r = f"{ratio:.2f}" if ratio is not None else ""
            print(f"  {what:<45} {v:>9.2f} ms  {r:>17}")
        print(f"  negotiated session timeout {negotiated} ms")
        ok = True
        return 0
    except DemoError as e:
        print(f"\ndemo failed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for c in cands.values():
            c.kill()
        if ens is not None:
            say("Stopping the ensemble.")
            ens.stop()
        if ok:
            shutil.rmtree(logdir, ignore_errors=True)
        else:
            print(f"candidate logs kept in {logdir}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

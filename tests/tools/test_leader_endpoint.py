"""zkelect run's GET /leader and /healthz (--metrics-listen), and a real
load balancer in front of them: Debian's HAProxy, started here on loopback,
health-checks /leader of three zkelect run processes and sends traffic to
the one that leads. Each runs a small service (leader_service.py) that
answers with its fencing token only while its run's /leader says it leads.
Requests go on through a resign, a SIGKILL (crash guard on) and a SIGSTOP
of the leader: traffic moves to each new leader, and no answer ever comes
from a process that no longer leads (tokens never go back)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bed.lines import LinePump
from bed.zkbed import free_ports

HERE = Path(__file__).resolve().parent
T_MS = 4000


def _get(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


class Run:
    """`zkelect run --metrics-listen 127.0.0.1:M -- leader_service.py S M`."""

    def __init__(self, zkelect_bin, env, hosts, path, pid_, service_port, metrics_port):
        self.id, self.sport, self.mport = pid_, service_port, metrics_port
        self.proc = subprocess.Popen(
            [str(zkelect_bin), "run", "--connect", hosts, "--path", path, "--id", pid_,
             "--session-timeout-ms", str(T_MS), "--metrics-listen", f"127.0.0.1:{metrics_port}",
             "--grace", "2000", "--", "/usr/bin/python3", str(HERE / "leader_service.py"),
             str(service_port), str(metrics_port)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.err = LinePump(self.proc.stderr).lines

    def leader(self):
        return _get(f"http://127.0.0.1:{self.mport}/leader", timeout=1)

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGCONT)
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(15)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                self.proc.kill()
                self.proc.wait(15)


def _until(what, cond, within):
    deadline = time.monotonic() + within
    while True:
        got = cond()
        if got:
            return got
        assert time.monotonic() < deadline, f"not within {within} s: {what}"
        time.sleep(0.02)


def _leading(runs):
    out = []
    for r in runs:
        if r.proc.poll() is None:
            try:
                status, body, _ = r.leader()
            except OSError:
                continue
            if status == 200:
                out.append((r, json.loads(body)))
    return out[0] if len(out) == 1 else None


def test_leader_and_healthz_answer_what_is_leader_says(zk, zk_path, zkelect_bin, test_env):
    sports, mports = free_ports(2), free_ports(2)
    a = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "a", sports[0], mports[0])
    b = None
    try:
        r, doc = _until("a leads", lambda: _leading([a]), 30)
        assert set(doc) == {"leader", "path", "id", "token", "lease_left_ms"}, doc
        assert (doc["leader"], doc["path"], doc["id"]) == (True, zk_path, "a"), doc
        assert doc["token"] > 0 and 0 < doc["lease_left_ms"] <= T_MS, doc
        status, _, headers = a.leader()
        assert headers.get("Cache-Control") == "no-store", headers
        assert _get(f"http://127.0.0.1:{mports[0]}/healthz")[0] == 200
        b = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "b", sports[1], mports[1])
        _until("b's endpoint", lambda: _safe_status(b) is not None, 30)
        status, body, _ = b.leader()
        assert (status, json.loads(body)) == (503, {"leader": False}), body
        assert _get(f"http://127.0.0.1:{mports[1]}/healthz")[0] == 200
        assert _get(f"http://127.0.0.1:{mports[1]}/nothing")[0] == 404
    finally:
        for r in (a, b):
            if r:
                r.stop()


def _safe_status(run):
    try:
        return run.leader()[0]
    except OSError:
        return None


DOC = HERE.parents[1] / "docs" / "monitoring.md"


def _haproxy_cfg(front, servers):
    """docs/monitoring.md's HAProxy configuration, its addresses moved to
    loopback: the frontend's bind, and one server line per zkelect run."""
    from bed import examples
    mine = "tested by tests/tools/" + Path(__file__).name
    (block,) = [b for b in examples.blocks(DOC) if any(m.startswith(mine) for m in b.marks)]
    lines = []
    for line in block.text.splitlines():
        if line.strip().startswith("bind "):
            line = f"    bind 127.0.0.1:{front}"
        if line.strip().startswith("server "):
            if servers:
                lines += [f"    server r{i} 127.0.0.1:{s} check port {m}"
                          for i, (s, m) in enumerate(servers)]
                servers = None
            continue
        lines.append(line)
    assert servers is None, block.text
    return "global\n    maxconn 200\n" + "\n".join(lines) + "\n"


@pytest.mark.skipif(not shutil.which("haproxy"), reason="haproxy (Debian's package) not installed")
def test_haproxy_sends_traffic_only_to_the_leader(zk, zk_path, zkelect_bin, test_env, tmp_path):
    n = 4  # the leader is ended three ways; the fourth takes the last turn
    sports, mports, (front,) = free_ports(n), free_ports(n), free_ports(1)
    runs = [Run(zkelect_bin, test_env, zk.connect_string, zk_path, f"r{i}", sports[i], mports[i])
            for i in range(n)]
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(_haproxy_cfg(front, list(zip(sports, mports))))
    haproxy = subprocess.Popen(["haproxy", "-db", "-f", str(cfg)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    answers, stop = [], threading.Event()

    def client():
        while not stop.is_set():
            t = time.monotonic()
            try:
                status, body, _ = _get(f"http://127.0.0.1:{front}/", timeout=2)
            except OSError:
                status, body = 0, ""
            answers.append((t, status, json.loads(body) if status == 200 else None))
            time.sleep(0.01)

    th = threading.Thread(target=client, daemon=True)
    try:
        th.start()
        ends = []
        for how in ("resign", "sigkill", "sigstop"):
            leader, doc = _until("one leader", lambda: _leading(runs), 30)
            _until(f"traffic reaches {leader.id}",
                   lambda: any(a[2] and a[2]["id"] == leader.id for a in answers[-5:]), 15)
            time.sleep(1)  # a second of steady traffic to this leader
            t0 = time.monotonic()
            if how == "resign":
                leader.proc.send_signal(signal.SIGTERM)
            elif how == "sigkill":
                leader.proc.kill()
            else:
                os.kill(leader.proc.pid, signal.SIGSTOP)
            bound = (T_MS / 1e3 if how == "sigstop" else 0) + 5
            nxt = _until(f"a new leader after the {how}",
                         lambda: next((a for a in answers if a[0] > t0 and a[2]
                                       and a[2]["token"] > doc["token"]), None), bound)
            ends.append((how, round(nxt[0] - t0, 3)))
            if how == "sigstop":
                os.kill(leader.proc.pid, signal.SIGCONT)
        stop.set()
        th.join(10)
        ok = [a for a in answers if a[1] == 200]
        assert len(ok) > 50, (len(ok), len(answers), ends)
        # No answer from a process that no longer leads: the tokens of the
        # answers, in the order they were asked, never go back.
        tokens = [a[2]["token"] for a in ok]
        back = [(i, tokens[i - 1], tokens[i]) for i in range(1, len(tokens))
                if tokens[i] < tokens[i - 1]]
        assert not back, (back[:5], ends)
        assert len(set(tokens)) == 4, (sorted(set(tokens)), ends)
        print("time from the end of a leader to the first answer of the next:", ends)
    finally:
        stop.set()
        haproxy.send_signal(signal.SIGTERM)
        try:
            haproxy.wait(10)
        except subprocess.TimeoutExpired:
            haproxy.kill()
            haproxy.wait(10)
        for r in runs:
            r.stop()

"""zkelect run's GET /leader and /healthz (--metrics-listen), and a real
load balancer in front of them: Debian's HAProxy, started here on loopback,
health-checks /leader of three zkelect run processes and sends traffic to
the one that leads. Each runs a small service (leader_service.py) that
answers with its fencing token only while its run's /leader says it leads.
Requests go on through a resign, a SIGKILL (crash guard on) and a SIGSTOP
of the leader: traffic moves to each new leader, and no answer ever comes
from a process that no longer leads (tokens never go back)."""

import http.client
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
    """(status, body, headers); OSError when no whole answer came. A server
    that dies between its headers and its body (a job ended with its leader)
    raises http.client.IncompleteRead, which is no OSError: it is made one,
    so a caller that retries on OSError is not ended by it."""
    try:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return r.status, r.read().decode(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), dict(e.headers)
    except http.client.HTTPException as e:
        raise ConnectionError(f"{url}: {e!r}") from e


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


def test_no_200_once_the_lease_it_announced_has_run_out(zk, zk_path, zkelect_bin, test_env,
                                                       proxies):
    """/leader answers from is_leader at the moment of the request, never from
    a state the process remembers: with the leader's link to ZooKeeper cut
    (no renewal can land), each 200 announces a lease deadline no later than
    its arrival plus its lease_left_ms, and no request sent after the
    earliest such deadline gets a 200. An endpoint that kept its last answer
    for even a health check's interval would answer 200 past it."""
    sport, mport = free_ports(1)[0], free_ports(1)[0]
    a = Run(zkelect_bin, test_env, proxies.connect_string, zk_path, "a", sport, mport)
    try:
        _until("a leads", lambda: _leading([a]), 30)
        proxies.blackhole()
        cut = time.monotonic()
        # A renewal's reply already past the proxy lands within a few ms; the
        # deadlines are read from answers asked for after that.
        settle = cut + 0.3
        deadline, late, seen_503 = None, [], None
        stop_at = cut + T_MS / 1e3 + 5
        while time.monotonic() < stop_at:
            sent = time.monotonic()
            status, body, _ = a.leader()
            got = time.monotonic()
            if status == 200:
                if deadline is not None and sent > deadline:
                    late.append(round((sent - deadline) * 1e3, 1))
                if sent >= settle:
                    d = got + json.loads(body)["lease_left_ms"] / 1e3 + 0.002
                    deadline = d if deadline is None else min(deadline, d)
            elif seen_503 is None:
                seen_503 = got
            if seen_503 is not None and got > seen_503 + 1.5:
                break
            time.sleep(0.005)
        assert deadline is not None, "no 200 after the cut: the lease ran out too soon to test"
        assert seen_503 is not None, "the lease never ran out with the link cut"
        assert not late, f"200 answered this many ms after the announced deadline: {late[:10]}"
    finally:
        proxies.set_pass()
        a.stop()


def _safe_status(run):
    try:
        return run.leader()[0]
    except OSError:
        return None


def _ask(front, answers, stop):
    """A client of the balancer at `front`: (time asked, status, body) of
    each request, one every 10 ms, until stop is set."""
    while not stop.is_set():
        t = time.monotonic()
        try:
            status, body, _ = _get(f"http://127.0.0.1:{front}/", timeout=2)
        except OSError:
            status, body = 0, ""
        answers.append((t, status, json.loads(body) if status == 200 else None))
        time.sleep(0.01)


def _end_leaders(runs, answers, hows, asking):
    """Ends the leader each way of `hows` in turn (resign: SIGTERM; sigkill;
    sigstop, resumed once the next answers), each after a second of steady
    traffic to it; the time from each end to the first answer of the next
    term's leader."""
    ends = []

    def _next_term(t0, token):
        assert asking(), "the balancer's client stopped asking (see its thread's exception)"
        return next((a for a in answers if a[0] > t0 and a[2] and a[2]["token"] > token), None)

    for how in hows:
        leader, doc = _until("one leader", lambda: _leading(runs), 30)
        _until(f"traffic reaches {leader.id}",
               lambda: any(a[2] and a[2]["id"] == leader.id for a in answers[-5:]), 15)
        time.sleep(1)
        t0 = time.monotonic()
        if how == "resign":
            leader.proc.send_signal(signal.SIGTERM)
        elif how == "sigkill":
            leader.proc.kill()
        else:
            os.kill(leader.proc.pid, signal.SIGSTOP)
        bound = (T_MS / 1e3 if how == "sigstop" else 0) + 5
        nxt = _until(f"a new leader after the {how}", lambda: _next_term(t0, doc["token"]), bound)
        ends.append((how, round(nxt[0] - t0, 3)))
        if how == "sigstop":
            os.kill(leader.proc.pid, signal.SIGCONT)
    return ends


def _check_answers(answers, at_least, terms, ends):
    """No answer from a process that no longer leads: the tokens of the
    answers, in the order they were asked, never go back; every term served."""
    ok = [a for a in answers if a[1] == 200]
    assert len(ok) > at_least, (len(ok), len(answers), ends)
    tokens = [a[2]["token"] for a in ok]
    back = [(i, tokens[i - 1], tokens[i]) for i in range(1, len(tokens))
            if tokens[i] < tokens[i - 1]]
    assert not back, (back[:5], ends)
    assert len(set(tokens)) == terms, (sorted(set(tokens)), ends)


DOC = HERE.parents[1] / "docs" / "monitoring.md"


def _haproxy_cfg(front, servers):
    """docs/monitoring.md's HAProxy configuration, its addresses moved to
    loopback: the frontend's bind, and one server line per zkelect run."""
    from bed import examples
    mine = "tested by tests/tools/" + Path(__file__).name
    (block,) = [b for b in examples.blocks(DOC)
                if any(m.startswith(mine + " (HAProxy") for m in b.marks)]
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
    th = threading.Thread(target=_ask, args=(front, answers, stop), daemon=True)
    try:
        th.start()
        ends = _end_leaders(runs, answers, ("resign", "sigkill", "sigstop"), th.is_alive)
        stop.set()
        th.join(10)
        _check_answers(answers, 50, 4, ends)
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


def _doc_block(what):
    from bed import examples
    mine = f"tested by tests/tools/{Path(__file__).name} ({what}"
    (block,) = [b for b in examples.blocks(DOC) if any(m.startswith(mine) for m in b.marks)]
    return block.text


NGINX = """
daemon off;
master_process on;
worker_processes 1;
{user}
pid {dir}/nginx.pid;
error_log {dir}/error.log notice;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
{block}
}}
"""


def _nginx_cfg(dirpath, front, sports):
    """docs/monitoring.md's nginx block, its addresses moved to loopback,
    inside the few lines a private nginx needs (paths of its own)."""
    lines, servers = [], list(sports)
    for line in _doc_block("nginx").splitlines():
        if line.strip().startswith("listen "):
            line = f"        listen 127.0.0.1:{front};"
        if line.strip().startswith("server ") and line.strip().endswith(";"):
            if servers:
                lines += [f"    server 127.0.0.1:{p} max_fails=0;" for p in servers]
                servers = None
            continue
        lines.append(line)
    assert servers is None
    user = "user root;" if os.geteuid() == 0 else ""
    return NGINX.format(dir=dirpath, user=user, block="\n".join(lines))


@pytest.mark.skipif(not shutil.which("nginx"), reason="nginx (Debian's package) not installed")
def test_nginx_sends_traffic_only_to_the_leader(zk, zk_path, zkelect_bin, test_env, tmp_path):
    n = 3
    sports, mports, (front,) = free_ports(n), free_ports(n), free_ports(1)
    runs = [Run(zkelect_bin, test_env, zk.connect_string, zk_path, f"n{i}", sports[i], mports[i])
            for i in range(n)]
    ndir = tmp_path / "nginx"
    (ndir / "tmp").mkdir(parents=True)
    (ndir / "nginx.conf").write_text(_nginx_cfg(ndir, front, sports))
    nginx = subprocess.Popen(["nginx", "-p", str(ndir), "-c", str(ndir / "nginx.conf"),
                              "-e", str(ndir / "error.log")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    answers, stop = [], threading.Event()
    th = threading.Thread(target=_ask, args=(front, answers, stop), daemon=True)
    try:
        th.start()
        ends = _end_leaders(runs, answers, ("resign", "sigkill"), th.is_alive)
        stop.set()
        th.join(10)
        _check_answers(answers, 30, 3, ends)
        print("nginx: time from the end of a leader to the first answer of the next:", ends)
    finally:
        stop.set()
        nginx.send_signal(signal.SIGQUIT)
        try:
            nginx.wait(10)
        except subprocess.TimeoutExpired:
            nginx.kill()
            nginx.wait(10)
        for r in runs:
            r.stop()


def test_the_kubernetes_example_probes_as_the_kubelet_would(zk, zk_path, zkelect_bin, test_env):
    """docs/monitoring.md's Deployment: its container's command, run three
    times on loopback (the connect string, the listen address and the job
    moved there), probed on the readinessProbe's and livenessProbe's paths
    and port: ready is the leader's pod alone, live are all three."""
    import yaml
    deploy, service = list(yaml.safe_load_all(_doc_block("runs the container")))
    (ctr,) = deploy["spec"]["template"]["spec"]["containers"]
    ready, live = ctr["readinessProbe"]["httpGet"], ctr["livenessProbe"]["httpGet"]
    cmd = ctr["command"]
    assert (ready["path"], live["path"]) == ("/leader", "/healthz")
    listen = cmd[cmd.index("--metrics-listen") + 1]
    assert listen.endswith(f":{ready['port']}") and live["port"] == ready["port"], cmd
    assert service["spec"]["selector"] == deploy["spec"]["selector"]["matchLabels"]
    grace = int(cmd[cmd.index("--grace") + 1])
    assert deploy["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] * 1000 > grace
    mports, sports = free_ports(3), free_ports(3)
    procs = []
    try:
        for i in range(3):
            argv = list(cmd)
            argv[0] = str(zkelect_bin)
            argv[argv.index("--connect") + 1] = zk.connect_string
            argv[argv.index("--path") + 1] = zk_path
            argv[argv.index("--id") + 1] = f"pod-{i}"  # $(POD_NAME)
            argv[argv.index("--metrics-listen") + 1] = f"127.0.0.1:{mports[i]}"
            argv = argv[:argv.index("--") + 1] + [
                "/usr/bin/python3", str(HERE / "leader_service.py"), str(sports[i]),
                str(mports[i])]
            procs.append(subprocess.Popen(argv, env=test_env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True))

        def probe(port, path):
            try:
                return _get(f"http://127.0.0.1:{port}{path}", timeout=1)[0]
            except OSError:
                return None

        _until("three live pods", lambda: all(probe(p, live["path"]) == 200 for p in mports), 30)
        _until("one ready pod", lambda: [probe(p, ready["path"]) for p in mports].count(200) == 1,
               30)
        readies = [probe(p, ready["path"]) for p in mports]
        assert sorted(readies) == [200, 503, 503], readies
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)

"""zkelect run's Prometheus metrics (--metrics-listen, --metrics-textfile),
read by real parsers (python3-prometheus-client, promtool) and scraped by a
real Prometheus started here on loopback, against a real ensemble."""

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bed.lines import LinePump
from bed.zkbed import free_port

T_MS = 2000


def _families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def _promtool_check_metrics(text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, f"promtool check metrics: {r.stdout}{r.stderr}"


class Run:
    """One `zkelect run ... -- sleep 300`, its stderr collected."""

    def __init__(self, zkelect_bin, env, hosts, path, pid_, *opts, cmd=("sleep", "300")):
        self.started = time.time()
        self.argv = [str(zkelect_bin), "run", "--connect", hosts, "--path", path, "--id", pid_,
                     "--session-timeout-ms", str(T_MS), *opts, "--", *cmd]
        self.proc = subprocess.Popen(self.argv, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self._err = LinePump(self.proc.stderr)
        self.err = self._err.lines

    def wait_line(self, part, timeout):
        deadline = time.monotonic() + timeout
        for _ in range(100000):
            for line in list(self.err):
                if part in line:
                    return line
            if self.proc.poll() is not None and not any(part in l for l in self.err):
                time.sleep(0.1)  # the pump may still hold the last lines
                if not any(part in l for l in self.err):
                    raise AssertionError(f"exited {self.proc.returncode}: {self.err}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no '{part}' within {timeout} s: {self.err}")
            if self._err.ended:
                time.sleep(0.1)
            else:       # until a new line comes, 0.1 s at most
                self._err.wait(lambda line: True, 0.1, since=len(self.err))

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                pass
        # What is left of the group this test started (a SIGKILLed run's
        # keeper and sleep), by its process group id, which is the run's PID.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.wait(10)


@pytest.fixture
def runs():
    made = []
    yield made
    for r in made:
        r.stop()


def _get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.headers.get("Content-Type"), resp.read().decode()


# --- the exposition format --------------------------------------------------------


def test_label_values_are_escaped(zkelect_bin):
    """A quote, a backslash and a newline in a path or id (the library refuses
    a newline in its own ids, but ids of others come from ZooKeeper) stay one
    label value: a real parser gets them back byte for byte."""
    path, pid = '/a"b\\c\nd', 'x\ny"z\\ \u00e9'
    doc = {"version": 1, "connected": True, "counters": {"expiries": 2},
           "elections": [{"path": path, "id": pid, "is_leader": True, "state": "leader",
                          "losses": {"resigned": 1}}]}
    r = subprocess.run([str(zkelect_bin), "__metrics-render"], input=json.dumps(doc),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert '\\"' in r.stdout and "\\n" in r.stdout and "\\\\" in r.stdout
    fams = _families(r.stdout)
    (m,) = fams["leader_election_master_status"].samples
    assert m.labels == {"name": path} and m.value == 1
    (s,) = [s for s in fams["zkelect_state"].samples if s.value == 1]
    assert s.labels == {"path": path, "id": pid, "state": "leader"}
    (l,) = fams["zkelect_leadership_losses"].samples
    assert l.labels == {"path": path, "id": pid, "reason": "resigned"} and l.value == 1
    assert fams["zkelect_session_expirations"].samples[0].value == 2
    _promtool_check_metrics(r.stdout)


def test_render_refuses_what_is_not_a_stats_document(zkelect_bin):
    r = subprocess.run([str(zkelect_bin), "__metrics-render"], input="[1,", capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "not a zkelect_client_stats document" in r.stderr


# --- start-up errors ------------------------------------------------------------------


def test_port_in_use_is_an_error_at_start(zk, zk_path, zkelect_bin, test_env, tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        r = subprocess.run([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                            zk_path, "--metrics-listen", f"127.0.0.1:{port}", "--",
                            "touch", str(tmp_path / "ran")],
                           env=test_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 6, (r.returncode, r.stderr)
    assert f"--metrics-listen 127.0.0.1:{port}" in r.stderr
    assert "Address already in use" in r.stderr, r.stderr
    assert not (tmp_path / "ran").exists(), "the command ran without its metrics"


@pytest.mark.parametrize("spec,said", [
    ("127.0.0.1", "expected HOST:PORT"),
    ("127.0.0.1:http", "bad port"),
    ("127.0.0.1:70000", "bad port"),
    ("no-such-host.invalid:9464", "cannot resolve"),
    ("192.0.2.1:9464", "cannot listen"),   # not an address of this machine
])
def test_bad_listen_address_is_an_error_at_start(zk, zk_path, zkelect_bin, test_env, spec, said):
    r = subprocess.run([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                        zk_path, "--metrics-listen", spec, "--", "true"],
                       env=test_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 6, (r.returncode, r.stderr)
    assert said in r.stderr, r.stderr


def test_unwritable_textfile_is_an_error_at_start(zk, zk_path, zkelect_bin, test_env, tmp_path):
    r = subprocess.run([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                        zk_path, "--metrics-textfile", str(tmp_path / "no" / "such" / "x.prom"),
                        "--", "true"],
                       env=test_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 6, (r.returncode, r.stderr)
    assert "--metrics-textfile" in r.stderr and "No such file or directory" in r.stderr


# --- a live run -------------------------------------------------------------------------


def test_live_endpoint_and_textfile(zk, zk_path, zkelect_bin, test_env, tmp_path, runs):
    textfile = tmp_path / "zkelect.prom"
    r = Run(zkelect_bin, test_env, zk.connect_string, zk_path, 'live"one\\',
            "--metrics-listen", "127.0.0.1:0", "--metrics-textfile", str(textfile),
            "--metrics-interval-ms", "200")
    runs.append(r)
    url = r.wait_line("metrics at http://", 30).split("metrics at ")[1].strip()
    r.wait_line("started", 30)   # CMD started: it leads
    status, ctype, text = _get(url)
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
    _promtool_check_metrics(text)
    fams = _families(text)
    (m,) = fams["leader_election_master_status"].samples
    assert m.labels == {"name": zk_path} and m.value == 1
    assert fams["zkelect_terms_won"].samples[0].labels["id"] == 'live"one\\'
    assert fams["zkelect_terms_won"].samples[0].value == 1
    assert fams["zkelect_session_connected"].samples[0].value == 1
    assert fams["zkelect_lease_remaining_seconds"].samples[0].value > 0

    with pytest.raises(urllib.error.HTTPError) as e:
        _get(url.replace("/metrics", "/other"))
    assert e.value.code == 404

    # The textfile: rewritten every interval (its snapshot time moves), by
    # rename, so no temporary file is ever left beside it.
    def stamp():
        f = _families(textfile.read_text())
        return f["zkelect_state_since_timestamp_seconds"].samples[0].value, f
    deadline = time.monotonic() + 10
    first = textfile.stat().st_mtime_ns
    for _ in range(1000):
        if textfile.stat().st_mtime_ns != first or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert textfile.stat().st_mtime_ns != first, "the textfile was not rewritten"
    _, f = stamp()
    assert f["leader_election_master_status"].samples[0].value == 1
    _promtool_check_metrics(textfile.read_text())
    assert [p.name for p in tmp_path.iterdir()] == ["zkelect.prom"]


@pytest.mark.parametrize("end", ["sigterm", "command-exits", "keeper-killed"])
def test_textfile_says_not_leader_after_run_ends(zk, zk_path, zkelect_bin, test_env, tmp_path,
                                                 runs, end):
    """node_exporter goes on exporting the textfile after run ends: a file
    left saying "leader" would count as a second leader once another process
    took over. Whichever way run ends (but SIGKILL), its last file says it
    does not lead."""
    textfile = tmp_path / "zkelect.prom"
    flag = tmp_path / "exit-now"
    cmd = ("sh", "-c", f"while [ ! -e {flag} ]; do sleep 0.05; done; exit 3")
    r = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "tf", "--metrics-textfile",
            str(textfile), "--metrics-interval-ms", "100", cmd=cmd)
    runs.append(r)
    r.wait_line("started", 30)

    def leader_values():
        f = _families(textfile.read_text())
        return (f["zkelect_is_leader"].samples[0].value,
                f["leader_election_master_status"].samples[0].value)
    deadline = time.monotonic() + 10
    while leader_values() != (1, 1):
        assert time.monotonic() < deadline, textfile.read_text()
        time.sleep(0.05)
    if end == "sigterm":
        os.kill(r.proc.pid, signal.SIGTERM)
        want = 128 + signal.SIGTERM
    elif end == "command-exits":
        flag.touch()
        want = 3
    else:
        (keeper,) = [int(p) for p in os.listdir("/proc") if p.isdigit()
                     and _ppid(int(p)) == r.proc.pid]
        os.kill(keeper, signal.SIGKILL)
        want = 1
    assert r.proc.wait(15) == want, r.err
    assert leader_values() == (0, 0), [l for l in textfile.read_text().splitlines()
                                       if "leader" in l and not l.startswith("#")]
    _promtool_check_metrics(textfile.read_text())
    assert [p.name for p in tmp_path.iterdir() if p.name != "exit-now"] == ["zkelect.prom"]


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def test_quiet_still_names_the_port_it_took(zk, zk_path, zkelect_bin, test_env, runs):
    """Port 0 asks the system for a free port: with --quiet the URL is still
    written (one line on stderr), else nobody could know where to scrape."""
    r = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "quiet", "--quiet",
            "--metrics-listen", "127.0.0.1:0")
    runs.append(r)
    url = r.wait_line("metrics at http://", 30).split("metrics at ")[1].strip()
    assert urllib.parse.urlsplit(url).port != 0
    deadline = time.monotonic() + 30
    while True:
        status, _, text = _get(url)
        if 'leader_election_master_status{name="%s"} 1' % zk_path in text:
            break
        assert time.monotonic() < deadline, text
        time.sleep(0.1)
    assert status == 200
    assert len(r.err) == 1, r.err   # quiet otherwise


def test_stalled_scrapers_block_neither_the_election_nor_other_scrapes(zk, zk_path, zkelect_bin,
                                                                      test_env, runs):
    """Scrapers that connect and never finish their request (or never read)
    hold no lock of the election: a second candidate still takes over when
    the leader resigns, and a well-behaved scrape is still answered."""
    a = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "slow-a",
            "--metrics-listen", "127.0.0.1:0")
    runs.append(a)
    url = a.wait_line("metrics at http://", 30).split("metrics at ")[1].strip()
    a.wait_line("started", 30)
    host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
    stalled = []
    try:
        # From other addresses than the scraper's: each address may hold only
        # a few connections (test_slow_clients_do_not_shut_the_scraper_out).
        for i in range(8):
            s = socket.create_connection((host, port), timeout=5,
                                         source_address=(f"127.0.0.{2 + i // 2}", 0))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never ends the headers
            stalled.append(s)
        b = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "slow-b")
        runs.append(b)
        b.wait_line("waiting: queued behind", 30)
        t0 = time.monotonic()
        status, _, text = _get(url, timeout=5)
        assert status == 200 and time.monotonic() - t0 < 5
        assert 'leader_election_master_status{name="%s"} 1' % zk_path in text
        os.kill(a.proc.pid, signal.SIGTERM)   # a resigns; b must lead at once
        b.wait_line("started", 15)
        # ... and a's own exit does not wait on its stalled scrapers.
        assert a.proc.wait(15) == 128 + signal.SIGTERM
    finally:
        for s in stalled:
            s.close()


class Slowloris:
    """Connections from a given loopback address that send a request's
    headers one byte a second (so no idle timeout ends them) and never finish."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.socks = []
        self.stop = threading.Event()
        self.closed_by_server = 0
        self.thread = threading.Thread(target=self._dribble, daemon=True)

    def open(self, source, n):
        for _ in range(n):
            s = socket.socket()
            s.settimeout(5)
            s.bind((source, 0))
            try:
                s.connect((self.host, self.port))
                s.sendall(b"GET /metrics HTTP/1.1\r\n")
            except OSError:
                s.close()
                continue
            s.setblocking(False)
            self.socks.append(s)

    def _dribble(self):
        for _ in range(120):
            if self.stop.wait(1):
                return
            for s in list(self.socks):
                try:
                    s.send(b"X")
                except OSError:
                    self.socks.remove(s)
                    s.close()
                    self.closed_by_server += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        for s in self.socks:
            s.close()


def _scrape_within(url, seconds):
    """Seconds until a scrape was answered (retried), or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            if _get(url, timeout=2)[0] == 200:
                return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.2)
    return None


@pytest.mark.parametrize("sources", [1, 16])
def test_slow_clients_do_not_shut_the_scraper_out(zk, zk_path, zkelect_bin, test_env, runs,
                                                  sources):
    """Connections that never finish their request's headers, trickled so
    that no idle timeout ends them: from one address they may hold only a
    few of the endpoint's connections (the scraper at another address gets
    in at once); from many, each is closed when its headers are not in
    within the header deadline, and the scraper gets in after that."""
    a = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "loris",
            "--metrics-listen", "127.0.0.1:0")
    runs.append(a)
    url = a.wait_line("metrics at http://", 30).split("metrics at ")[1].strip()
    port = urllib.parse.urlsplit(url).port
    with Slowloris("127.0.0.1", port) as sl:
        for i in range(sources):
            sl.open(f"127.0.0.{i + 2}", 64 if sources == 1 else 6)
        took = _scrape_within(url, 12)
        assert took is not None, (f"no scrape answered within 12 s beside {len(sl.socks)} "
                                  f"slow connections from {sources} address(es)")
        if sources == 1:
            assert took < 2, took
        print(f"\n{sources} source(s): scrape answered after {took:.1f} s")


# --- a real Prometheus --------------------------------------------------------------------


class Prometheus:
    def __init__(self, tmp_path, targets, scrape="250ms"):
        self.dir = tmp_path / "prom"
        self.dir.mkdir()
        cfg = self.dir / "prometheus.yml"
        cfg.write_text(
            "global:\n"
            f"  scrape_interval: {scrape}\n"
            f"  evaluation_interval: {scrape}\n"
            "scrape_configs:\n"
            "  - job_name: zkelect\n"
            f"    scrape_timeout: {scrape}\n"
            "    static_configs:\n"
            f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
        self.proc = None
        for _ in range(3):   # a free port taken between the probe and the bind
            self.port = free_port()
            self.log = open(self.dir / "log.txt", "w")
            self.proc = subprocess.Popen(
                ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={self.dir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
            if self._ready(30):
                return
            self.stop()
        raise AssertionError("prometheus did not start: "
                             + (self.dir / "log.txt").read_text()[-3000:])

    def _ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if _get(f"http://127.0.0.1:{self.port}/-/ready", 2)[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def query(self, q):
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?"
               + urllib.parse.urlencode({"query": q}))
        _, _, body = _get(url)
        doc = json.loads(body)
        assert doc["status"] == "success", doc
        return [({k: v for k, v in r["metric"].items()}, float(r["value"][1]))
                for r in doc["data"]["result"]]

    def wait(self, q, pred, timeout, what):
        deadline = time.monotonic() + timeout
        last = None
        for _ in range(100000):
            last = self.query(q)
            if pred(last):
                return last
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        raise AssertionError(f"{what}: not within {timeout} s; last answer to {q}: {last}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def _leaders(res):
    return sorted(m["instance"] for m, v in res if v == 1)


def test_real_prometheus_sees_one_leader_and_the_failovers(zk, zk_path, zkelect_bin, test_env,
                                                            tmp_path, runs):
    if not shutil.which("prometheus"):
        pytest.fail("prometheus is missing: ./dev installs Debian's package", pytrace=False)
    ports = {"a": free_port(), "b": free_port()}
    inst = {k: f"127.0.0.1:{p}" for k, p in ports.items()}

    def start(who):
        r = Run(zkelect_bin, test_env, zk.connect_string, zk_path, who,
                "--metrics-listen", inst[who])
        runs.append(r)
        r.wait_line("metrics at http://", 30)
        return r

    proc = {"a": start("a")}
    proc["a"].wait_line("started", 30)   # a leads before b joins
    proc["b"] = start("b")
    prom = Prometheus(tmp_path, list(inst.values()))
    try:
        q = "leader_election_master_status"
        res = prom.wait(q, lambda r: len(r) == 2 and _leaders(r) == [inst["a"]], 30,
                        "both runs scraped, a alone leading")
        print("query 1:", res)
        assert all(m["name"] == zk_path for m, _ in res)

        # A resign: SIGTERM makes run stop its command and resign; b follows.
        os.kill(proc["a"].proc.pid, signal.SIGTERM)
        assert proc["a"].proc.wait(30) == 128 + signal.SIGTERM
        res = prom.wait(f"{q} == 1", lambda r: _leaders(r) == [inst["b"]], 30,
                        "leadership moved to b after a's resign")
        print("query 2 (after resign):", res)
        fo_b = prom.wait(f'zkelect_failover_latency_seconds_count{{instance="{inst["b"]}"}}',
                         lambda r: len(r) == 1 and r[0][1] == 1, 30,
                         "b's failover counted")
        print("b failover count:", fo_b)

        # a comes back (on its port) as a follower, then b is SIGKILLed: its
        # session expires and a takes over.
        proc["a"] = start("a")
        prom.wait(q, lambda r: len(r) == 2 and _leaders(r) == [inst["b"]], 30,
                  "a back as a follower, b leading")
        before = prom.query(f'zkelect_failover_latency_seconds_count{{instance="{inst["a"]}"}}')
        assert [v for _, v in before] == [0], before
        os.kill(proc["b"].proc.pid, signal.SIGKILL)
        res = prom.wait(f"{q} == 1", lambda r: _leaders(r) == [inst["a"]], 30,
                        "leadership moved to a after b was killed")
        print("query 3 (after SIGKILL):", res)
        after = prom.wait(f'zkelect_failover_latency_seconds_count{{instance="{inst["a"]}"}}',
                          lambda r: len(r) == 1 and r[0][1] == 1, 30, "a's failover counted")
        print("a failover count:", after)
        buckets = prom.query(
            f'zkelect_failover_latency_seconds_bucket{{instance="{inst["a"]}",le="+Inf"}}')
        assert [v for _, v in buckets] == [1], buckets
        lat = prom.query(f'zkelect_last_failover_latency_seconds{{instance="{inst["a"]}"}}')
        assert len(lat) == 1 and 0 <= lat[0][1] < T_MS / 1000, lat
        print("a last failover latency (s):", lat[0][1])
        won = prom.query(f'zkelect_terms_won_total{{instance="{inst["a"]}"}}')
        assert [v for _, v in won] == [1], won
        # Not checked: "never two at once" over the whole run. Prometheus
        # scrapes each target at its own instant, so right after a resign
        # the old leader's last sample (1, taken before it resigned) stands
        # beside the new leader's until the old target's next scrape fails;
        # a sum over both is 2 there without any overlap. The lease
        # guarantee is tested where both answers share one clock
        # (tests/fault).
    finally:
        prom.stop()


# --- zkelect observe --prometheus ------------------------------------------------------


def test_observe_prometheus_prints_the_election_from_outside(zk, zk_path, zkelect_bin, test_env,
                                                             runs):
    def observe():
        r = subprocess.run([str(zkelect_bin), "observe", "--connect", zk.connect_string,
                            "--path", zk_path, "--prometheus"],
                           env=test_env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        _promtool_check_metrics(r.stdout)
        return _families(r.stdout)

    f = observe()
    assert [(s.labels, s.value) for s in f["zkelect_election_candidates"].samples] == \
        [({"path": zk_path}, 0)]
    assert "zkelect_election_leader_info" not in f

    a = Run(zkelect_bin, test_env, zk.connect_string, zk_path, 'o"a')
    runs.append(a)
    a.wait_line("started", 30)
    b = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "o-b")
    runs.append(b)
    b.wait_line("waiting: queued behind", 30)
    f = observe()
    assert f["zkelect_election_candidates"].samples[0].value == 2
    (info,) = f["zkelect_election_leader_info"].samples
    assert info.labels["id"] == 'o"a' and info.labels["path"] == zk_path and info.value == 1
    assert "-latch-" in info.labels["node"], info.labels
    assert f["zkelect_election_leader_token"].samples[0].value > 0
    age = f["zkelect_election_leader_node_age_seconds"].samples[0].value
    # The node was made after a started: no older than the time since then.
    assert 0 <= age <= time.time() - a.started + 1, age


def test_observe_prometheus_escapes_foreign_ids(zk, zk_path, zkelect_bin, test_env):
    """Anyone who may write under the path can give a candidate any bytes as
    its id (Curator's layout: the id is the node's data). Bytes that are not
    UTF-8 and control characters (a raw CR) would make a scraper reject the
    whole exposition: they come out as U+FFFD; quote, backslash and newline
    keep the format's escapes."""
    from kazoo.client import KazooClient
    foreign = b'evil\xff\xfe\r\x1b[31m"q\\\n\xc2\x85\x7fend \xc3\xa9'
    kz = KazooClient(hosts=zk.connect_string)
    kz.start(timeout=15)
    try:
        kz.create(f"{zk_path}/_c_0b8c9e1e-5a8d-4e6b-9f3e-2d1c0a9b8c7d-latch-", foreign,
                  sequence=True, makepath=True)
        r = subprocess.run([str(zkelect_bin), "observe", "--connect", zk.connect_string,
                            "--path", zk_path, "--prometheus"],
                           env=test_env, capture_output=True, timeout=60)
    finally:
        kz.stop()
        kz.close()
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode("utf-8")  # strict: a scraper takes UTF-8 only
    assert "\r" not in text
    _promtool_check_metrics(text)
    (info,) = _families(text)["zkelect_election_leader_info"].samples
    assert info.labels["id"] == 'evil\ufffd\ufffd\ufffd\ufffd[31m"q\\\n\ufffd\ufffd\ufffdend \u00e9', \
        info.labels


def test_observe_prometheus_refuses_json_and_count(zk, zk_path, zkelect_bin, test_env):
    for extra in (["--json"], ["--count", "1"]):
        r = subprocess.run([str(zkelect_bin), "observe", "--connect", zk.connect_string,
                            "--path", zk_path, "--prometheus", *extra],
                           env=test_env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "--prometheus prints one exposition" in r.stderr, r.stderr


def test_textfile_follows_leadership_between_intervals(zk, zk_path, zkelect_bin, test_env,
                                                       tmp_path, runs):
    """The textfile is rewritten on every change of the election's state,
    not only every --metrics-interval-ms (15 s by default): after an
    election and after a transfer, each process's file says what its
    /metrics says within a write, long before the next interval."""
    files = {pid: tmp_path / f"{pid}.prom" for pid in ("a", "b")}

    def leading(pid):
        f = _families(files[pid].read_text())
        return f["zkelect_is_leader"].samples[0].value

    def until(pid, want, within):
        deadline = time.monotonic() + within
        while leading(pid) != want:
            assert time.monotonic() < deadline, (pid, want, files[pid].read_text())
            time.sleep(0.02)

    a = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "a", "--metrics-textfile",
            str(files["a"]), "--metrics-interval-ms", "60000")
    runs.append(a)
    a.wait_line("started", 30)
    until("a", 1, 2)
    b = Run(zkelect_bin, test_env, zk.connect_string, zk_path, "b", "--metrics-textfile",
            str(files["b"]), "--metrics-interval-ms", "60000")
    runs.append(b)
    b.wait_line("waiting", 30)
    assert leading("b") == 0
    t = subprocess.run([str(zkelect_bin), "transfer", "--connect", zk.connect_string, "--path",
                        zk_path, "--to", "b", "--timeout", "10000"], env=test_env,
                       capture_output=True, text=True, timeout=60)
    assert t.returncode == 0, t.stderr
    b.wait_line("started", 30)
    until("b", 1, 2)
    until("a", 0, 2)

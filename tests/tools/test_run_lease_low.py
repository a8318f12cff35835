"""zkelect run on a lease that runs low (issue 55): with --lease-low-signal
SIG, the command gets SIG when LEASE_LOW comes, before the SIGTERM of the
lease's end, so it can wrap up its work in the time left; with
--metrics-listen it finds ZKELECT_LEADER_URL in its environment and reads
its lease's time left there. The leader's link is held at a fault proxy, so
no renewal lands and the lease runs out on its own clock."""

import json
import subprocess
import time
import uuid

T_MS = 4000

# The command: says what ZKELECT_LEADER_URL answered, then each USR1 and
# TERM with the monotonic time it came (one clock for every process).
JOB = r"""
import json, os, signal, sys, time, urllib.request
out = open(sys.argv[1], "a", buffering=1)
def say(**kw):
    out.write(json.dumps(dict(kw, t=time.monotonic())) + "\n")
with urllib.request.urlopen(os.environ["ZKELECT_LEADER_URL"], timeout=5) as r:
    say(what="leader", status=r.status, doc=json.loads(r.read()))
signal.signal(signal.SIGUSR1, lambda *_: say(what="usr1"))
def term(*_):
    say(what="term")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
say(what="started")
while True:
    time.sleep(0.05)
"""


def _lines(path):
    try:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    except FileNotFoundError:
        return []


def _until(what, cond, within):
    deadline = time.monotonic() + within
    while not (got := cond()):
        assert time.monotonic() < deadline, f"not within {within} s: {what}"
        time.sleep(0.02)
    return got


def test_the_command_gets_its_signal_before_the_lease_runs_out(zkelect_bin, test_env, proxies,
                                                              tmp_path):
    log = tmp_path / "job.log"
    path = f"/t/runlow-{uuid.uuid4().hex[:8]}"
    run = subprocess.Popen(
        [str(zkelect_bin), "run", "--connect", proxies.connect_string, "--path", path,
         "--session-timeout-ms", str(T_MS), "--metrics-listen", "127.0.0.1:0",
         "--lease-low-signal", "USR1", "--grace", "3000", "--",
         "/usr/bin/python3", "-c", JOB, str(log)],
        env=test_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _until("the command started", lambda: any(x["what"] == "started" for x in _lines(log)),
               30)
        (leader,) = [x for x in _lines(log) if x["what"] == "leader"]
        assert leader["status"] == 200 and leader["doc"]["leader"] is True, leader
        assert 0 < leader["doc"]["lease_left_ms"] <= T_MS, leader
        proxies.blackhole()
        _until("the command's SIGTERM", lambda: any(x["what"] == "term" for x in _lines(log)),
               3 * T_MS / 1000)
        got = _lines(log)
        kinds = [x["what"] for x in got]
        assert kinds.count("usr1") == 1, kinds
        assert kinds.index("usr1") < kinds.index("term"), kinds
        usr1 = next(x["t"] for x in got if x["what"] == "usr1")
        term = next(x["t"] for x in got if x["what"] == "term")
        # At half the lease: time to act, not a last-moment notice.
        assert term - usr1 >= 0.2, (term - usr1, kinds)
    finally:
        proxies.set_pass()
        if run.poll() is None:
            run.terminate()
        try:
            _, err = run.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            run.kill()
            _, err = run.communicate(timeout=10)
    assert "LEASE_LOW" in err and "sent USR1 to the command" in err, err


def test_a_signal_the_command_cannot_catch_is_refused(zkelect_bin, test_env):
    for bad, says in (("KILL", "cannot be caught"), ("SIGSTOP", "cannot be caught"),
                      ("NOPE", "expected a signal name"), ("0", "expected a signal name")):
        r = subprocess.run([str(zkelect_bin), "run", "--connect", "127.0.0.1:1", "--path", "/x",
                            "--lease-low-signal", bad, "--", "true"],
                           env=test_env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (bad, r.returncode, r.stderr)
        assert says in r.stderr, (bad, r.stderr)

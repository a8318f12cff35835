"""`zkelect fenced` (issue 54, the CLI form of fenced ZooKeeper writes;
docs/fencing.md): a `zkelect run` whose shell command writes with it
commits while the run leads, and once the run's term is over (resign,
transfer, run and its keeper killed, a write already on its way when the
term ended) the write is refused (exit 4, ZKELECT_EFENCED) and changes
nothing. Real ensemble, real `zkelect run` processes, shell commands.

Each test that shows a refusal also shows that the refused write would
have landed: without the check (the mutation fenced_write_unchecked,
tests/mutation/run.py) every one of them fails, the data node ending with
the deposed term's write.
"""

import os
import signal
import subprocess
import time

import pytest

from bed.joblog import JobLog
from bed.toolutil import Proc, pid_alive, wait_gone

SESSION_MS = 2000


class Log(JobLog):
    """Lines the shell commands append: a word, then fields; the last field
    of each is a CLOCK_REALTIME ns stamp."""

    def parse(self, f):
        return {"kind": f[0], "f": f[1:-1], "ns": int(f[-1])} if len(f) >= 2 else None


@pytest.fixture
def log(tmp_path):
    return Log(tmp_path / "jobs.log")


@pytest.fixture
def runs():
    made = []
    yield made
    for p in made:
        p.kill()


@pytest.fixture
def data(kz, zk_path):
    path = zk_path + "-data"
    kz.create(path, b"init", makepath=True)
    return path


def read(kz, path):
    """(data, version) as the quorum has it now."""
    kz.sync(path)
    d, st = kz.get(path)
    return d.decode(), st.version


def start_run(runs, zkelect_bin, env, zk, path, zid, script, *opts):
    p = Proc([zkelect_bin, "run", "--connect", zk.connect_string, "--path", path, "--id", zid,
              "--session-timeout-ms", SESSION_MS, *opts, "--", "sh", "-c", script],
             env, stdin=False)
    runs.append(p)
    return p


def fenced(zkelect_bin, env, *args, extra_env=None, stdin=None):
    e = dict(env, **(extra_env or {}))
    return subprocess.run([str(zkelect_bin), "fenced", *map(str, args)], env=e,
                          capture_output=True, text=True, timeout=60,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


@pytest.fixture
def env(test_env, zkelect_bin):
    """The tests' environment, with the tool on PATH for the shell commands
    and no ZKELECT_* of the caller's."""
    e = dict(test_env)
    e["PATH"] = f"{zkelect_bin.parent}:{e.get('PATH', '/usr/bin:/bin')}"
    for k in list(e):
        if k in ("ZKELECT_CONNECT", "ZKELECT_AUTH", "ZKELECT_NODE", "ZKELECT_TOKEN"):
            e.pop(k)
    return e


# A job that saves its environment (what a job that outlives its term would
# still hold), writes its term's token with the CLI, logs the outcome, then
# waits.
WRITE_ONCE = r"""
env | grep '^ZKELECT_' > "$LOG.$ZKELECT_ID.env"
zkelect fenced set "$DATA" "$ZKELECT_ID $ZKELECT_TOKEN" 2>>"$LOG.err"
echo "wrote $ZKELECT_ID $? $$ $PPID $(date +%s%N)" >> "$LOG"
trap 'exit 0' TERM
while :; do sleep 0.05 & wait $!; done
"""


def saved_env(log, zid):
    out = {}
    for line in open(f"{log.path}.{zid}.env"):
        k, _, v = line.rstrip("\n").partition("=")
        out[k] = v
    return out


def test_run_passes_what_the_cli_needs_and_its_write_commits(zk, kz, zk_path, data, zkelect_bin,
                                                            env, log, runs):
    """The command gets ZKELECT_NODE (its run's node, full path) and
    ZKELECT_CONNECT beside the token, and `zkelect fenced` with no option
    but the operations commits a batch while the run leads."""
    script = WRITE_ONCE.replace(
        'zkelect fenced set "$DATA" "$ZKELECT_ID $ZKELECT_TOKEN"',
        'zkelect fenced set "$DATA" "$ZKELECT_ID $ZKELECT_TOKEN" create "$DATA/made" x '
        'create "$DATA/gone" "" delete "$DATA/gone"')
    start_run(runs, zkelect_bin, dict(env, DATA=data, LOG=log.path), zk, zk_path, "a", script)
    w = log.wait(lambda r: r["kind"] == "wrote", 20, "a's write")
    assert w["f"][:2] == ["a", "0"], open(f"{log.path}.err").read()
    saved = saved_env(log, "a")
    assert saved["ZKELECT_CONNECT"] == zk.connect_string
    node = saved["ZKELECT_NODE"]
    assert node.startswith(zk_path + "/") and "latch-" in node
    st = kz.exists(node)
    assert st is not None and st.czxid == int(saved["ZKELECT_TOKEN"])
    assert read(kz, data)[0] == f"a {saved['ZKELECT_TOKEN']}"
    assert kz.get(data + "/made")[0] == b"x" and kz.exists(data + "/gone") is None


def test_after_resign_a_write_with_the_terms_node_and_token_is_refused(
        zk, kz, zk_path, data, zkelect_bin, env, log, runs):
    """A resigned (SIGTERM); b leads and writes; a write that still carries
    a's node and token (a job of a's that outlived its term) exits 4 with
    ZKELECT_EFENCED and changes nothing."""
    e = dict(env, DATA=data, LOG=log.path)
    a = start_run(runs, zkelect_bin, e, zk, zk_path, "a", WRITE_ONCE)
    assert log.wait(lambda r: r["kind"] == "wrote", 20, "a's write")["f"][1] == "0"
    start_run(runs, zkelect_bin, e, zk, zk_path, "b", WRITE_ONCE)
    time.sleep(0.3)
    os.kill(a.pid, signal.SIGTERM)
    assert a.wait(15) == 128 + signal.SIGTERM
    wb = log.wait(lambda r: r["kind"] == "wrote" and r["f"][0] == "b", 20, "b's write")
    assert wb["f"][1] == "0", open(f"{log.path}.err").read()
    b_data = read(kz, data)
    assert b_data[0].startswith("b ")
    r = fenced(zkelect_bin, env, "set", data, "a-late", extra_env=saved_env(log, "a"))
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert r.stderr.startswith("zkelect fenced: ZKELECT_EFENCED") and "is gone" in r.stderr, r.stderr
    assert read(kz, data) == b_data


def test_after_a_transfer_the_old_terms_write_is_refused_and_the_drains_commits(
        zk, kz, zk_path, data, zkelect_bin, env, log, runs):
    """`zkelect transfer` hands a's lead to b. a's command, told to stop,
    writes once more during the drain: that commits (a's node stands, b is
    not elected yet); b's write comes after it. Later, a's node and token
    are refused."""
    script = WRITE_ONCE.replace(
        "trap 'exit 0' TERM",
        "trap 'zkelect fenced set \"$DATA\" \"drain $ZKELECT_TOKEN\" 2>>\"$LOG.err\"; "
        "echo \"drained $ZKELECT_ID $? $(date +%s%N)\" >> \"$LOG\"; exit 0' TERM")
    e = dict(env, DATA=data, LOG=log.path)
    start_run(runs, zkelect_bin, e, zk, zk_path, "a", script, "--grace", 5000)
    assert log.wait(lambda r: r["kind"] == "wrote", 20, "a's write")["f"][1] == "0"
    start_run(runs, zkelect_bin, e, zk, zk_path, "b", WRITE_ONCE)
    time.sleep(0.3)
    t = subprocess.run([str(zkelect_bin), "transfer", "--connect", zk.connect_string, "--path",
                        zk_path, "--to", "b"], env=env, capture_output=True, text=True, timeout=60)
    assert t.returncode == 0, t.stderr
    d = log.wait(lambda r: r["kind"] == "drained", 20, "a's write in the drain")
    assert d["f"] == ["a", "0"], open(f"{log.path}.err").read()
    wb = log.wait(lambda r: r["kind"] == "wrote" and r["f"][0] == "b", 20, "b's write")
    assert wb["f"][1] == "0" and wb["ns"] > d["ns"]
    b_data = read(kz, data)
    assert b_data[0].startswith("b ")
    r = fenced(zkelect_bin, env, "set", data, "a-late", extra_env=saved_env(log, "a"))
    assert r.returncode == 4 and "ZKELECT_EFENCED" in r.stderr, (r.returncode, r.stderr)
    assert read(kz, data) == b_data


# A job that keeps writing its term's token in a process of its own (a
# child of the command, which the keeper's death does not take with it: only
# the command itself dies with the keeper), logging each outcome.
WRITE_LOOP = r"""
(
  i=0
  while [ $i -lt 2000 ]; do
    zkelect fenced set "$DATA" "$ZKELECT_ID $ZKELECT_TOKEN $i" 2>"$LOG.$ZKELECT_ID.err"
    echo "try $ZKELECT_ID $i $? $(date +%s%N)" >> "$LOG"
    i=$((i+1))
    sleep 0.05
  done
) &
echo "job $ZKELECT_ID $! $PPID $(date +%s%N)" >> "$LOG"
wait
"""


def test_a_job_that_outlives_its_killed_run_and_keeper_writes_nothing_after_the_next_term(
        zk, kz, zk_path, data, zkelect_bin, env, log, runs):
    """The process tree's promise broken from outside: a's run and its
    keeper are SIGKILLed at once (stopped first, so neither can act), and
    a process of a's command lives on, writing in a loop with a's node and
    token. The
    crash guard (or the session's expiry) ends a's term; b leads and
    writes once. Every write of a's after that exits 4, and b's data
    stays."""
    e = dict(env, DATA=data, LOG=log.path)
    a = start_run(runs, zkelect_bin, e, zk, zk_path, "a", WRITE_LOOP)
    job = log.wait(lambda r: r["kind"] == "job", 20, "a's job")
    job_pid, keeper = int(job["f"][1]), int(job["f"][2])
    try:
        log.wait(lambda r: r["kind"] == "try" and r["f"][2] == "0", 20, "a write of a's")
        start_run(runs, zkelect_bin, e, zk, zk_path, "b", WRITE_ONCE)
        time.sleep(0.3)
        for pid in (a.pid, keeper):
            os.kill(pid, signal.SIGSTOP)
        for pid in (a.pid, keeper):
            os.kill(pid, signal.SIGKILL)
        wb = log.wait(lambda r: r["kind"] == "wrote" and r["f"][0] == "b",
                      SESSION_MS / 1000 + 20, "b's write")
        assert wb["f"][1] == "0", open(f"{log.path}.err").read()
        assert pid_alive(job_pid), "a's job died with its run: nothing to show"
        # Four more attempts of a's, begun after b's write returned.
        log.wait(lambda r: r["kind"] == "try" and r["ns"] > wb["ns"] and
                 sum(1 for x in log.records() if x["kind"] == "try" and x["ns"] > wb["ns"]) >= 5,
                 30, "a's writes after b's")
        b_data = read(kz, data)
    finally:
        os.kill(job_pid, signal.SIGKILL)
        wait_gone(job_pid, 5)
    tries = [r for r in log.records() if r["kind"] == "try"]
    assert tries[0]["f"][2] == "0"
    late = [r for r in tries if r["ns"] > wb["ns"]]
    assert late and all(r["f"][2] == "4" for r in late), late
    assert "ZKELECT_EFENCED" in open(f"{log.path}.a.err").read()
    assert b_data[0].startswith("b "), b_data
    assert read(kz, data) == b_data


def test_a_write_already_on_its_way_when_the_term_ends_is_refused(
        zk, kz, zk_path, data, zkelect_bin, env, log, runs, proxies):
    """a's command writes through a fault proxy that holds everything it
    sends for HOLD ms: the read of a's node passes (the node stands), and
    the multi waits in the proxy while a resigns (its command is killed
    with the write in flight), b is elected and writes. Then the proxy lets
    a's multi through: ZooKeeper refuses it, b's data stays."""
    HOLD = 3000
    script = r"""
echo "job $ZKELECT_ID $$ $PPID $(date +%s%N)" >> "$LOG"
exec zkelect fenced --connect "$PROXY" --session-timeout-ms 30000 --timeout 30000 \
  set "$DATA" "$ZKELECT_ID $ZKELECT_TOKEN"
"""
    e = dict(env, DATA=data, LOG=log.path, PROXY=proxies.connect_string)
    proxies.delay(HOLD, direction="c2s")
    a = start_run(runs, zkelect_bin, e, zk, zk_path, "a", script, "--grace", 0)
    log.wait(lambda r: r["kind"] == "job", 20, "a's job")
    deadline = time.monotonic() + 4 * HOLD / 1000 + 10
    while proxies.stats()["total"]["requests"].get("multi", 0) < 1:
        assert time.monotonic() < deadline, "a's write never reached the proxy"
        time.sleep(0.01)
    t_held = time.monotonic()
    start_run(runs, zkelect_bin, dict(e, PROXY=""), zk, zk_path, "b", WRITE_ONCE)
    os.kill(a.pid, signal.SIGTERM)
    wb = log.wait(lambda r: r["kind"] == "wrote" and r["f"][0] == "b", 20, "b's write")
    assert wb["f"][1] == "0", open(f"{log.path}.err").read()
    assert time.monotonic() - t_held < HOLD / 1000 - 0.3, "b's write was not inside a's hold"
    b_data = read(kz, data)
    assert b_data[0].startswith("b ")
    # The held multi reaches the server HOLD after it reached the proxy;
    # ZooKeeper has answered it once a request sent behind it is answered.
    time.sleep(max(0.0, t_held + HOLD / 1000 - time.monotonic()) + 0.5)
    proxies.set_pass()
    assert proxies.stats()["total"]["bytes_out_c2s"] >= proxies.stats()["total"]["bytes_in_c2s"]
    time.sleep(0.5)
    assert read(kz, data) == b_data


def test_exit_statuses_and_messages(zk, kz, zk_path, data, zkelect_bin, env, runs, log):
    """2 for bad arguments (nothing asked), 4 for a node that is not the
    token's, 1 for an operation ZooKeeper refuses (named as given), 0 and
    nothing printed for a commit; DATA "-" is standard input."""
    base = ["--connect", zk.connect_string]
    r = fenced(zkelect_bin, env, *base, "set", data, "x")
    assert r.returncode == 2 and "--node (or ZKELECT_NODE) is required" in r.stderr, r.stderr
    r = fenced(zkelect_bin, env, *base, "--node", data, "--fencing-token", "x1", "set", data, "x")
    assert r.returncode == 2 and "--fencing-token" in r.stderr, r.stderr
    for ops, why in ((["put", data, "x"], "unknown operation 'put'"),
                     (["set", data], "set needs PATH and DATA"),
                     (["delete"], "delete needs PATH"),
                     (["set", "rel", "x"], "set rel:")):
        r = fenced(zkelect_bin, env, *base, "--node", data, "--fencing-token", "1", *ops)
        assert r.returncode == 2 and why in r.stderr, (ops, r.stderr)
    r = fenced(zkelect_bin, env, *base, "--node", data, "--fencing-token", "1")
    assert r.returncode == 2 and "no operand" in r.stderr, r.stderr

    e = dict(env, DATA=data, LOG=log.path)
    start_run(runs, zkelect_bin, e, zk, zk_path, "a", WRITE_ONCE)
    assert log.wait(lambda r: r["kind"] == "wrote", 20, "a's write")["f"][1] == "0"
    term = saved_env(log, "a")
    r = fenced(zkelect_bin, env, "set", data, "-", stdin="from\nstdin\0", extra_env=term)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert kz.get(data)[0] == b"from\nstdin\0"
    r = fenced(zkelect_bin, env, "set", data, "y", "create", data, "z", extra_env=term)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("zkelect fenced: ZKELECT_EZK") and f"(create {data})" in r.stderr
    assert kz.get(data)[0] == b"from\nstdin\0"    # the set before it was not committed
    wrong = dict(term, ZKELECT_TOKEN=str(int(term["ZKELECT_TOKEN"]) - 1))
    r = fenced(zkelect_bin, env, "set", data, "w", extra_env=wrong)
    assert r.returncode == 4 and "another term's node" in r.stderr, r.stderr
    assert kz.get(data)[0] == b"from\nstdin\0"

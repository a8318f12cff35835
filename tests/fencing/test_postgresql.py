"""The PostgreSQL fencing guard (fencing/fencing.sql, docs/fencing.md)
against Debian's PostgreSQL server and a real ZooKeeper: a deposed leader's
write is refused in its own transaction, whichever way it comes late, and
the same scenarios with the check taken out show the write landing (so the
tests can fail).

(a) Leader A is SIGSTOPped past the session timeout with its PostgreSQL
    connection open; B is elected and writes; A resumes and writes at once.
(b) A's write is already sent when A is stopped: held at a fault proxy in
    front of PostgreSQL, released after B's first write.
(d) A `zkelect run` job in shell (psql, $ZKELECT_TOKEN) in the middle of its
    transaction when its zkelect run is SIGKILLed (crash guard on)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bed.faultproxy import FaultProxy
from bed.lines import LinePump
from bed.pgbed import PgServer

REPO = Path(__file__).resolve().parents[2]
FENCING_SQL = REPO / "fencing" / "fencing.sql"
T_MS = 4000
# The guard with its check taken out: every token passes.
NO_CHECK = """CREATE OR REPLACE FUNCTION zkelect.fence(p_resource text, p_token bigint)
RETURNS bigint LANGUAGE sql AS $$ SELECT p_token $$;"""


@pytest.fixture(scope="module")
def pg():
    with PgServer() as server:
        yield server


@pytest.fixture
def db(pg):
    """A fresh schema: fencing.sql installed (twice: it is idempotent) and
    the table the writers write."""
    pg.psql("DROP SCHEMA IF EXISTS zkelect CASCADE; DROP TABLE IF EXISTS items;")
    for _ in range(2):
        r = subprocess.run(pg.psql_argv("-f", str(FENCING_SQL)), capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    pg.psql("CREATE TABLE items (id bigserial PRIMARY KEY, label text NOT NULL, "
            "token bigint NOT NULL)")
    return pg


def rows(pg):
    out = pg.psql("SELECT label, token FROM items ORDER BY id").stdout.split()
    return [(l.split("|")[0], int(l.split("|")[1])) for l in out]


def no_older_token_after_a_newer(got):
    """Rows in commit order (their ids): none carries a token below one
    written before it."""
    best = 0
    for label, token in got:
        if token < best:
            return False
        best = max(best, token)
    return True


class Writer:
    def __init__(self, hosts, path, pid, dsn, env):
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("fenced_writer.py")), hosts, path, pid,
             dsn, "items"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.out = LinePump(self.proc.stdout)
        self.err = LinePump(self.proc.stderr)
        self.seen = 0

    def line(self, timeout):
        deadline = time.monotonic() + timeout
        while len(self.out.lines) <= self.seen:
            assert self.proc.poll() is None or len(self.out.lines) > self.seen, self.err.lines
            assert time.monotonic() < deadline, (self.out.lines, self.err.lines)
            time.sleep(0.01)
        self.seen += 1
        return self.out.lines[self.seen - 1]

    def leader_token(self, timeout=60):
        line = self.line(timeout)
        assert line.startswith("LEADER "), line
        return int(line.split()[1])

    def write(self, label):
        self.proc.stdin.write(f"write {label}\n")
        self.proc.stdin.flush()

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.proc.kill()
            self.proc.wait(15)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "bindings" / "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.parametrize("check", ["guard", "no-check"])
def test_a_paused_leader_writes_after_the_next_leader(zk, zk_path, db, check):
    if check == "no-check":
        db.psql(NO_CHECK)
    a = Writer(zk.connect_string, zk_path, "A", db.dsn, _env())
    b = None
    try:
        ta = a.leader_token()
        a.write("a1")
        assert a.line(30) == "OK"
        b = Writer(zk.connect_string, zk_path, "B", db.dsn, _env())
        time.sleep(0.5)  # B in line behind A
        os.kill(a.proc.pid, signal.SIGSTOP)
        tb = b.leader_token(T_MS / 1e3 + 30)
        assert tb > ta
        b.write("b1")
        assert b.line(30) == "OK"
        os.kill(a.proc.pid, signal.SIGCONT)
        a.write("a2")  # at once: A does not know yet, and does not ask
        answer = a.line(30)
        got = rows(db)
        if check == "guard":
            assert answer.startswith("FENCED ZKE01"), answer
            assert got == [("a1", ta), ("b1", tb)], got
        else:
            # Without the check the deposed leader's write lands after the
            # new leader's: what the guard is for.
            assert answer == "OK" and got == [("a1", ta), ("b1", tb), ("a2", ta)], (answer, got)
            assert not no_older_token_after_a_newer(got)
    finally:
        for w in (a, b):
            if w:
                w.stop()


@pytest.mark.parametrize("check", ["guard", "no-check"])
def test_a_write_in_flight_when_the_next_leader_writes(zk, zk_path, db, check):
    if check == "no-check":
        db.psql(NO_CHECK)
    proxy = FaultProxy(f"127.0.0.1:{db.port}", raw=True)
    a = b = None
    try:
        dsn_a = db.dsn.replace(f"port={db.port}", f"port={proxy.port}")
        a = Writer(zk.connect_string, zk_path, "A", dsn_a, _env())
        ta = a.leader_token()
        b = Writer(zk.connect_string, zk_path, "B", db.dsn, _env())
        time.sleep(0.5)
        # A's write leaves A and is held on the way: its bytes wait at the
        # proxy (delivered in order later, as TCP retransmission would).
        proxy.blackhole(discard=False)
        a.write("a-late")
        time.sleep(0.3)
        os.kill(a.proc.pid, signal.SIGSTOP)  # paused with its write in flight
        tb = b.leader_token(T_MS / 1e3 + 30)
        b.write("b1")
        assert b.line(30) == "OK"
        proxy.set_pass()  # the held write reaches the server now
        os.kill(a.proc.pid, signal.SIGCONT)
        answer = a.line(30)
        got = rows(db)
        if check == "guard":
            assert answer.startswith("FENCED ZKE01"), answer
            assert got == [("b1", tb)], got
        else:
            assert answer == "OK" and got == [("b1", tb), ("a-late", ta)], (answer, got)
            assert not no_older_token_after_a_newer(got)
    finally:
        for w in (a, b):
            if w:
                w.stop()
        proxy.close()


JOB = """psql -X -q -v ON_ERROR_STOP=1 -d "$DSN" -c "BEGIN; \\
SELECT zkelect.fence('items', $ZKELECT_TOKEN); SELECT pg_sleep($PAUSE); \\
INSERT INTO items (label, token) VALUES ('$ZKELECT_ID', $ZKELECT_TOKEN); COMMIT;" >/dev/null
exec sleep 300
"""


@pytest.mark.parametrize("check", ["guard", "no-check"])
def test_a_run_job_killed_mid_transaction(zk, zk_path, db, zkelect_bin, test_env, tmp_path,
                                          check):
    """(d): the job is a shell script with psql and $ZKELECT_TOKEN. A's
    zkelect run is SIGKILLed while its job's transaction is open on the
    server (the crash guard hands over at once, the keeper kills psql, but
    the server goes on with what it was sent); B's job writes at once. The
    guard makes B's fenced write wait for A's transaction, so nothing of an
    older term commits after B's; without it A's row lands after B's."""
    if check == "no-check":
        db.psql(NO_CHECK)
    job = tmp_path / "job.sh"
    job.write_text(JOB)
    procs = []

    def run(pid_, pause):
        env = dict(test_env, DSN=db.dsn, PAUSE=str(pause))
        p = subprocess.Popen([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path",
                              zk_path, "--id", pid_, "--session-timeout-ms", str(T_MS), "--",
                              "sh", str(job)], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        procs.append(p)
        return p, LinePump(p.stderr)

    try:
        a, a_err = run("A", 3)
        deadline = time.monotonic() + 30
        while "pg_sleep" not in db.psql("SELECT query FROM pg_stat_activity "
                                        "WHERE query LIKE 'BEGIN;%'").stdout:
            assert time.monotonic() < deadline, a_err.lines
            time.sleep(0.05)
        b, b_err = run("B", 0)
        time.sleep(0.5)  # B in line behind A
        a.kill()  # mid-transaction: the server holds A's open transaction
        deadline = time.monotonic() + 30
        while len(rows(db)) < 2:
            assert time.monotonic() < deadline, (rows(db), b_err.lines)
            time.sleep(0.05)
        got = rows(db)
        assert [l for l, _ in got] in (["A", "B"], ["B", "A"]), got
        if check == "guard":
            assert no_older_token_after_a_newer(got), got
        else:
            assert got[0][0] == "B" and not no_older_token_after_a_newer(got), got
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(15)

"""The fenced-transaction helpers of the bindings (docs/fencing.md, "3. From
your program") against Debian's PostgreSQL 15 and the real ZooKeeper
ensemble: Python's zkelect.fenced_transaction, Go's zkelect.FencedTx
(tests/fencing/go, a module of its own with Debian's lib/pq) and Java's
org.zkelect.Fencing.transaction (tests/fencing/java/FencingCheck.java with
Debian's PostgreSQL JDBC driver).

In each language: the helper commits a leader's transaction; an error of
the user's statements rolls it back; and leader A, deposed (it resigned)
and B elected and written, has its transaction through the helper refused
(SQLSTATE ZKE01, the language's "deposed" error), nothing of it kept, while
B's commit. Each runs twice, with the guard and with its check taken out
(every token passes): there the deposed leader's transaction commits and
the language's own test fails, which the "no-check" run asserts.

Every binding's copy of the fence statement and of its SQLSTATE is held to
fencing/fencing.sql."""

import re
from pathlib import Path

import psycopg2
import pytest

import zkelect
from bed import sh
from bed.pgbed import PgServer

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FENCING_SQL = REPO / "fencing" / "fencing.sql"
# The guard with its check taken out: every token passes.
NO_CHECK = """CREATE OR REPLACE FUNCTION zkelect.fence(p_resource text, p_token bigint)
RETURNS bigint LANGUAGE sql AS $$ SELECT p_token $$;"""
PG_JDBC = "/usr/share/java/postgresql.jar"
LIB_PQ = "/usr/share/gocode/src/github.com/lib/pq"
TIMEOUT = 600


@pytest.fixture(scope="module")
def pg():
    with PgServer() as server:
        yield server


@pytest.fixture(params=["guard", "no-check"])
def db(pg, request):
    pg.psql("DROP SCHEMA IF EXISTS zkelect CASCADE; DROP TABLE IF EXISTS items;")
    r = sh.run(pg.psql_argv("-f", str(FENCING_SQL)), 60)
    assert r.returncode == 0, r.stderr
    pg.psql("CREATE TABLE items (id bigserial PRIMARY KEY, label text NOT NULL, "
            "token bigint NOT NULL)")
    if request.param == "no-check":
        pg.psql(NO_CHECK)
    pg.check = request.param
    return pg


def labels(pg, prefix):
    out = pg.psql(f"SELECT label FROM items WHERE label LIKE '{prefix}%' ORDER BY id").stdout
    return out.split()


# ---- Python ------------------------------------------------------------------

def _leader(client, path, pid):
    e = client.election(path, pid)
    e.volunteer()
    e.await_leader(30)
    return e, e.fencing_token()


def _insert(cur, label, token):
    cur.execute("INSERT INTO items (label, token) VALUES (%s, %s)", (label, token))


def test_python_helper_commits_and_rolls_back(zk, zk_path, db):
    conn = psycopg2.connect(db.dsn)
    res = zk_path.strip("/").replace("/", "-")
    try:
        with zkelect.connect(zk.connect_string) as client:
            e, token = _leader(client, zk_path, "py-a")
            with zkelect.fenced_transaction(conn, res, token) as cur:
                _insert(cur, f"{res}-a1", token)
            assert labels(db, res) == [f"{res}-a1"]
            with pytest.raises(KeyError):
                with zkelect.fenced_transaction(conn, res, token) as cur:
                    _insert(cur, f"{res}-lost", token)
                    raise KeyError("the user's error")
            with pytest.raises(psycopg2.errors.DivisionByZero):
                with zkelect.fenced_transaction(conn, res, token) as cur:
                    _insert(cur, f"{res}-lost2", token)
                    cur.execute("SELECT 1/0")
            assert labels(db, res) == [f"{res}-a1"]
            conn.autocommit = True
            with pytest.raises(ValueError):
                with zkelect.fenced_transaction(conn, res, token):
                    pass
            e.close()
    finally:
        conn.close()


def test_python_deposed_leaders_transaction_is_refused(zk, zk_path, db):
    conn_a, conn_b = psycopg2.connect(db.dsn), psycopg2.connect(db.dsn)
    res = zk_path.strip("/").replace("/", "-")
    try:
        with zkelect.connect(zk.connect_string) as client:
            a, ta = _leader(client, zk_path, "py-a")
            with zkelect.fenced_transaction(conn_a, res, ta) as cur:
                _insert(cur, f"{res}-a1", ta)
            a.resign()  # deposed; a paused A would not even know
            b, tb = _leader(client, zk_path, "py-b")
            assert tb > ta
            with zkelect.fenced_transaction(conn_b, res, tb) as cur:
                _insert(cur, f"{res}-b1", tb)
            refused = None
            try:
                with zkelect.fenced_transaction(conn_a, res, ta) as cur:
                    _insert(cur, f"{res}-a2", ta)
            except zkelect.Deposed as exc:
                refused = exc
            got = labels(db, res)
            if db.check == "guard":
                assert isinstance(refused, zkelect.Fenced) and refused.token == ta, refused
                assert refused.__cause__.pgcode == "ZKE01"
                assert got == [f"{res}-a1", f"{res}-b1"], got
                with zkelect.fenced_transaction(conn_b, res, tb) as cur:
                    _insert(cur, f"{res}-b2", tb)
                assert labels(db, res) == [f"{res}-a1", f"{res}-b1", f"{res}-b2"]
            else:
                # Without the check the deposed leader's write lands after
                # the new leader's: what the guard is for.
                assert refused is None and got == [f"{res}-a1", f"{res}-b1", f"{res}-a2"], got
            a.close()
            b.close()
    finally:
        conn_a.close()
        conn_b.close()


# ---- Go ----------------------------------------------------------------------

def test_go_fenced_tx(test_env, build_dir, db):
    sh.need(("go", "golang-go"), "pkg-config", path=test_env.get("PATH"))
    sh.need_library(build_dir)
    if not Path(LIB_PQ).is_dir():
        pytest.fail("lib/pq is not installed (Debian: apt-get install golang-github-lib-pq-dev; "
                    "./dev installs it)", pytrace=False)
    env = dict(test_env)
    env.update(GOFLAGS="-mod=mod", CGO_ENABLED="1", GOPROXY="off",
               GOCACHE=str(build_dir / "bindings" / "go" / "gocache"),
               ZKELECT_TEST_PG_DSN=db.dsn + " sslmode=disable")
    env.setdefault("GOTOOLCHAIN", "local")
    proc = sh.run(["go", "test", "-count=1", "-v", "./..."], TIMEOUT, cwd=HERE / "go", env=env)
    out = proc.stdout + "\n" + proc.stderr
    names = ["TestFencedTxCommits", "TestFencedTxRollsBackOnTheUsersError",
             "TestDeposedLeadersTransactionIsRefused"]
    if db.check == "guard":
        assert proc.returncode == 0, out[-20000:]
        for name in names:
            assert re.search(rf"--- PASS: {name} ", out), f"{name} did not pass:\n{out[-20000:]}"
    else:
        assert proc.returncode != 0, out[-20000:]
        assert re.search(r"--- FAIL: TestDeposedLeadersTransactionIsRefused ", out), out[-20000:]
        assert "the deposed leader's transaction committed" in out, out[-20000:]


# ---- Java --------------------------------------------------------------------

@pytest.fixture(scope="module")
def java_out(build_dir):
    sh.need(("javac", "default-jdk-headless"), "swig", "pkg-config")
    if not Path(PG_JDBC).exists():
        pytest.fail("the PostgreSQL JDBC driver is not installed (Debian: apt-get install "
                    "libpostgresql-jdbc-java; ./dev installs it)", pytrace=False)
    sh.need_library(build_dir)
    return sh.build_binding(REPO / "bindings" / "java" / "build.sh",
                            build_dir / "script-bindings" / "java", build_dir)


def test_java_fencing_transaction(test_env, java_out, db):
    env = dict(test_env)
    env["ZKELECT_TEST_PG_URL"] = f"jdbc:postgresql://127.0.0.1:{db.port}/postgres?user={db.user}"
    proc = sh.run(["java", f"-Djava.library.path={java_out}",
                   "-cp", f"{java_out}/zkelect.jar:{PG_JDBC}", str(HERE / "java" / "FencingCheck.java")],
                  TIMEOUT, cwd=HERE, env=env)
    out = proc.stdout + "\n" + proc.stderr
    if db.check == "guard":
        assert proc.returncode == 0, out
        for name in ("commits", "rollsBack", "deposed"):
            assert f"PASS {name}" in proc.stdout, out
    else:
        assert proc.returncode == 1, out
        assert "PASS rollsBack" in proc.stdout, out
        assert "FAIL the deposed leader's transaction committed" in proc.stdout, out


# ---- one source: fencing.sql -------------------------------------------------

def test_every_bindings_copy_matches_fencing_sql():
    sql = FENCING_SQL.read_text()
    state = re.search(r"ERRCODE = '(ZKE\d\d)',", sql).group(1)
    assert re.search(r"CREATE OR REPLACE FUNCTION zkelect\.fence\(p_resource text, p_token bigint\)",
                     sql)
    assert zkelect.DEPOSED_SQLSTATE == state and zkelect.FENCE_SQL == "SELECT zkelect.fence($1, $2)"
    go = (REPO / "bindings" / "go" / "fencing.go").read_text()
    assert f'DeposedSQLState = "{state}"' in go and 'FenceSQL        = "SELECT zkelect.fence($1, $2)"' in go
    java = (REPO / "bindings" / "java" / "src" / "main" / "java" / "org" / "zkelect" /
            "Fencing.java").read_text()
    assert f'DEPOSED_SQLSTATE = "{state}"' in java and 'FENCE_SQL = "SELECT zkelect.fence(?, ?)"' in java
    rust = (REPO / "bindings" / "rust" / "zkelect" / "src" / "lib.rs").read_text()
    assert f'pub const DEPOSED_SQLSTATE: &str = "{state}";' in rust
    assert 'pub const FENCE_SQL: &str = "SELECT zkelect.fence($1, $2)";' in rust
    lua = (REPO / "bindings" / "luajit" / "zkelect" / "layer.lua").read_text()
    assert f'M.DEPOSED_SQLSTATE = "{state}"' in lua
    assert 'M.FENCE_SQL = "SELECT zkelect.fence($1, $2)"' in lua

"""A leader that writes to PostgreSQL through the fencing guard, driven by
tests/fencing/test_postgresql.py over stdin/stdout:

    argv: HOSTS PATH ID DSN RESOURCE
    prints  LEADER <token>   once elected and connected to PostgreSQL
    reads   write <label>    one fenced transaction (zkelect.fence, then an
                             INSERT into items), sent as one message and
                             committed; prints OK, or FENCED <sqlstate>, or
                             ERROR <sqlstate> <message>
            quit

It writes when told, without asking whether it still leads: that is the
deposed leader the guard is for (a pause after its last check)."""

import sys

import psycopg2
import zkelect

hosts, path, pid, dsn, resource = sys.argv[1:6]
with zkelect.connect(hosts, session_timeout_ms=4000, crash_guard="off") as client:
    with client.election(path, pid) as e:
        e.volunteer()
        e.await_leader(60)
        token = e.fencing_token()
        db = psycopg2.connect(dsn)
        db.autocommit = True  # the one message below is its own transaction
        print(f"LEADER {token}", flush=True)
        for line in sys.stdin:
            words = line.split()
            if not words or words[0] == "quit":
                break
            label = words[1]
            try:
                with db.cursor() as cur:
                    # One message: what a leader has in flight is all of it.
                    cur.execute("BEGIN; SELECT zkelect.fence(%s, %s); "
                                "INSERT INTO items (label, token) VALUES (%s, %s); COMMIT;",
                                (resource, token, label, token))
                print("OK", flush=True)
            except psycopg2.Error as err:
                kind = "FENCED" if err.pgcode == "ZKE01" else "ERROR"
                print(f"{kind} {err.pgcode} {str(err).splitlines()[0]}", flush=True)
                with db.cursor() as cur:
                    cur.execute("ROLLBACK")  # the failed BEGIN block, if it is open

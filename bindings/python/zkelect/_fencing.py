"""A fenced PostgreSQL transaction over any DB-API 2 connection
(docs/fencing.md, "PostgreSQL"): the leader's statements run in one
transaction that begins with zkelect.fence(resource, token), the check of
fencing/fencing.sql, so a deposed leader's transaction is refused and
changes nothing. No database driver is imported here: the connection is
the caller's (psycopg2, psycopg 3, pg8000...)."""

import contextlib
import sys

from ._lib import CLASSES

# What fencing.sql defines: the statement a fenced transaction begins with
# and the SQLSTATE of its refusal. tests/fencing/test_helpers.py holds
# these, and every binding's copy, to fencing.sql.
FENCE_SQL = "SELECT zkelect.fence($1, $2)"
DEPOSED_SQLSTATE = "ZKE01"

# FENCE_SQL's two parameters in each DB-API paramstyle.
_PLACEHOLDERS = {
    "format": ("SELECT zkelect.fence(%s, %s)", tuple),
    "pyformat": ("SELECT zkelect.fence(%(resource)s, %(token)s)", dict),
    "qmark": ("SELECT zkelect.fence(?, ?)", tuple),
    "numeric": ("SELECT zkelect.fence(:1, :2)", tuple),
    "named": ("SELECT zkelect.fence(:resource, :token)", dict),
}

_Fenced = CLASSES[-19]  # ZKELECT_EFENCED's class, zkelect.Fenced


class Deposed(_Fenced):
    """PostgreSQL refused a fenced transaction (SQLSTATE ZKE01): a later
    term has written to the resource, so this process no longer leads.
    Nothing the transaction did was kept. A zkelect.Fenced, as a fenced
    ZooKeeper write refused for the same reason is; .resource and .token
    are what the transaction carried, __cause__ the driver's error."""

    __module__ = "zkelect"

    def __init__(self, message, resource=None, token=None):
        super().__init__(message)
        self.resource = resource
        self.token = token


def sqlstate(exc):
    """The SQLSTATE of a driver's exception, or None: psycopg2's .pgcode,
    psycopg 3's .sqlstate, pg8000's args[0]["C"]."""
    for attr in ("pgcode", "sqlstate"):
        code = getattr(exc, attr, None)
        if isinstance(code, str):
            return code
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], dict) and isinstance(args[0].get("C"), str):
        return args[0]["C"]
    return None


def _paramstyle(conn):
    module = sys.modules.get(type(conn).__module__.split(".")[0])
    return getattr(module, "paramstyle", "format")


@contextlib.contextmanager
def fenced_transaction(conn, resource, token):
    """Run the body's statements in one transaction of conn (a DB-API 2
    connection to a database where fencing.sql is installed) that begins
    with zkelect.fence(resource, token); yields a cursor of it.

        with zkelect.fenced_transaction(db, "orders", election.fencing_token()) as cur:
            cur.execute("UPDATE orders SET state = 'shipped' WHERE id = %s", (42,))

    Commits when the body ends; rolls back and raises zkelect.Deposed when
    PostgreSQL refuses the token (SQLSTATE ZKE01: a later term has written),
    and rolls back and re-raises any other exception. conn must not be in
    autocommit mode (each statement would be a transaction of its own, out
    of the fence's reach: ValueError), and should have no transaction open:
    the helper commits or rolls back the connection's transaction, earlier
    statements of it included."""
    if getattr(conn, "autocommit", False) is True:
        raise ValueError("the connection is in autocommit mode: a fenced transaction needs "
                         "its statements in the fence's transaction")
    token = int(token)
    if token <= 0:
        raise ValueError("token must be above 0 (a leader's fencing token)")
    sql, kind = _PLACEHOLDERS.get(_paramstyle(conn), _PLACEHOLDERS["format"])
    params = {"resource": resource, "token": token} if kind is dict else (resource, token)
    cur = conn.cursor()
    try:
        try:
            cur.execute(sql, params)
            yield cur
        except BaseException as exc:
            # A failed rollback (the connection is gone) must not hide why.
            with contextlib.suppress(Exception):
                conn.rollback()
            if sqlstate(exc) == DEPOSED_SQLSTATE:
                raise Deposed(f"resource {resource!r}: token {token} is older than the "
                              "last one seen (a later leader has written); nothing was "
                              "kept", resource, token) from exc
            raise
        try:
            conn.commit()
        except BaseException as exc:
            if sqlstate(exc) == DEPOSED_SQLSTATE:
                raise Deposed(f"resource {resource!r}: token {token} refused at commit",
                              resource, token) from exc
            raise
    finally:
        with contextlib.suppress(Exception):
            cur.close()

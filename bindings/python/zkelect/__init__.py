"""Leader election on Apache ZooKeeper: the Python package of libzkelect.

    import zkelect

    with zkelect.connect("127.0.0.1:2181") as client:
        with client.election("/demo/scheduler", "worker-1") as election:
            election.volunteer()
            election.await_leader(30)
            print("leading with fencing token", election.fencing_token())

A thin layer over the C library libzkelect.so.1 (package libzkelect1),
loaded with ctypes: every behaviour is the C API's (capi/zkelect/zkelect.h,
docs/semantics.md). Names are the Rust crate's. Timeouts are in seconds
(None: no limit; for a transfer, which the C API bounds, the longest it
allows). Failures raise zkelect.Error, one subclass per code.

No thread of the library ever calls into Python: events are pulled
(next_event, the events() iterator) or, under asyncio, read when the
election's event descriptor turns readable (aevents(), await leader()).
"""

import asyncio
import json
import math
import threading
import time
import weakref
from collections import namedtuple
from ctypes import byref, c_int, c_int64, c_size_t, c_uint64, create_string_buffer

from . import _lib, _vocab
from ._fencing import DEPOSED_SQLSTATE, FENCE_SQL, Deposed, fenced_transaction
from ._lib import Error, lib

__all__ = ["connect", "Client", "Election", "Event", "Participant", "FencedOps", "Error", "version",
           "version_string", "config_keys", "strerror", "EVENTS", "REASONS", "COUNTERS",
           "leader_wsgi", "fenced_transaction", "Deposed", "FENCE_SQL", "DEPOSED_SQLSTATE"]

# Error's subclasses, by the Rust crate's kind names: zkelect.TimedOut, ...
globals().update({cls.__name__: cls for cls in _lib.CLASSES.values()})
__all__ += [cls.__name__ for cls in _lib.CLASSES.values()]

EVENTS = _vocab.EVENTS
REASONS = _vocab.REASONS
COUNTERS = _vocab.COUNTERS

# A blocking call waits inside the library in slices of at most this long
# and lets go of the handle between them, so close() waits for no more
# than one slice of each waiting thread (as the Go and Java bindings do).
_SLICE = 0.2


def version():
    """The loaded library's version, (major, minor, patch)."""
    v = lib.zkelect_version()
    return (v >> 16, (v >> 8) & 0xff, v & 0xff)


def version_string():
    return _lib.text(lib.zkelect_version_string())


def strerror(code):
    return _lib.text(lib.zkelect_strerror(code))


def config_keys():
    """Every configuration key the loaded library knows, in its order."""
    keys = []
    for i in range(1000):
        k = lib.zkelect_conf_key(i)
        if k is None:
            break
        keys.append(k.decode())
    return keys


# zkelect_transfer and zkelect_client_transfer take 1..600000 ms
# (capi/zkelect/zkelect.h): a transfer always ends, so "no limit" is the
# longest one.
_TRANSFER_MAX_MS = 600000


def _transfer_ms(timeout):
    ms = _lib.timeout_ms(timeout)
    return _TRANSFER_MAX_MS if ms < 0 or ms > _TRANSFER_MAX_MS else ms


def _deadline(timeout):
    return None if timeout is None else time.monotonic() + _lib.timeout_ms(timeout) / 1e3


def _slice(deadline):
    """The ms of the next slice of a wait, and whether it is the last."""
    if deadline is None:
        return int(_SLICE * 1000), False
    left = deadline - time.monotonic()
    return _lib.timeout_ms(max(0.0, min(left, _SLICE))), left <= _SLICE


# ---------------------------------------------------------------------------
# Handles
# ---------------------------------------------------------------------------

class _Handle:
    """One C handle and the calls in flight on it. The C API lets destroy
    wake and wait for calls already inside the library, but no call may
    start once destroy has begun: close() marks the handle closed (no call
    starts after that), waits for the calls in flight (at most one slice
    each, see _SLICE), and only then destroys. It holds no reference to the
    Python object it serves, so a finalizer can call close()."""

    __slots__ = ("raw", "_destroy", "_wake", "_end", "_cond", "_busy", "_closed", "_done",
                 "_children", "_parent", "pump", "__weakref__")

    def __init__(self, raw, destroy, wake=None, parent=None, end=None):
        self.raw = raw
        self._destroy = destroy
        self._wake = wake
        # A client's: ends every child at once before they are destroyed
        # (zkelect_client_shutdown), so each destroy costs no round trip.
        self._end = end
        self._cond = threading.Condition(threading.Lock())
        self._busy = 0
        self._closed = False
        self._done = threading.Event()
        self._children = weakref.WeakSet()
        # The parent (a client) stays alive while a child lives; its close
        # closes the children first.
        self._parent = parent
        self.pump = None
        if parent is not None:
            parent._children.add(self)

    @property
    def closed(self):
        return self._closed

    def enter(self):
        with self._cond:
            if self._closed:
                raise _lib.make_error(_lib.ECLOSED, "the handle is closed")
            self._busy += 1
        return self.raw

    def leave(self):
        with self._cond:
            self._busy -= 1
            if self._busy == 0 and self._closed:
                self._cond.notify_all()

    def call(self, fn, *args):
        raw = self.enter()
        try:
            return fn(raw, *args)
        finally:
            self.leave()

    def close(self):
        """Idempotent; a second caller returns once the first has destroyed
        the handle (so a client never outruns the close of an election)."""
        with self._cond:
            first = not self._closed
            self._closed = True
        if not first:
            self._done.wait()
            return 0
        pump = self.pump
        if pump is not None:
            pump.shutdown()
        with self._cond:
            while self._busy:
                if self._wake is not None:
                    self._wake(self.raw)
                self._cond.wait(0.05)
        # A child registers while its parent's call that made it is in
        # flight, so after the wait above the set is complete.
        if self._end is not None:
            self._end(self.raw)
        for child in list(self._children):
            child.close()
        try:
            return self._destroy(self.raw)
        finally:
            self.raw = None
            self._parent = None
            self._done.set()


# ---------------------------------------------------------------------------
# Client
# ---------------------------------------------------------------------------

def _conf_value(key, v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return _lib.cstr(f"the value of {key}", v).decode()


def _key(name):
    if not isinstance(name, str):
        raise _lib.make_error(_lib.EINVAL, f"a configuration key must be a str, not {name!r}")
    if name in _vocab.KEYWORDS:
        return _vocab.KEYWORDS[name]
    if "." in name:  # a key of the library, checked by it
        return name
    raise _lib.make_error(
        _lib.EINVAL, f"unknown option {name!r} (options: {', '.join(_vocab.KEYWORDS)}, "
                     "or a libzkelect key such as 'zk.session.timeout.ms')")


def connect(hosts, **conf):
    """A client of the ensemble at hosts ("host:port[,host:port...][/chroot]"),
    with the options given as keywords (session_timeout_ms=6000,
    leadership="strict", auth="digest:user:pass", ...; zkelect.config_keys()
    lists the library's keys). Does not wait for the connection: see
    Client.await_connected."""
    return Client(dict(conf, hosts=hosts))


class _Closes:
    """What Client and Election share: a context manager around close(),
    which runs the finalizer (closing the handle) and returns once the
    handle is closed, also when another thread closes it."""

    def close(self):
        self._finalizer()
        self._h.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def closed(self):
        return self._h.closed


class Client(_Closes):
    """One ZooKeeper session, shared by any number of elections. A context
    manager: leaving the block closes the session, and the elections still
    open on it first. A client nobody closes is closed when collected."""

    def __init__(self, conf):
        if not hasattr(conf, "items"):
            raise _lib.make_error(_lib.EINVAL, "conf must be a mapping of option to value")
        c = lib.zkelect_conf_new()
        if not c:
            raise _lib.make_error(_lib.ENOMEM, "out of memory")
        try:
            for name, value in conf.items():
                key = _key(name)
                buf = _lib.errbuf()
                rc = lib.zkelect_conf_set(c, key.encode(), _conf_value(key, value).encode(), buf,
                                          _lib.ERRBUF)
                if rc < 0:
                    raise _lib.null_error(buf, rc) if buf.value else _lib.from_code(rc)
            # await_connected(None) waits this long, in slices.
            got = create_string_buffer(32)
            n = c_size_t(32)
            _lib.check(lib.zkelect_conf_get(c, b"zk.connect.timeout.ms", got, byref(n)))
            self._connect_timeout = int(got.value) / 1000.0
            buf = _lib.errbuf()
            raw = lib.zkelect_client_new(c, buf, _lib.ERRBUF)
            if not raw:
                raise _lib.null_error(buf)
        finally:
            lib.zkelect_conf_destroy(c)
        # -1: wait up to one session timeout, as one election's destroy would.
        self._h = _Handle(raw, lib.zkelect_client_destroy,
                          end=lambda raw: lib.zkelect_client_shutdown(raw, -1))
        self._finalizer = weakref.finalize(self, self._h.close)

    def close(self):
        """Close every election and observer still open on this client at
        once (their deletes sent together, zkelect_client_shutdown), then
        the session (ZooKeeper removes what is left at once). Idempotent."""
        super().close()

    def shutdown(self, timeout=None):
        """End every election and observer of this client at once, then its
        session, and wait until their nodes are gone (None: at most one
        session timeout). The handles stay open until closed, their calls
        raising Closed. Raises TimedOut when nodes may be left (leadership
        ended all the same; the servers remove them with the session),
        Closed when shut down already."""
        ms = -1 if timeout is None else int(timeout * 1000)
        _lib.check(self._h.call(lib.zkelect_client_shutdown, ms))

    def await_connected(self, timeout=None):
        """Wait until the session is connected; None waits for the
        configured zk.connect.timeout.ms. Raises TimedOut, Auth."""
        deadline = _deadline(self._connect_timeout if timeout is None else timeout)
        while True:
            ms, last = _slice(deadline)
            rc = self._h.call(lib.zkelect_client_await_connected, ms)
            if rc != _lib.ETIMEDOUT or last:
                _lib.check(rc)
                return

    def is_connected(self):
        try:
            return self._h.call(lib.zkelect_client_is_connected) == 1
        except Error:
            return False

    @property
    def session_id(self):
        return self._h.call(lib.zkelect_client_session_id)

    @property
    def session_timeout(self):
        """The negotiated session timeout in seconds; None before the first
        connection."""
        ms = self._h.call(lib.zkelect_client_session_timeout_ms)
        return ms / 1000.0 if ms > 0 else None

    @property
    def lease_margin(self):
        """The lease margin in force, in seconds; None before the first
        connection."""
        ms = self._h.call(lib.zkelect_client_lease_margin_ms)
        return ms / 1000.0 if ms > 0 else None

    def crash_guard_wait(self, pid):
        """Once this process is dead, the crash guard closes this client's
        session only after process pid has ended too (a helper that stops
        supervised work first; 0: no longer). No-op without a guard.
        Raises InvalidArgument for a negative pid or no such process."""
        _lib.check(self._h.call(lib.zkelect_client_crash_guard_wait, int(pid)))

    def counter(self, name):
        """One counter by its name ("terms_won", ...; zkelect.COUNTERS)."""
        try:
            index = COUNTERS.index(name)
        except ValueError:
            raise _lib.make_error(_lib.EINVAL, f"unknown counter {name!r}") from None
        v = c_uint64()
        _lib.check(self._h.call(lib.zkelect_client_counter, index, byref(v)))
        return v.value

    def counters(self):
        """Every counter the loaded library has, by name."""
        out = {}
        raw = self._h.enter()
        try:
            for i in range(1000):
                name = lib.zkelect_counter_name(i)
                if name is None:
                    break
                v = c_uint64()
                _lib.check(lib.zkelect_client_counter(raw, i, byref(v)))
                out[name.decode()] = v.value
        finally:
            self._h.leave()
        return out

    def participants(self, path):
        """The candidates of the election at path, in queue order (the
        leader first), as ZooKeeper has them now."""
        p = _lib.cstr("path", path)
        buf = _lib.errbuf()
        return _participants(self._h.call(lib.zkelect_client_participants, p, buf, _lib.ERRBUF),
                             buf)

    def transfer(self, path, target_id, timeout):
        """Ask the current leader of the election at path, from outside it,
        to hand leadership to the candidate whose id is target_id, the
        leader waiting at most timeout seconds (> 0, at most 600) for it to
        be next in line (docs/semantics.md, "A transfer asked from
        outside"). Returns once the target leads. Raises NoLeader,
        NoCandidate, NotSupported (the leader or a candidate ahead cannot
        take part) or State (a transfer is under way) with nothing
        changed; TimedOut or TargetLost after a handover to someone else.
        Blocks for up to timeout plus a few session timeouts. None (or
        anything longer) waits the longest the library allows, 600 s."""
        p = _lib.cstr("path", path)
        t = _lib.cstr("target id", target_id)
        ms = _transfer_ms(timeout)
        _lib.check(self._h.call(lib.zkelect_client_transfer, p, t, ms))

    def fenced_commit(self, node, token, ops, timeout=10):
        """Commit ops (a FencedOps) only while the leader's node `node` (its
        full path) stands and is the node of the term whose fencing token is
        `token`: the fenced write of a process that does not hold the
        candidacy (a command of `zkelect run`: $ZKELECT_NODE,
        $ZKELECT_TOKEN; docs/fencing.md). Give it only what an ELECTED said.
        Raises as Election.fenced_commit does, Fenced also when the node is
        gone or is another term's (nothing sent), never NotLeader."""
        if not isinstance(ops, FencedOps):
            raise _lib.make_error(_lib.EINVAL, "ops must be a zkelect.FencedOps")
        ms = _lib.timeout_ms(timeout)
        if ms <= 0:
            raise _lib.make_error(_lib.EINVAL, "timeout must be above 0 seconds")
        n = _lib.cstr("node", node)
        raw = ops._enter()
        try:
            _lib.check(self._h.call(lib.zkelect_client_fenced_commit, n, int(token), raw, ms))
        finally:
            ops._leave()

    def stats(self):
        """A snapshot of the client's figures (docs/monitoring.md), as a dict."""
        buf = _lib.errbuf()
        return _stats(self._h.call(lib.zkelect_client_stats, buf, _lib.ERRBUF), buf)

    def group_stats(self, path):
        """The members of the balanced group at path (balance.group) as
        ZooKeeper has them now, as a dict: "group", "members" (each with
        "node", "session", "valid" and, when valid, "leading" and
        "in_line"), the total "leading" and "unread" (docs/api.md,
        zkelect_client_group_stats). A path that does not exist: no
        members."""
        p = _lib.cstr("path", path)
        buf = _lib.errbuf()
        return _stats(self._h.call(lib.zkelect_client_group_stats, p, buf, _lib.ERRBUF), buf)

    def election(self, path, participant_id):
        """A candidacy of participant_id on path; it starts idle
        (volunteer() enters the election)."""
        return Election(self, path, participant_id)

    def __repr__(self):
        state = "closed" if self.closed else ("connected" if self.is_connected() else "connecting")
        return f"<zkelect.Client {state}>"


class FencedOps:
    """A batch of ZooKeeper changes for Election.fenced_commit: set, create
    and delete calls append (each returns the batch, to chain). Holds
    copies of what it was given; reusable. One thread at a time. A context
    manager; close() frees it (also when collected)."""

    def __init__(self):
        raw = lib.zkelect_fenced_ops_new()
        if not raw:
            raise _lib.make_error(_lib.ENOMEM, "out of memory")
        self._raw = raw
        self._finalizer = weakref.finalize(self, lib.zkelect_fenced_ops_destroy, raw)

    def _enter(self):
        if not self._finalizer.alive:
            raise _lib.make_error(_lib.ECLOSED, "the batch is closed")
        return self._raw

    def _leave(self):
        pass

    @staticmethod
    def _bytes(data):
        if isinstance(data, str):
            return data.encode("utf-8")
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
        raise _lib.make_error(_lib.EINVAL, f"data must be bytes or str, not {type(data).__name__}")

    def set(self, path, data, version=-1):
        """Append a set of path's data, only at data version (-1: any)."""
        b = self._bytes(data)
        _lib.check(lib.zkelect_fenced_ops_set(self._enter(), _lib.cstr("path", path), b, len(b),
                                              version))
        return self

    def create(self, path, data=b"", ephemeral=False):
        """Append a create of path (persistent, or ephemeral: it goes with
        the client's session) holding data."""
        b = self._bytes(data)
        _lib.check(lib.zkelect_fenced_ops_create(self._enter(), _lib.cstr("path", path), b, len(b),
                                                 1 if ephemeral else 0))
        return self

    def delete(self, path, version=-1):
        """Append a delete of path, only at data version (-1: any)."""
        _lib.check(lib.zkelect_fenced_ops_delete(self._enter(), _lib.cstr("path", path), version))
        return self

    def __len__(self):
        return lib.zkelect_fenced_ops_count(self._enter())

    def failed(self):
        """(index, zk_rc) of the operation ZooKeeper refused in the last
        commit, or None."""
        rc = c_int()
        i = lib.zkelect_fenced_ops_failed(self._enter(), byref(rc))
        return None if i < 0 else (i, rc.value)

    def close(self):
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

Participant = namedtuple("Participant", "id node token ctime_ms priority", defaults=(0,))
Participant.__doc__ = """One candidate as ZooKeeper listed it: id (the data
of its node, as another client may have written it), node (its name),
token (its czxid: the fencing token it leads or would lead with), ctime_ms
(creation time, server clock), priority (election.priority as its node's
name carries it, 0 to 255; 0 for none)."""


def _participants(raw, buf):
    if not raw:
        raise _lib.null_error(buf)
    try:
        return [Participant(_lib.text(lib.zkelect_participants_id(raw, i)),
                            _lib.text(lib.zkelect_participants_node(raw, i)),
                            lib.zkelect_participants_token(raw, i),
                            lib.zkelect_participants_ctime_ms(raw, i),
                            lib.zkelect_participants_priority(raw, i))
                for i in range(lib.zkelect_participants_count(raw))]
    finally:
        lib.zkelect_participants_destroy(raw)


def _stats(raw, buf):
    if not raw:
        raise _lib.null_error(buf)
    try:
        return json.loads(_lib.text(lib.zkelect_stats_json(raw)))
    finally:
        lib.zkelect_stats_destroy(raw)


class Event:
    """One event of an election's queue. kind is the library's name
    ("ELECTED", "DEPOSED", "FOLLOWING", ...: zkelect.EVENTS); reason names
    why a DEPOSED happened ("resigned", "lease_ended", ...), else "none";
    token is the fencing token of ELECTED (for OVERFLOW, how many events
    were dropped); error the zkelect.Error of an ERROR event, else None."""

    __slots__ = ("kind", "reason", "token", "error", "zk_rc", "message", "node", "id",
                 "time_ns")

    def __init__(self, raw):
        t = lib.zkelect_event_type(raw)
        self.kind = _lib.text(lib.zkelect_event_type_name(t))
        self.reason = _lib.text(lib.zkelect_reason_name(lib.zkelect_event_reason(raw)))
        self.token = lib.zkelect_event_token(raw)
        self.message = _lib.text(lib.zkelect_event_message(raw))
        code = lib.zkelect_event_error(raw)
        self.error = _lib.make_error(code, self.message) if code else None
        self.zk_rc = lib.zkelect_event_zk_rc(raw)
        self.node = _lib.text(lib.zkelect_event_node(raw))
        self.id = _lib.text(lib.zkelect_event_id(raw))
        self.time_ns = lib.zkelect_event_time_ns(raw)

    def __repr__(self):
        extra = {"ELECTED": f" token={self.token}", "DEPOSED": f" reason={self.reason}",
                 "FOLLOWING": f" id={self.id!r}", "ERROR": f" error={self.error!r}",
                 "OVERFLOW": f" dropped={self.token}"}.get(self.kind, "")
        return f"<zkelect.Event {self.kind}{extra}>"


def _take(raw):
    if not raw:
        return None
    try:
        return Event(raw)
    finally:
        lib.zkelect_event_destroy(raw)


# ---------------------------------------------------------------------------
# Election
# ---------------------------------------------------------------------------

class Election(_Closes):
    """One candidacy of participant_id on path (absolute; created with its
    parents when missing). It starts idle. A context manager: leaving the
    block leaves the election (a leader stops leading at once) and deletes
    the candidacy's node. An election nobody closes is closed the same way
    when it is collected, but only then: close what you open."""

    def __init__(self, client, path, participant_id):
        if not isinstance(client, Client):
            raise _lib.make_error(_lib.EINVAL, "client must be a zkelect.Client")
        p = _lib.cstr("path", path)
        i = _lib.cstr("participant id", participant_id)
        buf = _lib.errbuf()
        craw = client._h.enter()
        try:
            raw = lib.zkelect_election_new(craw, p, i, buf, _lib.ERRBUF)
            if not raw:
                raise _lib.null_error(buf)
            self._h = _Handle(raw, lib.zkelect_election_destroy, lib.zkelect_wake, client._h)
        finally:
            client._h.leave()
        self._finalizer = weakref.finalize(self, self._h.close)
        self._client = client
        self._path = path
        self._id = participant_id
        self._wakes = 0

    def close(self):
        """Leave the election and free the handle: a leader is deposed at
        once; the node's deletion is waited for at most the session
        timeout. Threads waiting in await_leader, next_event or events()
        end (Closed; the iterator stops). Idempotent."""
        super().close()

    @property
    def client(self):
        return self._client

    @property
    def path(self):
        return self._path

    @property
    def id(self):
        return self._id

    def volunteer(self):
        """Enter the election. Non-blocking: the outcome arrives as events
        (FOLLOWING, ELECTED). State when already a candidate;
        LimitExceeded, doing nothing, when its node would bring the
        client's candidate nodes above zk.session.nodes.max.bytes
        (session_nodes_max_bytes; docs/limits.md)."""
        _lib.check(self._h.call(lib.zkelect_volunteer))

    def resign(self):
        """Leave the election: is_leader() is False when this returns; the
        node is deleted in the background (a RESIGNED event says when).
        State when not a candidate."""
        _lib.check(self._h.call(lib.zkelect_resign))

    def requeue(self):
        """Step back to the back of the line in one call (resign, then
        volunteer, nothing between): is_leader() is False when this
        returns; DEPOSED (a leader), RESIGNED, then FOLLOWING or ELECTED
        follow. State when not a candidate; LimitExceeded, doing nothing,
        when the new node, counted beside the old one until that is gone,
        would bring the client's candidate nodes above
        zk.session.nodes.max.bytes."""
        _lib.check(self._h.call(lib.zkelect_requeue))

    def is_leader(self):
        """True while this candidacy leads and its lease runs. One lock-free
        call into the library; False once closed."""
        h = self._h
        try:
            raw = h.enter()
        except Error:
            return False
        try:
            return lib.zkelect_is_leader(raw) == 1
        finally:
            h.leave()

    def _lease(self, fn, *args):
        h = self._h
        try:
            raw = h.enter()
        except Error:
            return 0
        try:
            return fn(raw, *args)
        finally:
            h.leave()

    def lease_left(self):
        """The lease time left in seconds (whole ms) while this candidacy
        leads, else 0.0 (also once closed): how much longer is_leader()
        stays True unless a renewal pushes the deadline later. To decide
        whether work fits in the term, use is_leader_for(), which answers
        from one reading."""
        return self._lease(lib.zkelect_lease_left_ms) / 1000.0

    def is_leader_for(self, seconds):
        """True if this candidacy leads now and its lease runs at least
        `seconds` more (rounded up to whole ms), from one reading of the
        deadline and the clock: no other candidate can be elected within
        that time plus the lease margin unless this one resigns. 0 or less
        asks the same as is_leader(). False once closed."""
        ms = math.ceil(float(seconds) * 1000) if seconds > 0 else 0
        return self._lease(lib.zkelect_is_leader_for, min(ms, 2**31 - 1)) == 1

    def leader_answer(self):
        """The leader endpoint's answer, as `zkelect run`'s GET /leader gives
        it (zkelect_leader_answer): (200, JSON text) while this candidacy
        leads, with its path, id, fencing token and lease time left, else
        (503, '{"leader":false}') (also once closed). One reading decides:
        a 200 never comes after is_leader() would say False. For a server
        of your own, leader_wsgi() mounts it."""
        h = self._h
        try:
            raw = h.enter()
        except Error:
            return 503, '{"leader":false}'
        try:
            size = 512
            for _ in range(4):  # the id and path are bounded; grows at most twice
                buf = create_string_buffer(size)
                n = c_size_t(size)
                rc = lib.zkelect_leader_answer(raw, buf, byref(n))
                if rc in (200, 503):
                    return rc, buf.value.decode("utf-8")
                if rc != -14 or n.value <= size:  # ZKELECT_ERANGE
                    break
                size = n.value
            return 503, '{"leader":false}'
        finally:
            h.leave()

    def _sliced(self, fn, timeout, empty):
        """fn(raw, ms) in slices until it returns something else than empty
        or the timeout runs out (then empty)."""
        deadline = _deadline(timeout)
        while True:
            ms, last = _slice(deadline)
            res = self._h.call(fn, ms)
            if res != empty or last:
                return res

    def await_leader(self, timeout=None):
        """Wait until this candidacy leads; None waits without limit. Raises
        TimedOut, State (not a candidate, or no longer), Closed, Auth. Takes
        no event from the queue."""
        _lib.check(self._sliced(lib.zkelect_await_leader, timeout, _lib.ETIMEDOUT))

    def transfer(self, target_id, timeout):
        """Hand this leader's leadership to the candidate of the same path
        whose id is target_id, waiting at most timeout seconds (> 0) for it
        to be next in line (docs/semantics.md, "Transferring leadership").
        Returns once the target is first. Raises NoCandidate, NotLeader or
        NotSupported (a candidate ahead of the target cannot step back;
        nothing changed); TimedOut or TargetLost (leadership went to the
        next in line, as after a resign); InvalidArgument for this
        candidacy's own id. Blocks; this candidacy stays a candidate, at the
        back of the line. None (or anything longer) waits the longest the
        library allows, 600 s."""
        t = _lib.cstr("target id", target_id)
        ms = _transfer_ms(timeout)
        _lib.check(self._h.call(lib.zkelect_transfer, t, ms))

    def fencing_token(self):
        """The fencing token of the current term (grows with every term on
        the path). NotLeader when not leading."""
        token = c_int64()
        _lib.check(self._h.call(lib.zkelect_fencing_token, byref(token)))
        return token.value

    def fenced_commit(self, ops, timeout=10):
        """Commit ops (a FencedOps, at least one operation) in one ZooKeeper
        multi behind a check of this candidacy's node: all of it, and only
        while this candidacy leads its term (docs/fencing.md, "Fenced
        ZooKeeper writes"). Waits at most timeout seconds (> 0). Raises
        NotLeader (not leading: nothing sent), Fenced (the term is over:
        nothing committed), ZooKeeper or Auth (an operation of ops refused:
        ops.failed() says which; nothing committed), and ConnectionLoss,
        SessionExpired or TimedOut when the outcome is unknown (it may have
        committed, whole, while the node stood: read what it wrote)."""
        if not isinstance(ops, FencedOps):
            raise _lib.make_error(_lib.EINVAL, "ops must be a zkelect.FencedOps")
        ms = _lib.timeout_ms(timeout)
        if ms <= 0:
            raise _lib.make_error(_lib.EINVAL, "timeout must be above 0 seconds")
        raw = ops._enter()
        try:
            _lib.check(self._h.call(lib.zkelect_fenced_commit, raw, ms))
        finally:
            ops._leave()

    def fenced_set(self, path, data, version=-1, timeout=10):
        """fenced_commit of one set of path's data (bytes or str) at data
        version (-1: any)."""
        with FencedOps() as ops:
            self.fenced_commit(ops.set(path, data, version), timeout)

    def leader_id(self):
        """Ask ZooKeeper who leads now (synced with the quorum). NoLeader
        when there is no candidate."""
        size = _lib.ID_MAX + 1
        # Another program's participant (Curator) may have a longer id.
        for _ in range(6):
            buf = create_string_buffer(size)
            rc = self._h.call(lib.zkelect_leader_id, buf, c_size_t(size))
            if rc == 0:
                return _lib.text(buf.value)
            if rc != _lib.ERANGE:
                raise _lib.from_code(rc)
            size *= 8
        raise _lib.from_code(_lib.ERANGE)

    def participants(self):
        """The candidates in queue order (the leader first), as ZooKeeper
        has them now."""
        buf = _lib.errbuf()
        return _participants(self._h.call(lib.zkelect_participants, buf, _lib.ERRBUF), buf)

    def stats(self):
        """A snapshot of this candidacy's figures (docs/monitoring.md), as a
        dict. Asks nothing of ZooKeeper."""
        buf = _lib.errbuf()
        return _stats(self._h.call(lib.zkelect_election_stats, buf, _lib.ERRBUF), buf)

    def next_event(self, timeout=0):
        """The next event, waiting up to timeout seconds (None: no limit);
        None when none came, after wake(), or once closed."""
        wakes = self._wakes
        deadline = _deadline(timeout)
        while True:
            ms, last = _slice(deadline)
            try:
                raw = self._h.call(lib.zkelect_next_event, ms)
            except Error:
                return None  # closed
            if raw:
                return _take(raw)
            if last or self._wakes != wakes:
                return None

    def events(self, timeout=None):
        """An iterator of events in the order they happened. It ends when a
        wait is longer than timeout seconds (None: never), at wake(), or
        when the election is closed (from another thread)."""
        while True:
            ev = self.next_event(timeout)
            if ev is None:
                return
            yield ev

    def __iter__(self):
        return self.events()

    def wake(self):
        """Make a waiting (or the next) next_event return None at once."""
        self._wakes += 1
        try:
            self._h.call(lib.zkelect_wake)
        except Error:
            pass

    def event_fd(self):
        """A descriptor readable exactly while events wait (level-triggered),
        for select/poll/selectors. Owned by the library: never read, write
        or close it; it closes with the election."""
        return _lib.check(self._h.call(lib.zkelect_event_fd))

    # --- asyncio ------------------------------------------------------------

    def _pump(self):
        loop = asyncio.get_running_loop()
        pump = self._h.pump
        if pump is None or pump.loop is not loop:
            if pump is not None and pump.active():
                raise _lib.make_error(_lib.ESTATE,
                                      "this election's events are read by another event loop")
            pump = self._h.pump = _Pump(self._h, loop, self.event_fd())
        return pump

    async def aevents(self):
        """The events as an asynchronous iterator, read when the event
        descriptor turns readable (loop.add_reader): no thread. It ends when
        the election is closed. Every aevents() iterator of the election
        gets every event."""
        pump = self._pump()
        q = pump.subscribe()
        try:
            while True:
                ev = await q.get()
                if ev is None:
                    return
                yield ev
        finally:
            pump.unsubscribe(q)

    async def leader(self, timeout=None):
        """Wait, without blocking the event loop, until this candidacy
        leads; None waits without limit. The asyncio form of await_leader,
        with its errors. Events that arrive meanwhile go to the aevents()
        iterators of the election, and are dropped when there is none."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + _lib.timeout_ms(timeout) / 1e3
        pump = self._pump()
        while True:
            rc = self._h.call(lib.zkelect_await_leader, 0)
            if rc != _lib.ETIMEDOUT:
                _lib.check(rc)
                return
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                raise _lib.make_error(_lib.ETIMEDOUT, "not leading within the timeout")
            # ELECTED comes as an event; the lease is looked at again at
            # least every second all the same.
            fut = pump.waiter()
            try:
                await asyncio.wait_for(fut, 1.0 if left is None else min(left, 1.0))
            except asyncio.TimeoutError:
                pass
            finally:
                pump.unwait(fut)

    def __repr__(self):
        state = "closed" if self.closed else ("leader" if self.is_leader() else "not leading")
        return f"<zkelect.Election {self._path!r} id={self._id!r} {state}>"


class _Pump:
    """Reads one election's events on one event loop when its descriptor is
    readable, and hands each to every aevents() iterator. The reader is
    registered only while someone listens. Holds the handle, not the
    Election, so a forgotten election is still collected."""

    def __init__(self, handle, loop, fd):
        self.handle = handle
        self.loop = loop
        self.fd = fd
        self.queues = []
        self.waiters = []
        self.reading = False
        self.thread = threading.get_ident()

    def active(self):
        return bool(self.queues or self.waiters)

    def _update(self):
        want = self.active() and not self.handle.closed
        if want and not self.reading:
            self.loop.add_reader(self.fd, self._readable)
            self.reading = True
        elif not want and self.reading:
            self.loop.remove_reader(self.fd)
            self.reading = False

    def subscribe(self):
        q = asyncio.Queue()
        self.queues.append(q)
        self._update()
        return q

    def unsubscribe(self, q):
        if q in self.queues:
            self.queues.remove(q)
        self._update()

    def waiter(self):
        fut = self.loop.create_future()
        self.waiters.append(fut)
        self._update()
        return fut

    def unwait(self, fut):
        if fut in self.waiters:
            self.waiters.remove(fut)
        self._update()

    def _readable(self):
        # Bounded: at most one queue's worth per wake of the loop.
        for _ in range(1100):
            try:
                raw = self.handle.call(lib.zkelect_next_event, 0)
            except Error:
                break
            if not raw:
                break
            ev = _take(raw)
            for q in self.queues:
                q.put_nowait(ev)
        for fut in self.waiters:
            if not fut.done():
                fut.set_result(None)

    def _stop(self):
        if self.reading:
            self.loop.remove_reader(self.fd)
            self.reading = False
        for q in self.queues:
            q.put_nowait(None)
        for fut in self.waiters:
            if not fut.done():
                fut.set_result(None)

    def shutdown(self):
        """Before the handle (and its descriptor) goes: unregister the
        reader, end the iterators. From the loop's own thread at once; from
        another, through the loop, waiting for it a bounded time."""
        if self.loop.is_closed() or not self.reading and not self.active():
            return
        if threading.get_ident() == self.thread or not self.loop.is_running():
            self._stop()
            return
        done = threading.Event()

        def stop():
            self._stop()
            done.set()
        self.loop.call_soon_threadsafe(stop)
        done.wait(5)


def leader_wsgi(election):
    """A WSGI application answering GET (and HEAD) with election's
    leader_answer(): 200 and the JSON while it leads, 503 otherwise, never
    cached; for a load balancer's health check or a readiness probe in a
    program that serves WSGI already. Mount it at a path of your own, e.g.
    with wsgiref: make_server("127.0.0.1", 8080, leader_wsgi(e))."""

    def app(environ, start_response):
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed",
                           [("Content-Type", "text/plain"), ("Allow", "GET, HEAD")])
            return [b"only GET\n"]
        status, text = election.leader_answer()
        body = (text + "\n").encode("utf-8")
        start_response("200 OK" if status == 200 else "503 Service Unavailable",
                       [("Content-Type", "application/json"), ("Cache-Control", "no-store"),
                        ("Content-Length", str(len(body)))])
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]

    return app

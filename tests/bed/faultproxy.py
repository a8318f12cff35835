#!/usr/bin/python3
"""A fault-injecting TCP proxy for ZooKeeper client connections.

One FaultProxy listens on 127.0.0.1 and forwards every accepted connection to
one ZooKeeper server. A test switches its mode at any time; a mode applies at
once to every current and future connection through that proxy:

  pass        forward as is (the default)
  delay       hold each chunk `ms` (+ uniform 0..jitter ms) per direction;
              byte order is kept, so jitter never reorders a stream
  blackhole   a network partition: connections stay open, nothing crosses
              in either direction, closes are not propagated, new
              connections are accepted but never reach the server.
              discard=True (default): bytes are thrown away, as a partition
              does. A connection that lost bytes has a hole in its stream and
              cannot carry on, so when the blackhole lifts it is reset (RST to
              both ends); a connection that lost nothing carries on.
              discard=False: bytes are held and delivered in order when the
              blackhole lifts (what TCP retransmission makes of a partition
              shorter than the peers' patience).
  refuse      every new connection is accepted and reset at once (RST)
  deaf        the server's bytes are thrown away, the client's go through:
              every reply lost on the way back, whatever the framing (TLS
              hides it: what drop_reply does by reading requests, this does
              blind). A connection that lost bytes is reset when the mode
              ends, as after a blackhole.

FaultProxy(..., raw=True) forwards bytes without reading ZooKeeper's client
framing (no packet counters, no drop rules): for links between servers,
whose protocol frames differently (zkbed's peer_links).

and one-shot actions:

  rewrite_reconnect(request_timeout_ms=None, reply_timeout_ms=None)
                           the next reconnect (a ConnectRequest that carries
                           a session id) asks the server for
                           request_timeout_ms instead of the client's
                           timeout (a server that now grants less, as after
                           a restart with a lower maxSessionTimeout), and/or
                           its ConnectResponse tells the client
                           reply_timeout_ms (0: the live session id with no
                           timeout, a broken server's answer)
  last_session()           (sid, timeout_ms, password) of the newest session
                           a server granted through the proxy, or None: the
                           credentials another client needs to close it

  reset()                  RST every current connection (both ends; SO_LINGER 0)
  drop_reply(op, count=1, then=None, match=None)
                           remember the xids of the next `count` client
                           requests with opcode `op` (a name, number or list;
                           `match`: only requests whose bytes contain it) and
                           drop the server's replies to them: the request
                           takes effect on the server, the client never hears
                           of it. What the client does next is its own
                           business. kazoo 2.8 keeps pinging, so the
                           connection stays up and the call waits (forever if
                           nothing else is sent); its NEXT reply then carries
                           an unexpected xid and kazoo 2.8 kills its
                           connection thread (the client is dead). Both it
                           and the ZooKeeper C client expect replies in
                           request order. The C client (under libzkelect) was
                           seen to drop the connection about 2/3 of the
                           session timeout after the lost reply and reconnect
                           with its session (consistent with it sending no
                           ping while a request is outstanding, so its read
                           timeout runs out); the lost call then completes
                           with a connection error.
                           then="reset" resets the connection right after the
                           drop, so the client sees connection loss for the
                           request at once and reconnects with its session.
  drop_request(op, count=1, match=None)
                           the next `count` client requests with opcode `op`
                           (`match` as above) never reach the server: each is
                           swallowed and its connection reset at once, so the
                           client hears connection loss for a request that
                           did not take effect (drop_reply's twin: there it
                           did).
  answer_error(op, err, count=1, match=None)
                           like drop_reply, but the client does hear: the
                           server's reply to each of the next `count`
                           matching requests reaches it as an error reply
                           with code `err` (e.g. -127, ZTHROTTLEDOP: a
                           server's throttledOpWaitTime without the load),
                           its body cut. The request took effect on the
                           server all the same.

ZooKeeper framing: 4-byte big-endian length, then the packet. The client's
first packet is the ConnectRequest, the server's first is the ConnectResponse
(no headers); after that a request starts with xid:int32 type:int32 and a
reply with xid:int32 zxid:int64 err:int32. Streams that do not look like
ZooKeeper (four-letter words) are forwarded raw and not counted as packets.

Use it from Python (thread-backed, context manager), or as a process:

  faultproxy.py --target 127.0.0.1:2181 [--target ...] [--listen 0]
                [--control /tmp/ctl.sock]
      prints "LISTEN <i> 127.0.0.1:<port> -> <target>" per proxy, then
      "READY"; runs until SIGTERM/SIGINT, end of stdin (--stdin-eof-exit) or
      the control command `shutdown`.
  faultproxy.py ctl /tmp/ctl.sock pass | delay MS [JITTER [DIR]] |
      blackhole [discard|hold] | refuse | reset [refuse] |
      drop_reply OP[,OP...] [COUNT [reset|- [MATCH]]] | clear_rules |
      stats | reset_stats | ports | shutdown
      (prefix with @I to address proxy I only; replies one line: "OK ...",
      "ERR ...", or the stats as JSON)

Python 3.11 standard library only.
"""

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

OPCODES = {
    "notification": 0, "create": 1, "delete": 2, "exists": 3, "getData": 4,
    "setData": 5, "getACL": 6, "setACL": 7, "getChildren": 8, "sync": 9,
    "ping": 11, "getChildren2": 12, "check": 13, "multi": 14, "create2": 15,
    "reconfig": 16, "checkWatches": 17, "removeWatches": 18,
    "createContainer": 19, "deleteContainer": 20, "createTTL": 21,
    "multiRead": 22, "auth": 100, "setWatches": 101, "sasl": 102,
    "getEphemerals": 103, "getAllChildrenNumber": 104, "setWatches2": 105,
    "addWatch": 106, "whoAmI": 107, "createSession": -10, "closeSession": -11,
    "error": -1,
}
OPNAMES = {v: k for k, v in OPCODES.items() if k != "notification"}
# Special xids: the server's replies to these carry the same xid.
XID_NOTIFICATION = -1
XID_PING = -2
XID_AUTH = -4
XID_SET_WATCHES = -8

# Longer than jute.maxbuffer's default (0xfffff) plus slack: beyond it, the
# stream is not ZooKeeper framing and is forwarded raw.
_MAX_FRAME = 16 * 1024 * 1024

C2S = "c2s"
S2C = "s2c"


def opcode_of(op):
    """Opcode number from a name ("create") or a number; "notification" -> 0."""
    if isinstance(op, int):
        return op
    if isinstance(op, str):
        if op.lstrip("-").isdigit():
            return int(op)
        if op in OPCODES:
            return OPCODES[op]
    raise ValueError(f"unknown ZooKeeper opcode {op!r}")


def _rst(transport):
    """Close with RST: SO_LINGER 0 makes close() send a reset, not a FIN."""
    if transport is None or transport.is_closing():
        if transport is not None:
            transport.abort()
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport.abort()


class _Framer:
    """Splits one direction of a ZooKeeper stream into packets.

    Falls back to raw mode (yielding chunks as they come) when the first
    length prefix is implausible, e.g. a four-letter word.
    """

    def __init__(self):
        self.buf = bytearray()
        self.raw = False
        self.first = True

    def feed(self, data):
        if self.raw:
            return [(None, bytes(data))]
        self.buf += data
        out = []
        while len(self.buf) >= 4:
            (n,) = struct.unpack_from(">i", self.buf, 0)
            if n < 0 or n > _MAX_FRAME:
                self.raw = True
                out.append((None, bytes(self.buf)))
                self.buf.clear()
                return out
            if len(self.buf) < 4 + n:
                break
            pkt = bytes(self.buf[:4 + n])
            del self.buf[:4 + n]
            first, self.first = self.first, False
            out.append((first, pkt))
        return out


class DropRule:
    """Drop the server's replies to the next `count` requests of `opcode`.

    Shared by several proxies (ProxiedEnsemble), so it counts under a lock.
    opcode 0 ("notification") drops the next `count` watch notifications.
    """

    def __init__(self, opcode, count=1, then=None, match=None, err=None, request=False):
        if then not in (None, "reset"):
            raise ValueError("then must be None or 'reset'")
        if count < 1:
            raise ValueError("count must be >= 1")
        ops = opcode if isinstance(opcode, (list, tuple, set, frozenset)) else [opcode]
        self.opcodes = frozenset(opcode_of(o) for o in ops)
        self.opcode = min(self.opcodes)
        # Only requests whose packet contains these bytes (e.g. b"-latch-")
        self.match = match.encode() if isinstance(match, str) else match
        self.count = count
        self.then = then
        # Not None: the reply is not dropped but turned into this error.
        self.err = err
        # The request itself is dropped (and its connection reset).
        self.request = request
        self.lock = threading.Lock()
        self.armed = count       # matching requests still to be marked
        self.dropped = 0         # replies actually dropped
        self.done = threading.Event()

    def matches(self, op, pkt):
        return op in self.opcodes and (self.match is None or self.match in pkt)

    def claim(self):
        with self.lock:
            if self.armed <= 0:
                return False
            self.armed -= 1
            return True

    def note_dropped(self):
        with self.lock:
            self.dropped += 1
            if self.dropped >= self.count:
                self.done.set()


class ConnectRule:
    """Rewrite the handshake of the next reconnect (see rewrite_reconnect);
    shared by several proxies, so it is claimed under a lock."""

    def __init__(self, request_timeout_ms=None, reply_timeout_ms=None):
        self.request_timeout_ms = request_timeout_ms
        self.reply_timeout_ms = reply_timeout_ms
        self.lock = threading.Lock()
        self.armed = True
        self.done = threading.Event()

    def claim(self):
        with self.lock:
            armed, self.armed = self.armed, False
            return armed


class _Side(asyncio.Protocol):
    def __init__(self, conn, side):
        self.conn, self.side = conn, side

    def connection_made(self, transport):
        self.conn.side_made(self.side, transport)

    def data_received(self, data):
        self.conn.side_data(self.side, data)

    def eof_received(self):
        self.conn.side_lost(self.side, None)
        return False

    def connection_lost(self, exc):
        self.conn.side_lost(self.side, exc)


class _Conn:
    """One client connection and its upstream connection."""

    def __init__(self, proxy, cid):
        self.proxy = proxy
        self.loop = proxy._loop
        self.cid = cid
        self.t = {"c": None, "s": None}           # transports
        self.dead = {"c": False, "s": False}      # side closed by its peer
        self.framer = {C2S: _Framer(), S2C: _Framer()}
        if proxy._raw:
            for f in self.framer.values():
                f.raw = True
        self.pending_up = []                      # bytes before upstream is up
        self.upstream_started = False
        self.damaged = False                      # lost bytes in a blackhole
        self.held = {C2S: [], S2C: []}            # blackhole(discard=False)
        self.q = {C2S: [], S2C: []}               # (release_time, bytes)
        self.last_release = {C2S: 0.0, S2C: 0.0}
        self.timer = {C2S: None, S2C: None}
        self.marked = {}                          # xid -> DropRule
        self.connect_rule = None                  # ConnectRule of this handshake
        self.session_id = None
        self.timeout_ms = None
        self.closed = False

    # -- lifecycle ---------------------------------------------------------
    def side_made(self, side, transport):
        self.t[side] = transport
        if side == "c" and self.closed:          # refused
            _rst(transport)
            return
        if side == "s":
            if self.closed:
                _rst(transport)
                return
            for data in self.pending_up:
                transport.write(data)
            self.pending_up.clear()

    def start_upstream(self):
        if self.upstream_started or self.closed:
            return
        self.upstream_started = True
        host, port = self.proxy.target

        async def connect():
            try:
                await self.loop.create_connection(
                    lambda: _Side(self, "s"), host, port)
            except OSError:
                self.abort()
        self.loop.create_task(connect())

    def _give_back_connect_rule(self):
        # A handshake that got no answer (a server that refused the session,
        # e.g. for having seen less than the client) leaves the rule for
        # the client's next attempt, through this proxy or another.
        rule, self.connect_rule = self.connect_rule, None
        if rule is not None:
            with rule.lock:
                rule.armed = True
            if rule not in self.proxy._connect_rules:
                self.proxy._connect_rules.append(rule)

    def side_lost(self, side, exc):
        self._give_back_connect_rule()
        if self.dead[side] or self.closed:
            return
        self.dead[side] = True
        if self.proxy._mode == "blackhole":
            # A partition carries no FIN/RST: the other end learns nothing
            # until the blackhole lifts (heal() finishes the job).
            return
        self._finish_close(side, exc)

    def _finish_close(self, side, exc):
        other = "s" if side == "c" else "c"
        direction = C2S if side == "c" else S2C
        if exc is not None or self.t[other] is None:
            self.abort()
            return
        # Clean close: deliver what is still queued toward `other`, then close.
        if not self.q[direction]:
            self.close()
        # else _drain closes once the queue is empty

    def close(self):
        self._give_back_connect_rule()
        if self.closed:
            return
        self.closed = True
        for d in (C2S, S2C):
            if self.timer[d] is not None:
                self.timer[d].cancel()
        for t in self.t.values():
            if t is not None and not t.is_closing():
                t.close()
        self.proxy._conns.discard(self)

    def abort(self):
        self._give_back_connect_rule()
        self.closed = True
        for d in (C2S, S2C):
            if self.timer[d] is not None:
                self.timer[d].cancel()
        for t in self.t.values():
            _rst(t)
        self.proxy._conns.discard(self)

    # -- data path ---------------------------------------------------------
    def side_data(self, side, data):
        if self.closed:
            return
        p = self.proxy
        direction = C2S if side == "c" else S2C
        st = p._stats
        st["bytes_in_" + direction] += len(data)
        if (p._mode == "blackhole" and p._discard) or (p._mode == "deaf" and direction == S2C):
            st["bytes_discarded_" + direction] += len(data)
            self.damaged = True
            return
        for first, pkt in self.framer[direction].feed(data):
            if self.closed:                       # a drop rule reset us
                return
            if first is None:                     # raw stream
                self._emit(direction, pkt)
                continue
            st["packets_" + direction] += 1
            if first:
                pkt = self._rewrite_handshake(direction, pkt)
            if direction == C2S:
                if self._on_request(first, pkt):
                    return                        # swallowed, and we are reset
                self._emit(direction, pkt)
            else:
                out = self._on_reply(first, pkt)
                if out is True:
                    self._emit(direction, pkt)
                elif out:
                    self._emit(direction, out)

    def _rewrite_handshake(self, direction, pkt):
        # ConnectRequest: len, protocolVersion:int, lastZxidSeen:long,
        # timeOut:int (offset 16), sessionId:long, passwd. ConnectResponse:
        # len, protocolVersion:int, timeOut:int (offset 8), sessionId:long,
        # passwd:buffer.
        if direction == C2S:
            if len(pkt) < 4 + 24 or not struct.unpack_from(">q", pkt, 20)[0]:
                return pkt
            rule = next((r for r in self.proxy._connect_rules if r.claim()), None)
            if rule is None:
                return pkt
            self.proxy._connect_rules.remove(rule)
            self.connect_rule = rule
            if rule.request_timeout_ms is not None:
                pkt = bytearray(pkt)
                struct.pack_into(">i", pkt, 16, int(rule.request_timeout_ms))
                pkt = bytes(pkt)
            return pkt
        rule, self.connect_rule = self.connect_rule, None
        if len(pkt) < 4 + 16:
            return pkt
        if rule is not None and rule.reply_timeout_ms is not None:
            pkt = bytearray(pkt)
            struct.pack_into(">i", pkt, 8, int(rule.reply_timeout_ms))
            pkt = bytes(pkt)
        if rule is not None:
            rule.done.set()
        _, tmo, sid = struct.unpack_from(">iiq", pkt, 4)
        if sid and len(pkt) >= 4 + 20:
            (n,) = struct.unpack_from(">i", pkt, 20)
            if 0 <= n <= len(pkt) - 24:
                self.proxy._last_session = (time.monotonic_ns(), sid, tmo, bytes(pkt[24:24 + n]))
        return pkt

    def _on_request(self, first, pkt):
        st = self.proxy._stats
        if first:
            st["connect_requests"] += 1
            if len(pkt) >= 4 + 24:
                _, _, _, sid = struct.unpack_from(">iqiq", pkt, 4)
                if sid:
                    st["reconnect_requests"] += 1
            return
        if len(pkt) < 12:
            return
        xid, op = struct.unpack_from(">ii", pkt, 4)
        name = OPNAMES.get(op, str(op))
        st["requests"][name] = st["requests"].get(name, 0) + 1
        for rule in list(self.proxy._rules):
            if op != 0 and rule.matches(op, pkt) and rule.claim():
                if rule.request:
                    # Not a byte of it goes on; the reset tells the client.
                    st["requests_dropped"] += 1
                    rule.note_dropped()
                    self.abort()
                    st["resets"] += 1
                    return True
                self.marked[xid] = rule
                break
        return False

    def _on_reply(self, first, pkt):
        """Returns False when the packet must be dropped, True to forward
        it, or the bytes to forward in its place."""
        p = self.proxy
        st = p._stats
        if first:
            if len(pkt) >= 4 + 16:
                _, tmo, sid = struct.unpack_from(">iiq", pkt, 4)
                self.timeout_ms, self.session_id = tmo, sid
                if sid == 0:
                    st["sessions_refused"] += 1
                else:
                    st["sessions"].append((sid, tmo))
            return True
        if len(pkt) < 20:
            return True
        xid, _zxid, err = struct.unpack_from(">iqi", pkt, 4)
        rule = None
        if xid == XID_NOTIFICATION:
            st["notifications"] += 1
            for r in list(p._rules):
                if 0 in r.opcodes and (r.match is None or r.match in pkt) and r.claim():
                    rule = r
                    break
        else:
            if err != 0:
                st["reply_errors"] += 1
            rule = self.marked.pop(xid, None)
        if rule is None:
            return True
        if rule.err is not None and xid != XID_NOTIFICATION:
            st["replies_rewritten"] += 1
            rule.note_dropped()
            return struct.pack(">iiqi", 16, xid, _zxid, rule.err)
        st["replies_dropped"] += 1
        rule.note_dropped()
        if rule.then == "reset":
            self.abort()
            st["resets"] += 1
        return False

    def _emit(self, direction, data):
        p = self.proxy
        if p._mode == "blackhole":                # hold (discard returns early)
            self.held[direction].append(data)
            return
        d = p._delay[direction]
        if d is None and not self.q[direction]:
            self._write(direction, data)
            return
        now = time.monotonic()
        extra = 0.0
        if d is not None:
            ms, jitter = d
            extra = (ms + (random.uniform(0, jitter) if jitter else 0)) / 1e3
        release = max(self.last_release[direction], now + extra)
        self.last_release[direction] = release
        self.q[direction].append((release, data))
        if self.timer[direction] is None:
            self._arm(direction)

    def _arm(self, direction):
        release = self.q[direction][0][0]
        self.timer[direction] = self.loop.call_at(
            self.loop.time() + max(0.0, release - time.monotonic()),
            self._drain, direction)

    def _drain(self, direction):
        self.timer[direction] = None
        if self.closed:
            return
        if self.proxy._mode == "deaf" and direction == S2C and self.q[direction]:
            for _, data in self.q[direction]:
                self.proxy._stats["bytes_discarded_" + direction] += len(data)
            self.q[direction] = []
            self.damaged = True
            return
        if self.proxy._mode == "blackhole":
            # Bytes already in flight are caught by the partition too.
            q, self.q[direction] = self.q[direction], []
            if self.proxy._discard:
                self.damaged = self.damaged or bool(q)
                for _, data in q:
                    self.proxy._stats["bytes_discarded_" + direction] += len(data)
            else:
                self.held[direction] = [d for _, d in q] + self.held[direction]
            return
        now = time.monotonic()
        q = self.q[direction]
        while q and q[0][0] <= now + 0.0005:
            self._write(direction, q.pop(0)[1])
        if q:
            self._arm(direction)
        else:
            src = "c" if direction == C2S else "s"
            if self.dead[src]:
                self._finish_close(src, None)

    def _write(self, direction, data):
        st = self.proxy._stats
        st["bytes_out_" + direction] += len(data)
        if direction == C2S:
            t = self.t["s"]
            if t is None:
                self.pending_up.append(data)
                return
        else:
            t = self.t["c"]
        if t is not None and not t.is_closing():
            t.write(data)

    # -- mode changes ------------------------------------------------------
    def heal(self):
        """The blackhole lifted."""
        if self.closed:
            return
        if self.damaged or self.dead["c"] or self.dead["s"]:
            self.abort()
            self.proxy._stats["resets"] += 1
            return
        self.start_upstream()
        for d in (C2S, S2C):
            held, self.held[d] = self.held[d], []
            for data in held:
                self._emit(d, data)
            if self.q[d] and self.timer[d] is None:
                self._arm(d)


def _new_stats():
    return {
        "connections_accepted": 0, "connections_refused": 0,
        "connect_requests": 0, "reconnect_requests": 0,
        "sessions": [], "sessions_refused": 0,
        "bytes_in_c2s": 0, "bytes_in_s2c": 0,
        "bytes_out_c2s": 0, "bytes_out_s2c": 0,
        "bytes_discarded_c2s": 0, "bytes_discarded_s2c": 0,
        "packets_c2s": 0, "packets_s2c": 0,
        "requests": {}, "notifications": 0, "reply_errors": 0,
        "replies_dropped": 0, "replies_rewritten": 0, "requests_dropped": 0, "resets": 0,
    }


class LoopThread:
    """An asyncio loop on a daemon thread; several proxies may share one."""

    def __init__(self, name="faultproxy"):
        self.loop = asyncio.new_event_loop()
        self._users = 0
        self._lock = threading.Lock()
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(ready.set)
            self.loop.run_forever()
        self.thread = threading.Thread(target=run, name=name, daemon=True)
        self.thread.start()
        if not ready.wait(10):
            raise RuntimeError("faultproxy loop thread did not start")

    def call(self, fn, *args, timeout=10):
        """Run fn(*args) on the loop (a coroutine function is awaited)."""
        if threading.current_thread() is self.thread:
            raise RuntimeError("LoopThread.call from the loop thread")

        async def wrapper():
            r = fn(*args)
            if asyncio.iscoroutine(r):
                r = await r
            return r
        coro = wrapper()
        try:
            fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        except BaseException:
            coro.close()  # a loop closed meanwhile: no "never awaited" warning
            raise
        return fut.result(timeout)

    def acquire(self):
        with self._lock:
            self._users += 1

    def release(self):
        with self._lock:
            self._users -= 1
            last = self._users <= 0
        if last:
            self.stop()

    def stop(self):
        if self.loop.is_closed():
            return
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        if not self.thread.is_alive():
            self.loop.close()


class FaultProxy:
    """Proxy 127.0.0.1:<port> -> target; see the module docstring."""

    def __init__(self, target, listen_port=0, listen_host="127.0.0.1",
                 loop_thread=None, name=None, raw=False):
        if isinstance(target, str):
            host, _, port = target.rpartition(":")
            target = (host or "127.0.0.1", int(port))
        self.target = (target[0], int(target[1]))
        self.name = name or f"proxy->{self.target[1]}"
        self._own_loop = loop_thread is None
        self._lt = loop_thread or LoopThread(self.name)
        self._lt.acquire()
        self._loop = self._lt.loop
        # raw: never parse ZooKeeper client framing. ZooKeeper's server-to-
        # server streams have another framing whose first words look like
        # plausible lengths; parsing them would hold bytes back waiting for
        # a "packet" that never completes.
        self._raw = bool(raw)
        self._mode = "pass"
        self._discard = True
        self._delay = {C2S: None, S2C: None}
        self._rules = []
        self._connect_rules = []
        self._last_session = None                 # (mono ns, sid, timeout ms, passwd)
        self._conns = set()
        self._next_cid = 0
        self._stats = _new_stats()
        self._server = None
        self._closed = False
        try:
            self._lt.call(self._start, listen_host, listen_port)
        except BaseException:
            self._lt.release()
            raise
        self.port = self._server.sockets[0].getsockname()[1]
        self.host = listen_host

    async def _start(self, host, port):
        self._server = await self._loop.create_server(
            lambda: _Side(self._accept(), "c"), host, port,
            reuse_address=True, backlog=128)

    def _accept(self):
        self._next_cid += 1
        conn = _Conn(self, self._next_cid)
        self._stats["connections_accepted"] += 1
        if self._mode == "refuse":
            self._stats["connections_refused"] += 1
            conn.closed = True                    # side_made resets it
            return conn
        self._conns.add(conn)
        if self._mode != "blackhole":
            conn.start_upstream()
        return conn

    @property
    def address(self):
        return f"{self.host}:{self.port}"

    @property
    def mode(self):
        return self._mode

    def __repr__(self):
        return f"<FaultProxy {self.address} -> {self.target[0]}:{self.target[1]} {self._mode}>"

    # -- controls (any thread) ---------------------------------------------
    def _set_mode(self, mode, discard=True):
        self._lt.call(self._set_mode_on_loop, mode, discard)

    def _set_mode_on_loop(self, mode, discard=True):
        prev = self._mode
        self._mode = mode
        self._discard = discard
        if prev in ("blackhole", "deaf") and mode != prev:
            for c in list(self._conns):
                c.heal()

    def set_pass(self):
        """Forward again; ends blackhole/refuse and clears delays (not drop rules)."""
        def clear():
            self._delay = {C2S: None, S2C: None}
        self._lt.call(clear)
        self._set_mode("pass")

    heal = set_pass

    def delay(self, ms, jitter_ms=0, direction="both"):
        """Delay each direction (or C2S/S2C only) by ms + U(0, jitter_ms)."""
        if direction not in ("both", C2S, S2C):
            raise ValueError("direction must be both, c2s or s2c")
        if ms < 0 or jitter_ms < 0:
            raise ValueError("negative delay")

        def apply():
            for d in (C2S, S2C):
                if direction in ("both", d):
                    self._delay[d] = (float(ms), float(jitter_ms)) if (ms or jitter_ms) else None
        self._lt.call(apply)
        if self._mode in ("blackhole", "refuse"):
            self._set_mode("pass")

    def blackhole(self, discard=True):
        """Partition: nothing crosses; see the module docstring."""
        self._set_mode("blackhole", discard)

    def deaf(self):
        """Lose everything the server sends; the client's bytes go through
        (see the module docstring)."""
        self._set_mode("deaf")

    def refuse(self):
        """Reset every new connection at once (current ones are kept)."""
        self._set_mode("refuse")

    def reset(self, refuse=False):
        """RST every current connection; with refuse=True stay in refuse mode."""
        return self._lt.call(self._reset_on_loop, refuse)

    def _reset_on_loop(self, refuse):
        n = 0
        for c in list(self._conns):
            c.abort()
            n += 1
        self._stats["resets"] += n
        if refuse:
            self._mode = "refuse"
        elif self._mode == "blackhole":
            self._mode = "pass"
        return n

    def drop_reply(self, opcode, count=1, then=None, match=None, rule=None):
        """Drop the replies to the next `count` requests of `opcode`.

        `opcode`: a name, a number, or a list of them (e.g. ["create",
        "create2"]); `match`: only requests whose bytes contain it (a node
        name fragment). Returns the DropRule; rule.done is set once all
        were dropped.
        """
        rule = rule or DropRule(opcode, count, then, match)
        self._lt.call(self._rules.append, rule)
        return rule

    def drop_request(self, opcode, count=1, match=None, rule=None):
        """The next `count` requests of `opcode` (`match`: only those whose
        bytes contain it) never reach the server: each is swallowed and its
        connection reset at once. Returns the DropRule; rule.done is set
        once all were dropped."""
        rule = rule or DropRule(opcode, count, "reset", match, request=True)
        self._lt.call(self._rules.append, rule)
        return rule

    def answer_error(self, opcode, err, count=1, match=None, rule=None):
        """The replies to the next `count` requests of `opcode` reach the
        client as error replies with code `err` (module docstring).
        Returns the DropRule; rule.done is set once all were rewritten."""
        rule = rule or DropRule(opcode, count, None, match, err=err)
        self._lt.call(self._rules.append, rule)
        return rule

    def rewrite_reconnect(self, request_timeout_ms=None, reply_timeout_ms=None, rule=None):
        """Rewrite the handshake of the next reconnect through this proxy
        (see the module docstring). Returns the ConnectRule; rule.done is
        set once the server's answer to it went by."""
        rule = rule or ConnectRule(request_timeout_ms, reply_timeout_ms)
        self._lt.call(self._connect_rules.append, rule)
        return rule

    def last_session(self):
        """(sid, timeout ms, password) of the newest session granted through
        this proxy, or None."""
        got = self._lt.call(lambda: self._last_session)
        return got and got[1:]

    def clear_rules(self):
        def apply():
            self._rules.clear()
            self._connect_rules.clear()
        self._lt.call(apply)

    def stats(self):
        """A snapshot (deep copy) of the counters."""
        def snap():
            s = json.loads(json.dumps(self._stats))
            s["connections_open"] = len(self._conns)
            s["mode"] = self._mode
            return s
        return self._lt.call(snap)

    def reset_stats(self):
        def apply():
            self._stats = _new_stats()
        self._lt.call(apply)

    def connections(self):
        """[(conn id, session id or None, negotiated timeout ms or None)]"""
        return self._lt.call(
            lambda: sorted((c.cid, c.session_id, c.timeout_ms) for c in self._conns))

    def close(self):
        """Stop listening, RST every connection, stop the thread if ours."""
        if self._closed:
            return
        self._closed = True

        async def shut():
            if self._server is not None:
                self._server.close()
                await self._server.wait_closed()
            for c in list(self._conns):
                c.abort()
            # Let the transports run their connection_lost callbacks.
            for _ in range(3):
                await asyncio.sleep(0)
        try:
            if not self._loop.is_closed():
                self._lt.call(shut)
        finally:
            self._lt.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ProxiedEnsemble:
    """One FaultProxy in front of each server of an ensemble (one thread).

    `servers`: client ports (ints) or "host:port" strings. `connect_string`
    reaches every server through its proxy, so a client on it can be cut off
    from the whole ensemble (a partition of that client) while clients on the
    direct connect string are not.
    """

    def __init__(self, servers):
        self._lt = LoopThread("faultproxy-ensemble")
        self._lt.acquire()
        self.proxies = []
        try:
            for i, s in enumerate(servers):
                target = ("127.0.0.1", s) if isinstance(s, int) else s
                self.proxies.append(FaultProxy(target, loop_thread=self._lt,
                                               name=f"proxy{i}"))
        except BaseException:
            self.close()
            raise

    @property
    def connect_string(self):
        return ",".join(p.address for p in self.proxies)

    def __getitem__(self, i):
        return self.proxies[i]

    def __len__(self):
        return len(self.proxies)

    def set_pass(self):
        for p in self.proxies:
            p.set_pass()

    heal = set_pass

    def delay(self, ms, jitter_ms=0, direction="both"):
        for p in self.proxies:
            p.delay(ms, jitter_ms, direction)

    def blackhole(self, discard=True):
        self._on_all(lambda p: p._set_mode_on_loop("blackhole", discard))

    # The proxies share one loop thread, so a change made in one call on it
    # reaches all of them before any client reconnects: reset one by one, a
    # client RST by the first could reach the next before its turn and be RST
    # again (a reconnect rewrite then spent on a connection thrown away).
    def _on_all(self, fn):
        return self._lt.call(lambda: [fn(p) for p in self.proxies])

    def deaf(self):
        self._on_all(lambda p: p._set_mode_on_loop("deaf"))

    def refuse(self):
        self._on_all(lambda p: p._set_mode_on_loop("refuse"))

    def reset(self, refuse=False):
        return sum(self._on_all(lambda p: p._reset_on_loop(refuse)))

    def drop_reply(self, opcode, count=1, then=None, match=None):
        """One rule shared by all proxies: `count` drops in total."""
        rule = DropRule(opcode, count, then, match)
        for p in self.proxies:
            p.drop_reply(opcode, rule=rule)
        return rule

    def drop_request(self, opcode, count=1, match=None):
        """One rule shared by all proxies: `count` drops in total."""
        rule = DropRule(opcode, count, "reset", match, request=True)
        for p in self.proxies:
            p.drop_request(opcode, rule=rule)
        return rule

    def answer_error(self, opcode, err, count=1, match=None):
        """One rule shared by all proxies: `count` rewrites in total."""
        rule = DropRule(opcode, count, None, match, err=err)
        for p in self.proxies:
            p.answer_error(opcode, err, rule=rule)
        return rule

    def rewrite_reconnect(self, request_timeout_ms=None, reply_timeout_ms=None):
        """One rule shared by all proxies: the next reconnect through any."""
        rule = ConnectRule(request_timeout_ms, reply_timeout_ms)
        for p in self.proxies:
            p.rewrite_reconnect(rule=rule)
        return rule

    def last_session(self):
        """(sid, timeout ms, password) of the newest session granted through
        any of the proxies, or None."""
        got = [p._lt.call(lambda p=p: p._last_session) for p in self.proxies]
        got = [g for g in got if g]
        return max(got)[1:] if got else None

    def clear_rules(self):
        for p in self.proxies:
            p.clear_rules()

    def stats(self):
        """Per-proxy snapshots plus "total" with the numeric counters summed."""
        per = [p.stats() for p in self.proxies]
        total = _new_stats()
        for s in per:
            for k, v in s.items():
                if k == "requests":
                    for op, n in v.items():
                        total["requests"][op] = total["requests"].get(op, 0) + n
                elif k == "sessions":
                    total["sessions"].extend(v)
                elif isinstance(v, int) and k in total:
                    total[k] += v
        return {"proxies": per, "total": total}

    def reset_stats(self):
        for p in self.proxies:
            p.reset_stats()

    def close(self):
        for p in self.proxies:
            p.close()
        self._lt.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -- command-line front end ---------------------------------------------------

def apply_command(proxies, line, shutdown=None):
    """Run one control line against `proxies`; returns the reply line."""
    words = line.split()
    if not words:
        return "ERR empty command"
    targets = proxies
    if words[0].startswith("@"):
        try:
            targets = [proxies[int(words[0][1:])]]
        except (ValueError, IndexError):
            return f"ERR no proxy {words[0]}"
        words = words[1:]
        if not words:
            return "ERR empty command"
    cmd, args = words[0], words[1:]
    try:
        if cmd == "pass":
            for p in targets:
                p.set_pass()
        elif cmd == "delay":
            ms = float(args[0])
            jitter = float(args[1]) if len(args) > 1 else 0
            direction = args[2] if len(args) > 2 else "both"
            for p in targets:
                p.delay(ms, jitter, direction)
        elif cmd == "blackhole":
            how = args[0] if args else "discard"
            if how not in ("discard", "hold"):
                return "ERR blackhole takes discard or hold"
            for p in targets:
                p.blackhole(discard=(how == "discard"))
        elif cmd == "refuse":
            for p in targets:
                p.refuse()
        elif cmd == "reset":
            refuse = bool(args) and args[0] == "refuse"
            n = sum(p.reset(refuse) for p in targets)
            return f"OK reset {n}"
        elif cmd == "drop_reply":
            count = int(args[1]) if len(args) > 1 else 1
            then = args[2] if len(args) > 2 and args[2] != "-" else None
            match = args[3] if len(args) > 3 else None
            rule = DropRule(args[0].split(","), count, then, match)
            for p in targets:
                p.drop_reply(rule.opcode, rule=rule)
        elif cmd == "clear_rules":
            for p in targets:
                p.clear_rules()
        elif cmd == "stats":
            return json.dumps([p.stats() for p in targets], sort_keys=True)
        elif cmd == "reset_stats":
            for p in targets:
                p.reset_stats()
        elif cmd == "ports":
            return "OK " + " ".join(str(p.port) for p in targets)
        elif cmd == "shutdown":
            if shutdown is not None:
                shutdown()
        else:
            return f"ERR unknown command {cmd}"
    except (ValueError, IndexError) as e:
        return f"ERR {cmd}: {e}"
    return "OK"


def _serve(args):
    proxies = []
    lt = LoopThread("faultproxy-cli")
    lt.acquire()
    stop = threading.Event()
    try:
        for i, t in enumerate(args.target):
            port = args.listen if i == 0 else 0
            proxies.append(FaultProxy(t, listen_port=port, loop_thread=lt))
        for i, p in enumerate(proxies):
            print(f"LISTEN {i} {p.address} -> {p.target[0]}:{p.target[1]}", flush=True)
        ctl = None
        if args.control:
            if os.path.exists(args.control):
                os.unlink(args.control)
            ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ctl.bind(args.control)
            ctl.listen(16)
            ctl.settimeout(0.2)

            def serve_ctl():
                while not stop.is_set():
                    try:
                        s, _ = ctl.accept()
                    except (socket.timeout, OSError):
                        continue
                    want_stop = threading.Event()
                    with s:
                        s.settimeout(10)
                        f = s.makefile("rwb")
                        try:
                            for raw in f:
                                reply = apply_command(proxies, raw.decode(errors="replace"),
                                                      want_stop.set)
                                f.write(reply.encode() + b"\n")
                                f.flush()
                                if want_stop.is_set():
                                    break
                        except OSError:
                            pass
                        finally:
                            # only after the reply is out: the main thread
                            # exits as soon as stop is set
                            if want_stop.is_set():
                                stop.set()
            threading.Thread(target=serve_ctl, name="ctl", daemon=True).start()
        if args.stdin_eof_exit:
            def watch_stdin():
                for raw in sys.stdin:
                    reply = apply_command(proxies, raw, stop.set)
                    print(reply, flush=True)
                stop.set()
            threading.Thread(target=watch_stdin, name="stdin", daemon=True).start()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        print("READY", flush=True)
        while not stop.wait(0.5):
            pass
        if ctl is not None:
            ctl.close()
            try:
                os.unlink(args.control)
            except OSError:
                pass
    finally:
        for p in proxies:
            p.close()
        lt.release()
    return 0


def _ctl(path, words):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(15)
        s.connect(path)
        s.sendall((" ".join(words) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    reply = buf.decode().strip()
    print(reply)
    return 1 if reply.startswith("ERR") or not reply else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "ctl":
        if len(argv) < 3:
            print("usage: faultproxy.py ctl CONTROL_SOCKET COMMAND [ARGS...]", file=sys.stderr)
            return 2
        return _ctl(argv[1], argv[2:])
    ap = argparse.ArgumentParser(description="ZooKeeper fault proxy")
    ap.add_argument("--target", action="append", required=True,
                    help="HOST:PORT of a ZooKeeper server (repeat for more proxies)")
    ap.add_argument("--listen", type=int, default=0,
                    help="port of the first proxy (0: any free port; the others always pick one)")
    ap.add_argument("--control", help="path of a Unix control socket")
    ap.add_argument("--stdin-eof-exit", action="store_true",
                    help="also read control commands from stdin; exit at its end")
    return _serve(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

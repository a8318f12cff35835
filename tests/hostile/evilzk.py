"""A hostile "ZooKeeper" on loopback: accepts TCP connections and answers
every one in a chosen way, never as a real server would.

Modes:
  silence    reads whatever comes, never answers
  close      closes each connection as soon as it is accepted
  garbage    answers the connect request with random bytes, then keeps
             sending random bytes
  truncated  a frame header announcing 40 bytes, 10 bytes of body, then
             silence with the connection open
  oversized  a frame header announcing 0x7fffffff bytes, then silence
  negative   a frame header announcing -1 bytes (0xffffffff), then silence
  badsession a well-formed ConnectResponse with session id 0 and timeout 0
  zerotimeout  a well-formed ConnectResponse that grants the session id and
             password the client asked for (a reconnect's), with timeout 0
  reset      sends a TCP RST (SO_LINGER 0) right after reading the request

Every connection is served in its own thread; the server stops when stop()
is called or after max_seconds, whichever comes first.
"""

import os
import random
import socket
import struct
import threading
import time

MODES = ("silence", "close", "garbage", "truncated", "oversized", "negative", "badsession",
         "zerotimeout", "reset")


class EvilZk:
    def __init__(self, mode, max_seconds=120):
        if mode not in MODES:
            raise ValueError(mode)
        self.mode = mode
        self.max_seconds = max_seconds
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._threads = []
        self._conns = []
        self._lock = threading.Lock()
        self._rng = random.Random(1234)

    @property
    def hosts(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        t = threading.Thread(target=self._accept_loop, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        with self._lock:
            for c in self._conns:
                try:
                    c.close()
                except OSError:
                    pass
        for t in self._threads:
            t.join(timeout=5)
        self.sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _accept_loop(self):
        deadline = time.monotonic() + self.max_seconds
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn, deadline), daemon=True)
            t.start()
            self._threads.append(t)

    def _read_some(self, conn, timeout=2.0):
        conn.settimeout(timeout)
        try:
            return conn.recv(4096)
        except OSError:
            return b""

    def _idle(self, conn, deadline):
        """Keep the connection open, reading and discarding, until the
        client closes it or the server stops."""
        conn.settimeout(0.2)
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                if not conn.recv(65536):
                    return
            except socket.timeout:
                continue
            except OSError:
                return

    def _serve(self, conn, deadline):
        try:
            m = self.mode
            if m == "close":
                conn.close()
                return
            req = self._read_some(conn)
            if m == "silence":
                self._idle(conn, deadline)
            elif m == "garbage":
                conn.settimeout(0.5)
                for _ in range(2000):
                    if self._stop.is_set() or time.monotonic() >= deadline:
                        break
                    try:
                        conn.sendall(bytes(self._rng.getrandbits(8) for _ in range(256)))
                    except OSError:
                        break
                    time.sleep(0.01)
            elif m == "truncated":
                conn.sendall(struct.pack(">i", 40) + b"\x00" * 10)
                self._idle(conn, deadline)
            elif m == "oversized":
                conn.sendall(struct.pack(">I", 0x7FFFFFFF))
                self._idle(conn, deadline)
            elif m == "negative":
                conn.sendall(struct.pack(">I", 0xFFFFFFFF))
                self._idle(conn, deadline)
            elif m == "badsession":
                # protocolVersion, timeOut, sessionId, passwd (16), readOnly
                body = struct.pack(">iiqi16s?", 0, 0, 0, 16, b"\0" * 16, False)
                conn.sendall(struct.pack(">i", len(body)) + body)
                self._idle(conn, deadline)
            elif m == "zerotimeout":
                # ConnectRequest: len, protocolVersion, lastZxidSeen,
                # timeOut, sessionId, passwd (len + bytes), readOnly
                sid, pw = 0, b"\0" * 16
                if len(req) >= 4 + 4 + 8 + 4 + 8 + 4:
                    sid, = struct.unpack_from(">q", req, 20)
                    n, = struct.unpack_from(">i", req, 28)
                    if 0 <= n <= 64 and len(req) >= 32 + n:
                        pw = req[32:32 + n]
                body = struct.pack(">iiqi", 0, 0, sid, len(pw)) + pw + b"\0"
                conn.sendall(struct.pack(">i", len(body)) + body)
                self._idle(conn, deadline)
            elif m == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

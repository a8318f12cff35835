#!/usr/bin/python3
"""A real ZooKeeper ensemble on loopback, for tests (stdlib only).

Library:

    from bed.zkbed import Ensemble
    ens = Ensemble(n=3, tick_ms=200)
    ens.start()                      # bounded wait until the quorum serves
    ens.version                      # "debian" (3.8.0) or a release: "3.9.5"
    ens.connect_string               # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
    ens.stop_server(1); ens.start_server(1); ens.kill_server(ens.leader_index())
    ens.stop_server(1); ens.start_server(1, version="3.9")   # a rolling upgrade's step
    ens.four(0, "wchc"); ens.mntr(0); ens.watch_counts()
    ens.stop()                       # idempotent; also at exit and on SIGTERM

    ens = Ensemble(n=3, peer_links=True)   # server-to-server links through proxies
    ens.isolate(1)                   # server 1 cut off from its peers, not its clients
    ens.rejoin(1)
    ens.delay_links(20)              # every server-to-server link +20 ms each way

Command line (another process, e.g. a C++ test, controls the same ensemble
through the JSON state file in the directory):

    zkbed.py start --dir D [--n 3] [--tick-ms 200] [--zk-version V]   # last stdout line: hosts
    zkbed.py stop-server|kill-server|start-server --dir D --index I
    zkbed.py pause-server|resume-server --dir D --index I    # SIGSTOP/SIGCONT
    zkbed.py four --dir D --index I --cmd wchc
    zkbed.py hosts --dir D            # the connect string
    zkbed.py leader --dir D           # index of the quorum's leader
    zkbed.py status --dir D           # JSON: ports, PIDs, modes
    zkbed.py stop --dir D

TLS (optional): Ensemble(tls={"keystore": P, "truststore": P, "password": W,
"cafile": PEM}, plain_port=False) gives each server a secureClientPort
(Netty, server certificate from the keystore; clients need not present one
unless "client_auth": "need", which the truststore then vouches for) and,
with plain_port=False, no plain clientPort at all; secure_port(i) and
secure_connect_string name the TLS ports. The bed's own probes then speak
TLS, trusting cafile, presenting "client_cert"/"client_key" when given
(tests/tls/tlsbed.py make_ca_keys makes them all).

Server version: Ensemble(version=V), else $ZKELECT_ZK_VERSION, else
"debian": Debian's `zookeeper` package (3.8.0). Any other V is a release
("3.9.5", or a line, "3.9", for its newest) whose jars bed/zkdist.py fetches
from Maven Central on first use and caches outside the tree
(~/.cache/zkelect/zookeeper/V); ZkBedError says so when it cannot. An
attached ensemble (the CLI, a child process) runs the version it was started
with. One zoo.cfg serves every version from 3.5 on (the bed's self-tests,
test_zkbed.py, start each version that the cache holds).

Servers are run by QuorumPeerMain, each in its own
session (so a Ctrl-C on the terminal reaches the test, not the servers, and
the test decides the order of shutdown). Nothing outlives its owner: stop()
runs at interpreter exit and on SIGTERM/SIGINT/SIGHUP, and a watchdog process
stops the servers when the owner dies without a word (SIGKILL). Servers
started by the CLI `start` have no owner: `stop --dir` them.

Ports are random, below the kernel's ephemeral range, checked by binding,
and reserved machine-wide in $ZKBED_PORT_REGISTRY (/tmp/zkbed-ports) until
stop, so a server that is down for a restart keeps its ports. free_port()
and free_ports(n) hand out ports the same way to a test's own listeners,
reserved until the calling process exits.

Environment: ZKBED_KEEP=1 keeps the data and logs after stop;
ZKBED_START_TIMEOUT (seconds, default 60); ZKBED_JAVA (default java).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import fcntl
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import warnings
import time

__all__ = ["Ensemble", "ZkBedError", "four_letter", "four_quiet", "free_port", "free_ports"]

JAVA = os.environ.get("ZKBED_JAVA", "java")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
FOUR_LETTER_WORDS = "mntr,srvr,cons,stat,ruok,wchc,wchs,wchp,conf,crst,srst,envi,dump"
STATE_FILE = "zkbed.json"
LOCK_FILE = "zkbed.lock"

# Ports a bench ensemble may hold on this machine: never hand them out.
RESERVED_PORTS = set(range(21810, 21814)) | set(range(28881, 28884)) | set(range(38881, 38884))

PORT_REGISTRY = os.environ.get("ZKBED_PORT_REGISTRY",
                               os.path.join(tempfile.gettempdir(), "zkbed-ports"))
# A fresh ensemble serves in about 1.5 s here; 20 s is far beyond a slow start.
STRAGGLER_S = 20.0
_PROBE_LINE = re.compile(r"Processing (ruok|srvr|mntr|conf|stat) command")
START_TIMEOUT = float(os.environ.get("ZKBED_START_TIMEOUT", "60"))
STOP_GRACE = 10.0          # SIGTERM -> SIGKILL
PORT_ATTEMPTS = 4          # fresh port sets tried when a chosen port is taken
POLL = 0.1                 # poll interval while waiting for a deadline
WATCHDOG_MAX_LIFETIME = float(os.environ.get("ZKBED_WATCHDOG_MAX_S", str(12 * 3600)))


class ZkBedError(RuntimeError):
    pass


if __package__:
    from . import zkdist
else:   # run as a script: its folder is sys.path[0]
    import zkdist


class _PortClash(ZkBedError):
    pass


# ---------------------------------------------------------------- processes

def _proc_stat(pid):
    """(state, starttime) of a process, or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # comm may hold spaces and parentheses: the fields follow the last ')'.
    rest = raw[raw.rindex(")") + 2:].split()
    return rest[0], int(rest[19])


def _threads_left(pid):
    """True if a thread of `pid` other than a dead leader still runs.

    A killed JVM's main thread turns zombie first, while its other threads
    still tear down and its sockets stay open: by the leader's state alone
    the server is gone, yet its ports are still bound."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                raw = f.read().decode("ascii", "replace")
        except OSError:
            continue
        if raw[raw.rindex(")") + 2:].split()[0] not in ("Z", "X", "x"):
            return True
    return False


def _wait_threads(pid, pred, timeout):
    """Until pred(state) holds for every thread of pid (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        states = []
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                        raw = f.read().decode("ascii", "replace")
                    states.append(raw[raw.rindex(")") + 2:].split()[0])
        except OSError:
            return True
        if all(pred(st) for st in states):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def _is_ours(pid, start_time):
    """True while `pid` is still the server we started (not a recycled PID,
    not a zombie waiting for its parent)."""
    if not pid:
        return False
    st = _proc_stat(pid)
    if st is None:
        return False
    if start_time is not None and st[1] != start_time:
        return False
    if st[0] in ("Z", "X", "x"):
        return _threads_left(pid)
    return True


def _wait_gone(pid, start_time, timeout, popen=None):
    deadline = time.monotonic() + timeout
    while True:
        if popen is not None:
            with contextlib.suppress(Exception):
                popen.poll()
        if not _is_ours(pid, start_time):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def _signal_ours(pid, start_time, sig):
    if _is_ours(pid, start_time):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _rmtree(path, attempts=5):
    """rmtree that tries again (bounded) if something still wrote into the
    tree while it was being removed."""
    for _ in range(attempts):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            return
        time.sleep(0.1)


# -------------------------------------------------------------------- ports

def _port_free(port, reuse=False):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Own generator: a test that seeds the global one must not make two processes
# pick the same "random" ports.
_RNG = random.SystemRandom()


# The owner written into the reservation of a port that free_ports() handed
# to this process (not to an ensemble): "pid:PID:STARTTIME".
_PID_OWNER = "pid:"


def _reservation_live(path):
    """True while the ensemble (or the process, free_ports()) named in a
    reservation file still runs."""
    try:
        with open(path) as f:
            holder = f.read()
        if holder.startswith(_PID_OWNER):
            _, pid, start_time = holder.split(":")
            return _is_ours(int(pid), int(start_time))
        with open(os.path.join(holder, STATE_FILE)) as f:
            return bool(json.load(f).get("started"))
    except FileNotFoundError:
        # Its ensemble may be starting (no state written yet).
        try:
            return time.time() - os.stat(holder).st_mtime < 2 * START_TIMEOUT
        except OSError:
            return False
    except (OSError, ValueError):
        return False


def _reserve(port, owner):
    """Claim `port` for the ensemble in directory `owner`, machine-wide.

    A stopped server's ports look free to a bind test, so without this
    another ensemble (another test run, another engineer's) could pick them
    while a server is down and the restart would fail."""
    if owner is None:
        return True
    os.makedirs(PORT_REGISTRY, exist_ok=True)
    path = os.path.join(PORT_REGISTRY, str(port))
    # The reservation appears whole (a hard link of a written file): an
    # empty one, just created and not yet written, read as a dead holder's.
    tmp = os.path.join(PORT_REGISTRY, f".{port}.{os.getpid()}.{_RNG.getrandbits(64):x}")
    with open(tmp, "w") as f:
        f.write(owner)
    try:
        for _ in range(2):
            try:
                os.link(tmp, path)
                return True
            except FileExistsError:
                if not _clear_stale(path):
                    return False
        return False
    finally:
        os.unlink(tmp)


def _clear_stale(path):
    """Remove the reservation at `path` if its holder is gone; False when it
    is live. Under the registry's lock, and only the very file found stale:
    two processes that both found one stale and both removed "it" would
    remove the first one's fresh reservation, and both would own the port
    (pytest workers pick ports side by side)."""
    fd = os.open(os.path.join(PORT_REGISTRY, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            before = os.stat(path)
        except FileNotFoundError:
            return True
        if _reservation_live(path):
            return False
        # Still the file found dead (its owner's _release may have removed
        # it meanwhile, and another reservation taken its place).
        with contextlib.suppress(FileNotFoundError):
            now = os.stat(path)
            if (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns):
                os.unlink(path)
        return True
    finally:
        os.close(fd)


def _release(ports, owner):
    for port in ports:
        path = os.path.join(PORT_REGISTRY, str(port))
        try:
            with open(path) as f:
                mine = f.read() == owner
            if mine:
                os.unlink(path)
        except OSError:
            pass


def _pick_ports(count, avoid=(), owner=None):
    """`count` distinct free loopback ports, reserved for `owner` (a base dir).

    Chosen at random BELOW the kernel's ephemeral range, verified by binding:
    a port from bind(0) lies inside that range, where any outgoing connection
    (a client of this very ensemble) may get it as its local port while a
    server is down for a restart, and the server could not come back."""
    low, high = 15000, _ephemeral_low() - 1
    avoid = set(avoid) | RESERVED_PORTS
    ports = []

    def take(p):
        if p in avoid or p in ports or not _port_free(p):
            return
        if _reserve(p, owner):
            ports.append(p)

    if high - low > 1000:
        for _ in range(count * 50):
            if len(ports) == count:
                break
            take(_RNG.randint(low, high))
    # Odd kernel settings: fall back to what the kernel hands out.
    for _ in range(count * 20):
        if len(ports) == count:
            break
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        take(p)
    if len(ports) != count:
        _release(ports, owner)
        raise ZkBedError(f"could not find {count} free loopback ports")
    return ports


_process_ports = []          # reserved by free_ports(), released at exit


def _release_process_ports():
    _release(_process_ports, _process_owner())


def _process_owner():
    return f"{_PID_OWNER}{os.getpid()}:{_proc_stat(os.getpid())[1]}"


def free_ports(count):
    """`count` distinct free loopback ports, for a test's own listener (or a
    port where nothing listens): chosen as an ensemble's are (below the
    kernel's ephemeral range, checked by binding, never one reserved by a
    running ensemble of any test run) and reserved machine-wide for this
    process until it exits, so no ensemble starts on them meanwhile. The
    tests' one free-port helper."""
    ports = _pick_ports(count, owner=_process_owner())
    if not _process_ports:
        atexit.register(_release_process_ports)
    _process_ports.extend(ports)
    return ports


def free_port():
    """One port of free_ports()."""
    return free_ports(1)[0]


# ----------------------------------------------------------- wire protocol

# Ports that speak only TLS (secureClientPort without a plain clientPort):
# port -> (CA file the probes trust, (cert, key) they present or None).
_TLS_PORTS = {}


def _connect(port, timeout, host="127.0.0.1"):
    s = socket.create_connection((host, port), timeout=timeout)
    tls = _TLS_PORTS.get(port) if host == "127.0.0.1" else None
    if tls is None:
        return s
    cafile, client = tls
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    if client:  # servers with ssl.clientAuth=need refuse probes without one
        ctx.load_cert_chain(*client)
    try:
        return ctx.wrap_socket(s)
    except BaseException:
        s.close()
        raise

def four_letter(port, cmd, timeout=3.0):
    """Send a four-letter word to 127.0.0.1:port (or to "host:port", a
    server of a connect string); the whole answer. The bed's one
    four-letter-word client: the tests and the benchmarks use it."""
    host = "127.0.0.1"
    if isinstance(port, str):
        host, port = port.rsplit(":", 1)
    with _connect(int(port), timeout, host) as s:
        s.settimeout(timeout)
        s.sendall(cmd.encode("ascii"))
        chunks = []
        deadline = time.monotonic() + timeout
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{cmd} on port {port}: no end of answer within {timeout} s")
    return b"".join(chunks).decode("utf-8", "replace")


def four_quiet(port, cmd, timeout=2.0):
    """four_letter(), "" when the server does not answer."""
    try:
        return four_letter(port, cmd, timeout)
    except OSError:
        return ""


def _mode(port):
    for line in four_quiet(port, "srvr").splitlines():
        if line.startswith("Mode: "):
            return line[6:].strip()
    return None


def _recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            raise ConnectionError("server closed the connection")
        buf += b
    return buf


def _recv_frame(s):
    (length,) = struct.unpack(">i", _recv_exact(s, 4))
    if length < 0 or length > 1 << 20:
        raise ConnectionError(f"bad frame length {length}")
    return _recv_exact(s, length)


def _send_frame(s, body):
    s.sendall(struct.pack(">i", len(body)) + body)


# ZSESSIONCLOSEDREQUIRESASLAUTH: the server requires SASL of this session.
SASL_REQUIRED = -124


def session_probe(port, timeout=3.0, session_timeout_ms=10000):
    """Open a real ZooKeeper session on 127.0.0.1:port, read a node, close it.

    Session creation and close are transactions of the quorum, so success
    means this server serves clients through an elected leader; a server that
    is up but not in a quorum drops the connection instead.
    Returns (session id, negotiated session timeout in ms)."""
    with _connect(port, timeout) as s:
        s.settimeout(timeout)
        # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId,
        # passwd (buffer), readOnly.
        _send_frame(s, struct.pack(">iqiqi16s?", 0, 0, session_timeout_ms, 0, 16, b"\0" * 16, False))
        resp = _recv_frame(s)
        _proto, neg_timeout, session_id = struct.unpack(">iiq", resp[:16])
        if session_id == 0 or neg_timeout <= 0:
            raise ConnectionError("server refused the session")
        # exists("/zookeeper", watch=false), xid 1, opcode 3
        path = b"/zookeeper"
        _send_frame(s, struct.pack(">iii", 1, 3, len(path)) + path + b"\0")
        xid, _zxid, err = struct.unpack(">iqi", _recv_frame(s)[:16])
        if xid == 1 and err == SASL_REQUIRED:
            # A server that requires SASL (enforce.auth.schemes=sasl)
            # refuses any request of an unauthenticated session and closes
            # the connection: it created the session, a transaction of the
            # quorum, which is what this probe asks. The session expires.
            return session_id, neg_timeout
        if xid != 1 or err != 0:
            raise ConnectionError(f"exists failed: xid={xid} err={err}")
        # closeSession, xid 2, opcode -11
        _send_frame(s, struct.pack(">ii", 2, -11))
        xid, _zxid, err = struct.unpack(">iqi", _recv_frame(s)[:16])
        if xid != 2 or err != 0:
            raise ConnectionError(f"closeSession failed: xid={xid} err={err}")
        return session_id, neg_timeout


def _probe_ok(port, timeout=3.0):
    try:
        session_probe(port, timeout)
        return True
    except (OSError, struct.error):
        return False


# -------------------------------------------------------------- clean-up

_LIVE = set()                 # ensembles this process owns
_LIVE_LOCK = threading.Lock()
_HANDLERS_INSTALLED = False
_PREV_HANDLERS = {}


def _stop_all_live():
    with _LIVE_LOCK:
        live = list(_LIVE)
    for ens in live:
        if ens._owner_pid == os.getpid():    # never from a fork()ed child
            with contextlib.suppress(Exception):
                ens.stop()


def _on_signal(signum, frame):
    _stop_all_live()
    prev = _PREV_HANDLERS.get(signum, signal.SIG_DFL)
    if callable(prev):
        prev(signum, frame)                  # e.g. KeyboardInterrupt for SIGINT
        return
    if prev == signal.SIG_IGN:
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers():
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED:
        return
    _HANDLERS_INSTALLED = True
    atexit.register(_stop_all_live)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            prev = signal.getsignal(sig)
            if prev == signal.SIG_IGN:      # e.g. SIGHUP under nohup: leave it so
                continue
            _PREV_HANDLERS[sig] = prev
            signal.signal(sig, _on_signal)


# ---------------------------------------------------------------- ensemble

class Ensemble:
    """n ZooKeeper servers on loopback. Index i is 0..n-1 (server id i+1)."""

    def __init__(self, n=3, tick_ms=200, base_dir=None, init_limit=20, sync_limit=10,
                 heap="256m", extra_cfg=None, peer_links=False, tls=None, plain_port=True,
                 server_cfg=None, version=None, reconfig=False, members=None, jvm_flags=None):
        if n < 1:
            raise ValueError("n must be >= 1")
        if tick_ms < 10:
            raise ValueError("tick_ms too small")
        # The server release: "debian" (the package) or "3.X.Y" from the
        # cache (bed/zkdist.py); None is $ZKELECT_ZK_VERSION, else debian.
        try:
            self.version = zkdist.normalize(version)
        except zkdist.ZkDistError as e:
            raise ZkBedError(str(e)) from None
        self._classpath = None
        self.n = int(n)
        self.tick_ms = int(tick_ms)
        self.init_limit = int(init_limit)
        self.sync_limit = int(sync_limit)
        self.heap = heap
        self.extra_cfg = dict(extra_cfg or {})
        # server_cfg: {index: {key: value}} for one server's zoo.cfg only
        # (e.g. a maxSessionTimeout that differs between servers).
        self.server_cfg = {int(k): dict(v) for k, v in (server_cfg or {}).items()}
        # reconfig: dynamic reconfiguration on (ZooKeeper 3.5+; ACLs skipped
        # so any client may reconfig), every server line with its client
        # address. members: the servers of the first configuration, which
        # start() starts; the others (members..n-1) know all n and join when
        # started with start_server(i), as non-voting followers until a
        # reconfig adds them (server_spec(i) is their line for it).
        self.reconfig = bool(reconfig)
        self.members = self.n if members is None else int(members)
        if not 1 <= self.members <= self.n or (self.members < self.n and not self.reconfig):
            raise ValueError("members must be 1..n, and below n only with reconfig=True")
        self.tls = dict(tls) if tls else None
        # jvm_flags: more -D options for every server's JVM (SASL's JAAS
        # file, Kerberos's krb5.conf: tests/sasl/saslbed.py).
        self.jvm_flags = list(jvm_flags or [])
        self.plain_port = bool(plain_port) or not tls
        # peer_links: every server reaches each peer's quorum and election
        # ports through a FaultProxy (tests/bed/faultproxy.py) owned by this
        # object, so a test can cut a server off from its peers while its
        # clients still reach it directly (isolate/rejoin). Each server's
        # config names its own ports as they are and its peers' ports as the
        # proxies' ports; ZooKeeper accepts configs that differ so.
        self.peer_links = bool(peer_links)
        self._links = {}          # (from i, to j, "quorum"|"election") -> FaultProxy
        self._links_loop = None
        self._given_dir = base_dir
        self.base_dir = None
        self._created_dir = False
        self._procs = {}          # pid -> Popen, for servers that are our children
        self._state = None
        self._owner_pid = os.getpid()
        self._owned = True
        self._watchdog = None     # (Popen, write fd)
        self._lock = threading.RLock()
        self._flock_depth = 0

    # -- attach / state ----------------------------------------------------

    @classmethod
    def attach(cls, base_dir):
        """Control an ensemble that another process started in base_dir.
        stop() on the result stops it; nothing happens at this process' exit."""
        base_dir = os.path.abspath(base_dir)
        path = os.path.join(base_dir, STATE_FILE)
        try:
            with open(path) as f:
                st = json.load(f)
        except FileNotFoundError:
            raise ZkBedError(f"no ensemble in {base_dir} ({STATE_FILE} missing)") from None
        ens = cls(n=st["n"], tick_ms=st["tick_ms"], base_dir=base_dir, tls=st.get("tls"),
                  plain_port=st.get("plain_port", True), jvm_flags=st.get("jvm_flags"),
                  version=st.get("zk_version", zkdist.DEBIAN))
        ens._classpath = st.get("classpath")
        ens.base_dir = base_dir
        ens._created_dir = st.get("created_dir", False)
        ens._state = st
        ens._register_tls()
        ens._owned = False
        return ens

    @contextlib.contextmanager
    def _locked(self):
        """Serialises state changes across threads and processes. Re-entrant:
        a signal handler may stop the ensemble while the main thread, which
        it interrupted, holds the lock (a second flock would wait forever)."""
        with self._lock:
            if self._flock_depth:
                self._flock_depth += 1
                try:
                    self._load()
                    yield
                finally:
                    self._flock_depth -= 1
                return
            fd = os.open(os.path.join(self.base_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._flock_depth = 1
                self._load()
                yield
            finally:
                self._flock_depth = 0
                os.close(fd)

    def _load(self):
        # Under the thread lock: a thread in the middle of a change (_spawn
        # has set a new server's pid in the state it holds, _save not yet
        # run) must not have that state replaced by the file's older one,
        # or its _save writes the old one back and the running server is
        # lost to the bed ("pid None", its ports held by an orphan: the
        # explorer's heal met it, its steps run on threads of their own).
        with self._lock:
            path = os.path.join(self.base_dir, STATE_FILE)
            try:
                with open(path) as f:
                    self._state = json.load(f)
            except FileNotFoundError:
                pass

    def _register_tls(self):
        if self.tls and not self.plain_port and self._state:
            for s in self._state["servers"]:
                client = ((self.tls["client_cert"], self.tls["client_key"])
                          if self.tls.get("client_cert") else None)
                _TLS_PORTS[s["client_port"]] = (self.tls["cafile"], client)

    def _save(self):
        path = os.path.join(self.base_dir, STATE_FILE)
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(self._state, f, indent=1)
        os.replace(tmp, path)

    def _require_started(self):
        if self._state is None or self.base_dir is None:
            raise ZkBedError("ensemble not started")
        self._load()
        if not self._state.get("started"):
            raise ZkBedError("ensemble is stopped")

    def _srv(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"server index {i} not in 0..{self.n - 1}")
        return self._state["servers"][i]

    # -- public properties ------------------------------------------------

    @property
    def connect_string(self):
        self._require_started()
        return ",".join(f"127.0.0.1:{s['client_port']}" for s in self._state["servers"])

    hosts = connect_string

    @property
    def secure_connect_string(self):
        self._require_started()
        return ",".join(f"127.0.0.1:{self.secure_port(i)}" for i in range(self.n))

    def secure_port(self, i):
        """The TLS client port of server i (None without tls)."""
        self._require_started()
        s = self._srv(i)
        return s.get("secure_port")

    def client_port(self, i):
        self._require_started()
        return self._srv(i)["client_port"]

    def pid(self, i):
        self._require_started()
        s = self._srv(i)
        return s["pid"] if _is_ours(s["pid"], s["start_time"]) else None

    def is_running(self, i):
        return self.pid(i) is not None

    def log_path(self, i):
        self._require_started()
        return os.path.join(self._srv(i)["dir"], "server.log")

    # -- start ---------------------------------------------------------------

    def start(self, timeout=None):
        """Start every server; return once each answers imok, serves a real
        session and exactly one leader exists. Idempotent."""
        timeout = START_TIMEOUT if timeout is None else timeout
        with self._lock:
            if self._state is not None and self._state.get("started"):
                return self
            # Before anything runs: the first use of a release fetches it
            # (bounded by zkdist.FETCH_TIMEOUT), and one that cannot be had
            # is this error, not a server that died.
            try:
                self._classpath = zkdist.classpath(self.version, tls=bool(self.tls))
            except zkdist.ZkDistError as e:
                raise ZkBedError(f"ZooKeeper {self.version}: {e}") from None
            if self._given_dir is not None:
                self.base_dir = os.path.abspath(self._given_dir)
                self._created_dir = not os.path.isdir(self.base_dir)
                os.makedirs(self.base_dir, exist_ok=True)
                if os.path.exists(os.path.join(self.base_dir, STATE_FILE)):
                    other = Ensemble.attach(self.base_dir)
                    if any(_is_ours(s["pid"], s["start_time"]) for s in other._state["servers"]):
                        raise ZkBedError(f"an ensemble already runs in {self.base_dir}")
            else:
                self.base_dir = tempfile.mkdtemp(prefix="zkbed-")
                self._created_dir = True
            if self._owned:
                with _LIVE_LOCK:
                    _LIVE.add(self)
                _install_handlers()
                self._start_watchdog()
            deadline = time.monotonic() + timeout
            tried = set()
            try:
                for attempt in range(PORT_ATTEMPTS):
                    per = 4 if self.tls and self.plain_port else 3
                    ports = _pick_ports(per * self.n, avoid=tried, owner=self.base_dir)
                    tried.update(ports)
                    with self._locked():
                        self._write_configs(ports)
                        for i in range(self.members):
                            self._spawn(i)
                        self._save()
                    try:
                        self._wait_joined(range(self.members), deadline)
                        return self
                    except _PortClash:
                        if attempt == PORT_ATTEMPTS - 1:
                            raise
                        self._kill_all()
                        _release(ports, self.base_dir)
            except Exception as e:
                tails = self._log_tails()
                with contextlib.suppress(Exception):
                    self.stop()
                raise ZkBedError(f"ZooKeeper ensemble did not start: {e}\n{tails}") from e
            except BaseException:
                with contextlib.suppress(Exception):
                    self.stop()
                raise

    def _write_configs(self, ports):
        servers = []
        for i in range(self.n):
            d = os.path.join(self.base_dir, f"s{i + 1}")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(os.path.join(d, "data"))
            per = 4 if self.tls and self.plain_port else 3
            cp, qp, ep = ports[per * i: per * i + 3]
            # Without a plain port, client_port is the TLS one: the port the
            # bed's probes talk to.
            sp = ports[per * i + 3] if per == 4 else (cp if self.tls else None)
            servers.append({"id": i + 1, "dir": d, "client_port": cp, "quorum_port": qp,
                            "election_port": ep, "pid": None, "start_time": None})
            if sp is not None:
                servers[-1]["secure_port"] = sp
        self._close_links()
        if self.peer_links and self.n > 1:
            if __package__:
                from .faultproxy import FaultProxy, LoopThread
            else:   # run as a script: its folder is sys.path[0]
                from faultproxy import FaultProxy, LoopThread
            self._links_loop = LoopThread("zkbed-links")
            for i in range(self.n):
                for j in range(self.n):
                    if i == j:
                        continue
                    for kind in ("quorum", "election"):
                        self._links[(i, j, kind)] = FaultProxy(
                            ("127.0.0.1", servers[j][kind + "_port"]), raw=True,
                            loop_thread=self._links_loop, name=f"link-{i}-{j}-{kind}")
        for i, s in enumerate(servers):
            cfg = {
                "tickTime": self.tick_ms,
                "initLimit": self.init_limit,
                "syncLimit": self.sync_limit,
                "dataDir": os.path.join(s["dir"], "data"),
                "clientPort": s["client_port"],
                "clientPortAddress": "127.0.0.1",
                # 2 ticks is the server's floor anyway; written out so tests
                # know that 1-2 s sessions are accepted as asked.
                "minSessionTimeout": 2 * self.tick_ms,
                "maxSessionTimeout": 30000,
                # Every client comes from 127.0.0.1: the default of 60
                # connections per address is hit by tests with many sessions.
                "maxClientCnxns": 0,
                "4lw.commands.whitelist": FOUR_LETTER_WORDS,
                "admin.enableServer": "false",
                "autopurge.purgeInterval": 0,
                # Test data need not survive a power cut; fsync latency on a
                # busy shared disk would otherwise set the pace of every test.
                # A killed server loses nothing (the page cache survives it).
                "forceSync": "no",
                "preAllocSize": 4096,
                "standaloneEnabled": "true",
                "reconfigEnabled": "false",
            }
            if self.reconfig:
                cfg.update({"standaloneEnabled": "false", "reconfigEnabled": "true",
                            "skipACL": "yes"})
            if self.tls:
                cfg.update({
                    "secureClientPort": s["secure_port"],
                    "secureClientPortAddress": "127.0.0.1",
                    "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
                    "ssl.keyStore.location": self.tls["keystore"],
                    "ssl.keyStore.password": self.tls["password"],
                    "ssl.trustStore.location": self.tls["truststore"],
                    "ssl.trustStore.password": self.tls["password"],
                    "ssl.clientAuth": self.tls.get("client_auth", "none"),
                })
                if not self.plain_port:
                    del cfg["clientPort"], cfg["clientPortAddress"]
            cfg.update(self.extra_cfg)
            cfg.update(self.server_cfg.get(i, {}))
            lines = [f"{k}={v}" for k, v in cfg.items()]
            if self.n > 1 or self.reconfig:
                with open(os.path.join(s["dir"], "data", "myid"), "w") as f:
                    f.write(f"{s['id']}\n")
                known = servers if i >= self.members else servers[:self.members]
                for j, o in enumerate(known):
                    qp, ep = o["quorum_port"], o["election_port"]
                    if (i, j, "quorum") in self._links:
                        qp = self._links[(i, j, "quorum")].port
                        ep = self._links[(i, j, "election")].port
                    line = f"server.{o['id']}=127.0.0.1:{qp}:{ep}"
                    if self.reconfig:
                        line += f":participant;127.0.0.1:{o['client_port']}"
                    lines.append(line)
            with open(os.path.join(s["dir"], "zoo.cfg"), "w") as f:
                f.write("\n".join(lines) + "\n")
        self._state = {"version": 1, "n": self.n, "tick_ms": self.tick_ms, "started": True,
                       "created_dir": self._created_dir, "owner_pid": os.getpid(),
                       "zk_version": self.version, "classpath": self._classpath,
                       "servers": servers}
        if self.tls:
            self._state["tls"] = self.tls
        if self.jvm_flags:
            self._state["jvm_flags"] = self.jvm_flags
            self._state["plain_port"] = self.plain_port
        self._register_tls()

    def _spawn(self, i):
        """Start server i (state lock held)."""
        s = self._srv(i)
        if _is_ours(s["pid"], s["start_time"]):
            return
        cmd = [JAVA, "-Xms32m", f"-Xmx{self.heap}", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
               "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true",
               "-Dzookeeper.admin.enableServer=false", "-Dzookeeper.jmx.log4j.disable=true",
               # A LOOKING server re-sends its votes at most every 2 s (default
               # 60 s), so a server restarted into an idle quorum rejoins fast.
               "-Dzookeeper.fastleader.maxNotificationInterval=2000",
               "-Dzookeeper.cnxTimeout=2000", "-Dzookeeper.electionPortBindRetry=2",
               "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
               *self.jvm_flags,
               "-cp", s.get("classpath") or self._server_classpath(), MAIN_CLASS, os.path.join(s["dir"], "zoo.cfg")]
        log = open(os.path.join(s["dir"], "server.log"), "ab")
        try:
            log.write(f"==== zkbed: starting server {s['id']} at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            s["log_offset_at_start"] = log.tell()
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 cwd=s["dir"], start_new_session=True, close_fds=True)
        finally:
            log.close()
        st = None
        for _ in range(100):
            st = _proc_stat(p.pid)
            if st is not None:
                break
            time.sleep(0.01)
        s["pid"] = p.pid
        s["start_time"] = st[1] if st else None
        self._procs[p.pid] = p

    def _server_classpath(self):
        cp = self._classpath or (self._state or {}).get("classpath")
        if not cp:
            try:
                cp = zkdist.classpath(self.version, tls=bool(self.tls))
            except zkdist.ZkDistError as e:
                raise ZkBedError(f"ZooKeeper {self.version}: {e}") from None
        self._classpath = cp
        return cp

    def server_release(self, i):
        """The release server i was started as: the ensemble's version, or
        the one a start_server(i, version=V) gave it."""
        self._require_started()
        return self._srv(i).get("zk_version") or self.version

    def server_version(self, i=None):
        """What a running server says it is (srvr's "Zookeeper version:"
        line, e.g. "3.9.5-..."); server i, else the first that answers."""
        self._require_started()
        for j in ([i] if i is not None else range(self.n)):
            for line in four_quiet(self.client_port(j), "srvr").splitlines():
                if line.startswith("Zookeeper version:"):
                    return line.split(":", 1)[1].strip()
        return None

    # -- waiting -----------------------------------------------------------

    def _reap(self):
        for pid, p in list(self._procs.items()):
            if p.poll() is not None:
                del self._procs[pid]

    def _bind_failed(self, i):
        log = self._log_since_start(i)
        return "Address already in use" in log or "BindException" in log

    def _port_users(self, i):
        """Who holds server i's ports now (ss), for the error of a port
        clash: a clash's cause is gone by the time anyone reads the log."""
        s = self._srv(i)
        ports = {str(s[k]) for k in ("client_port", "quorum_port", "election_port",
                                     "secure_port") if s.get(k)}
        try:
            out = subprocess.run(["ss", "-Htanp"], capture_output=True, text=True,
                                 timeout=10).stdout
        except (OSError, subprocess.SubprocessError) as e:
            return f"(ss: {e})"
        mine = [ln for ln in out.splitlines()
                if len(ln.split()) > 3 and ln.split()[3].rsplit(":", 1)[-1] in ports]
        return f"sockets on ports {sorted(ports)}:\n" + ("\n".join(mine) or "(none now)")

    def _check_alive(self, idx, scan_logs=False):
        """Raise if a server of `idx` died. A port taken by someone else
        between our choice and the server's bind kills the server (client or
        election port) or leaves a would-be leader retrying forever (quorum
        port): so the logs are scanned too, now and then."""
        for i in idx:
            s = self._srv(i)
            if not _is_ours(s["pid"], s["start_time"]):
                if self._bind_failed(i):
                    raise _PortClash(f"server {i} could not bind its ports; {self._port_users(i)}")
                raise ZkBedError(f"server {i} (pid {s['pid']}) exited")
            if scan_logs and self._bind_failed(i):
                raise _PortClash(f"server {i} could not bind its ports; {self._port_users(i)}")

    def _log_since_start(self, i):
        s = self._srv(i)
        try:
            with open(os.path.join(s["dir"], "server.log"), "rb") as f:
                f.seek(max(0, s.get("log_offset_at_start", 0) - 200))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _serving(self, i):
        port = self._srv(i)["client_port"]
        if four_quiet(port, "ruok") != "imok":
            return None
        mode = _mode(port)
        if mode not in ("leader", "follower", "standalone", "observer"):
            return None
        return mode

    def _wait_joined(self, idx, deadline):
        """_wait, but a server that is up and still not serving long after
        the others elected a leader is restarted once. CI saw a 3.9.5
        follower stay out of a fresh quorum for a whole minute (its log
        was not kept); a restart is what an operator would do, and the
        warning carries the straggler's log so the cause can be found."""
        idx = list(idx)
        t0 = time.monotonic()
        # Every STRAGGLER_S a look: on a loaded machine the others may not
        # have elected a leader by the first (then nobody is a straggler
        # yet, and the next look decides).
        for _ in range(1_000_000):     # ended by the deadline
            try:
                return self._wait(idx, min(deadline, time.monotonic() + STRAGGLER_S))
            except _PortClash:
                raise
            except ZkBedError:
                if time.monotonic() >= deadline:
                    raise
            with self._locked():
                self._load()
                modes = {i: self._serving(i) for i in idx
                         if _is_ours(self._srv(i)["pid"], self._srv(i)["start_time"])}
                leaders = [i for i, m in modes.items() if m in ("leader", "standalone")]
                stragglers = [i for i in idx if i in modes and modes[i] is None]
                if len(leaders) == 1 and stragglers and len(stragglers) <= len(idx) // 2:
                    break
        warnings.warn(f"zkbed: servers {stragglers} did not join the quorum in "
                      f"{time.monotonic() - t0:.0f} s while the others elected a leader; "
                      f"restarting them\n"
                      f"{self._log_tails(stragglers, 60)}", stacklevel=2)
        for i in stragglers:
            self._end_server(i, signal.SIGKILL, STOP_GRACE)
        with self._locked():
            for i in stragglers:
                self._spawn(i)
            self._save()
        return self._wait(idx, deadline)

    def _wait(self, idx, deadline):
        """Until servers `idx` serve sessions and the live servers agree on
        exactly one leader. Port clashes show up as a dead server."""
        idx = list(idx)
        last = "nothing answered yet"
        for rnd in range(1_000_000):     # ended by the deadline below
            self._reap()
            self._load()
            self._check_alive(idx, scan_logs=(rnd % 10 == 9))
            ok = True
            modes = {}
            for i in range(self.n):
                s = self._srv(i)
                if not _is_ours(s["pid"], s["start_time"]):
                    continue
                modes[i] = self._serving(i)
            if any(modes.get(i) is None for i in idx):
                ok = False
            leaders = [i for i, m in modes.items() if m in ("leader", "standalone")]
            if len(leaders) != 1:
                ok = False
            if ok:
                ok = all(_probe_ok(self._srv(i)["client_port"]) for i in idx)
            if ok:
                return
            last = f"modes={modes}"
            if time.monotonic() >= deadline:
                raise ZkBedError(f"timed out waiting for servers {idx} to serve ({last})")
            time.sleep(POLL)

    def wait_quorum(self, timeout=None):
        """Until every running server serves and exactly one leader exists."""
        self._require_started()
        timeout = START_TIMEOUT if timeout is None else timeout
        idx = [i for i in range(self.n) if self.is_running(i)]
        self._wait(idx, time.monotonic() + timeout)

    # -- single servers ------------------------------------------------------

    def start_server(self, i, timeout=None, version=None):
        """Start server i again (same ports and data); return once it serves
        and the quorum has a leader. version: run another release from now
        on (a rolling upgrade: "debian", "3.9", "3.9.5", as Ensemble takes;
        fetched on first use); the server keeps it over later restarts, and
        server_release(i) names it."""
        self._require_started()
        timeout = START_TIMEOUT if timeout is None else timeout
        if version is not None:
            try:
                v = zkdist.normalize(version)
                cp = zkdist.classpath(v, tls=bool(self.tls))
            except zkdist.ZkDistError as e:
                raise ZkBedError(f"ZooKeeper {version}: {e}") from None
        with self._locked():
            s = self._srv(i)
            if version is not None:
                if _is_ours(s["pid"], s["start_time"]):
                    raise ZkBedError(f"server {i} runs: stop it before starting it as {v}")
                s["zk_version"], s["classpath"] = v, cp
            self._spawn(i)
            self._save()
        try:
            self._wait([i], time.monotonic() + timeout)
        except ZkBedError as e:
            raise ZkBedError(f"{e}\n{self._log_tails([i])}") from None

    def server_spec(self, i):
        """Server i's line in a dynamic configuration, as a reconfig that
        adds it names it (reconfig=True)."""
        s = self._srv(i)
        return (f"server.{s['id']}=127.0.0.1:{s['quorum_port']}:{s['election_port']}"
                f":participant;127.0.0.1:{s['client_port']}")

    def start_servers(self, idx, timeout=None):
        """Start servers idx again together (each one serves only once a
        quorum of them runs, so one at a time would wait for ever); return
        once they serve and the quorum has a leader."""
        self._require_started()
        idx = list(idx)
        timeout = START_TIMEOUT if timeout is None else timeout
        with self._locked():
            for i in idx:
                self._srv(i)
                self._spawn(i)
            self._save()
        try:
            self._wait(idx, time.monotonic() + timeout)
        except ZkBedError as e:
            raise ZkBedError(f"{e}\n{self._log_tails(idx)}") from None

    def stop_server(self, i, grace=STOP_GRACE):
        """SIGTERM, then SIGKILL after `grace` seconds; returns once it is gone."""
        self._require_started()
        self._end_server(i, signal.SIGTERM, grace)

    def kill_server(self, i):
        """SIGKILL: a crash, no goodbye to clients or peers."""
        self._require_started()
        self._end_server(i, signal.SIGKILL, STOP_GRACE)

    @staticmethod
    def _wait_ports_free(s, timeout=5.0):
        """After a server exits, until its listening ports can be bound again
        (as the JVM binds them, with SO_REUSEADDR), so that a start_server
        right after never meets its own ghost."""
        deadline = time.monotonic() + timeout
        for port in {s["client_port"], s["quorum_port"], s["election_port"],
                     s.get("secure_port") or s["client_port"]}:
            while not _port_free(port, reuse=True) and time.monotonic() < deadline:
                time.sleep(0.02)

    def pause_server(self, i):
        """SIGSTOP: the server hangs with its connections open (a long GC
        pause, a stalled VM): clients and peers only notice by timeouts."""
        self._require_started()
        with self._locked():
            s = self._srv(i)
            if not _is_ours(s["pid"], s["start_time"]):
                raise ZkBedError(f"server {i} is not running")
            _signal_ours(s["pid"], s["start_time"], signal.SIGSTOP)
            s["paused"] = True
            self._save()
            # The signal lands asynchronously: return only once every thread
            # is stopped, or a request sent right after may still be served.
            if not _wait_threads(s["pid"], lambda st: st in ("T", "t", "Z", "X"), STOP_GRACE):
                raise ZkBedError(f"server {i} did not stop on SIGSTOP")

    def resume_server(self, i):
        """SIGCONT after pause_server(i)."""
        self._require_started()
        with self._locked():
            s = self._srv(i)
            _signal_ours(s["pid"], s["start_time"], signal.SIGCONT)
            s["paused"] = False
            self._save()
            _wait_threads(s["pid"], lambda st: st not in ("T", "t"), STOP_GRACE)

    def is_paused(self, i):
        self._require_started()
        return bool(self._srv(i).get("paused")) and self.is_running(i)

    def _end_server(self, i, sig, grace):
        with self._locked():
            s = self._srv(i)
            pid, st = s["pid"], s["start_time"]
            popen = self._procs.get(pid)
            _signal_ours(pid, st, sig)
            _signal_ours(pid, st, signal.SIGCONT)     # a paused JVM cannot act on SIGTERM
            if not _wait_gone(pid, st, grace, popen):
                _signal_ours(pid, st, signal.SIGKILL)
                if not _wait_gone(pid, st, STOP_GRACE, popen):
                    raise ZkBedError(f"server {i} (pid {pid}) survived SIGKILL")
            s["pid"] = None
            s["start_time"] = None
            s["paused"] = False
            self._save()
            self._reap()
            self._wait_ports_free(s)

    def heal(self, timeout=None):
        """Start every stopped server, resume every paused one, and wait for
        the quorum; returns the indices it had to bring back. Cheap (a look
        at /proc) when all is well."""
        self._require_started()
        healed = []
        for i in range(self.n):
            if not self.is_running(i):
                self.start_server(i, timeout)
                healed.append(i)
            elif self.is_paused(i):
                self.resume_server(i)
                healed.append(i)
        if healed:
            self.wait_quorum(timeout)
        return healed

    # -- links between servers (peer_links=True) -------------------------------

    def _require_links(self):
        if not self._links:
            raise ZkBedError("this ensemble was not started with peer_links=True")

    def links_of(self, i):
        """The proxies of every link from or to server i."""
        self._require_links()
        self._srv(i)
        return [p for (a, b, _), p in self._links.items() if i in (a, b)]

    def isolate(self, i):
        """Cut server i off from its peers as a partition does: its links
        to and from them stay open but carry nothing (no FIN, no RST), and
        new ones reach nobody. Its clients still reach it. What ZooKeeper
        itself makes of that: a follower keeps serving its clients' reads
        and pings until it has heard nothing from its leader for
        syncLimit x tickTime; the rest of the quorum stops hearing of its
        sessions at once."""
        for p in self.links_of(i):
            p.blackhole()

    def rejoin(self, i):
        """Lift isolate(i): connections that lost bytes are reset (the
        servers reconnect), new ones pass."""
        for p in self.links_of(i):
            p.set_pass()

    def delay_links(self, ms, jitter_ms=0):
        """Hold every byte between servers ms (+ U(0, jitter_ms)) each way,
        as a quorum spread over distant sites: every commit then costs the
        leader a round trip of 2 x ms to its followers. 0 lifts it."""
        self._require_links()
        for p in self._links.values():
            p.delay(ms, jitter_ms)

    def link_bytes(self, i):
        """Bytes delivered over the links of server i so far (both ways):
        a test proves a cut took effect by this number standing still."""
        return sum(p.stats()["bytes_out_c2s"] + p.stats()["bytes_out_s2c"]
                   for p in self.links_of(i))

    def _close_links(self):
        links, self._links = self._links, {}
        for p in links.values():
            with contextlib.suppress(Exception):
                p.close()
        if self._links_loop is not None:
            lt, self._links_loop = self._links_loop, None
            with contextlib.suppress(Exception):
                lt.stop()

    # -- four-letter words and helpers ---------------------------------------

    def four(self, i, cmd, timeout=3.0):
        """The answer of server i to a four-letter word (OSError if down)."""
        return four_letter(self.client_port(i), cmd, timeout)

    def mntr(self, i):
        out = {}
        for line in self.four(i, "mntr").splitlines():
            if "\t" not in line:
                continue
            k, v = line.split("\t", 1)
            try:
                out[k] = int(v)
            except ValueError:
                try:
                    out[k] = float(v)
                except ValueError:
                    out[k] = v
        return out

    def mode(self, i):
        """'leader', 'follower', 'standalone', or None when not serving."""
        return _mode(self.client_port(i))

    def leader_index(self, timeout=10.0):
        """Index of the quorum's leader; waits (bounded) while an election runs."""
        self._require_started()
        deadline = time.monotonic() + timeout
        while True:
            leaders = [i for i in range(self.n)
                       if self.is_running(i) and self.mode(i) in ("leader", "standalone")]
            if len(leaders) == 1:
                return leaders[0]
            if time.monotonic() >= deadline:
                raise ZkBedError(f"no single leader within {timeout} s (leaders: {leaders})")
            time.sleep(POLL)

    def wchc(self, i):
        """{session id (int): [paths it watches]} of server i."""
        out = {}
        cur = None
        for line in self.four(i, "wchc").splitlines():
            if not line.strip():
                continue
            if line.startswith("0x"):
                cur = int(line.strip(), 16)
                out.setdefault(cur, [])
            elif line[0].isspace() and cur is not None:
                out[cur].append(line.strip())
        return out

    def watch_counts(self):
        """{path: number of sessions watching it} over every running server
        (a session lives on one server, so the sum counts each once).

        ZooKeeper 3.8's wchc lists data watches only (getData, exists):
        child watches (getChildren) never show here; see watch_summary()."""
        counts = {}
        for i in range(self.n):
            if not self.is_running(i):
                continue
            try:
                sessions = self.wchc(i)
            except OSError:
                continue
            for paths in sessions.values():
                for p in set(paths):
                    counts[p] = counts.get(p, 0) + 1
        return counts

    def watch_summary(self):
        """{"data": n, "child": m, "all": n + m} watches over every running
        server. `all` is mntr's zk_watch_count (data and child watches), `data`
        is wchs' total, so `child` is what wchc cannot show. The two words are
        read one after the other: call it when the watches are quiet."""
        data = total = 0
        for i in range(self.n):
            if not self.is_running(i):
                continue
            try:
                total += int(self.mntr(i).get("zk_watch_count", 0))
                for line in self.four(i, "wchs").splitlines():
                    if line.startswith("Total watches:"):
                        data += int(line.split(":", 1)[1])
            except OSError:
                continue
        return {"data": data, "child": total - data, "all": total}

    # -- stop ------------------------------------------------------------------

    def _kill_all(self):
        with self._locked():
            for s in self._state["servers"]:
                _signal_ours(s["pid"], s["start_time"], signal.SIGKILL)
            for s in self._state["servers"]:
                _wait_gone(s["pid"], s["start_time"], STOP_GRACE, self._procs.get(s["pid"]))
                s["pid"] = s["start_time"] = None
                s["paused"] = False
            self._save()
            self._reap()

    def stop(self):
        """Stop every server (SIGTERM, SIGKILL after a bound) and remove the
        data unless ZKBED_KEEP=1. Idempotent."""
        with self._lock:
            if self.base_dir is None or not os.path.isdir(self.base_dir):
                self._forget()
                return
            self._load()
            if self._state is not None and "servers" in self._state:
                with self._locked():
                    servers = self._state["servers"]
                    for s in servers:
                        _signal_ours(s["pid"], s["start_time"], signal.SIGTERM)
                        _signal_ours(s["pid"], s["start_time"], signal.SIGCONT)
                    deadline = time.monotonic() + STOP_GRACE
                    for s in servers:
                        left = max(0.0, deadline - time.monotonic())
                        if not _wait_gone(s["pid"], s["start_time"], left, self._procs.get(s["pid"])):
                            _signal_ours(s["pid"], s["start_time"], signal.SIGKILL)
                            _wait_gone(s["pid"], s["start_time"], STOP_GRACE, self._procs.get(s["pid"]))
                        s["pid"] = s["start_time"] = None
                        s["paused"] = False
                    for s in servers:
                        self._wait_ports_free(s, timeout=2.0)
                    self._state["started"] = False
                    self._save()
                    self._reap()
                    _release(list({s[k] for s in servers
                                   for k in ("client_port", "quorum_port", "election_port",
                                             "secure_port") if s.get(k)}), self.base_dir)
            if os.environ.get("ZKBED_KEEP") != "1":
                if self._created_dir:
                    _rmtree(self.base_dir)
                else:
                    for i in range(self.n):
                        _rmtree(os.path.join(self.base_dir, f"s{i + 1}"))
                    for name in (STATE_FILE, LOCK_FILE):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(os.path.join(self.base_dir, name))
            self._forget()

    def _forget(self):
        self._close_links()
        self._stop_watchdog(kill_servers=False)
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def detach(self):
        """Leave the servers running after this process exits (the CLI's
        `start`); someone must `stop --dir` them later."""
        self._stop_watchdog(kill_servers=False)
        with _LIVE_LOCK:
            _LIVE.discard(self)
        self._owned = False
        for p in self._procs.values():
            p.returncode = 0     # keep Popen.__del__ from warning; not waited for
        self._procs.clear()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- watchdog ----------------------------------------------------------------

    def _start_watchdog(self):
        """A small process that kills the servers if this one dies without
        cleaning up (SIGKILL, a crash): it waits for EOF on a pipe whose only
        write end this process holds."""
        if self._watchdog is not None:
            return
        r, w = os.pipe()
        # Not the owner's stdout: `owner | cat` would wait for the watchdog.
        log = open(os.path.join(self.base_dir, "watchdog.log"), "ab")
        try:
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "_watchdog",
                                  "--dir", self.base_dir, "--fd", str(r)],
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                 pass_fds=(r,), start_new_session=True)
        finally:
            os.close(r)
            log.close()
        self._watchdog = (p, w)

    def _stop_watchdog(self, kill_servers):
        if self._watchdog is None:
            return
        p, w = self._watchdog
        self._watchdog = None
        with contextlib.suppress(OSError):
            if not kill_servers:
                os.write(w, b"d")
            os.close(w)
        with contextlib.suppress(Exception):
            p.wait(timeout=5)
        if p.poll() is None:
            p.kill()
            p.wait(timeout=5)

    # -- diagnostics ---------------------------------------------------------------

    def _log_tails(self, idx=None, lines=30):
        if self._state is None or "servers" not in self._state:
            return ""
        out = []
        for i in (range(self.n) if idx is None else idx):
            path = os.path.join(self._state["servers"][i]["dir"], "server.log")
            try:
                with open(path, "rb") as f:
                    f.seek(0, os.SEEK_END)
                    f.seek(max(0, f.tell() - 262144))
                    text = f.read().decode("utf-8", "replace").splitlines()
                # The bed's own ruok/srvr probes, ten a second, would fill
                # the tail and hide why a server is not serving.
                tail = [ln for ln in text if not _PROBE_LINE.search(ln)][-lines:]
            except OSError as e:
                tail = [f"(no log: {e})"]
            out.append(f"---- server {i} log tail ({path})\n" + "\n".join(tail))
        return "\n".join(out)

    def status(self):
        self._require_started()
        rows = []
        for i in range(self.n):
            s = self._srv(i)
            running = _is_ours(s["pid"], s["start_time"])
            paused = running and bool(s.get("paused"))
            rows.append({"index": i, "client_port": s["client_port"],
                         "pid": s["pid"] if running else None, "paused": paused,
                         "mode": self.mode(i) if running and not paused else None})
        return rows


# -------------------------------------------------------------------- CLI

def _watchdog_main(base_dir, fd):
    deadline = time.monotonic() + WATCHDOG_MAX_LIFETIME
    detached = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 5.0)
        if not ready:
            continue
        try:
            b = os.read(fd, 64)
        except OSError:
            b = b""
        if b"d" in b:
            detached = True
        if not b:
            break
    if detached:
        return 0
    with contextlib.suppress(Exception):
        if os.path.exists(os.path.join(base_dir, STATE_FILE)):
            Ensemble.attach(base_dir).stop()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="zkbed.py", description="ZooKeeper test ensemble on loopback")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start", help="start an ensemble, print its connect string, leave it running")
    p.add_argument("--dir", required=True)
    p.add_argument("--n", type=int, default=3)
    p.add_argument("--tick-ms", type=int, default=200)
    p.add_argument("--timeout", type=float, default=None)
    p.add_argument("--zk-version", default=None,
                   help="debian (default, or $ZKELECT_ZK_VERSION) or a release such as 3.9.5")
    for name in ("stop", "hosts", "status"):
        p = sub.add_parser(name)
        p.add_argument("--dir", required=True)
    for name in ("stop-server", "kill-server", "start-server", "pause-server", "resume-server"):
        p = sub.add_parser(name)
        p.add_argument("--dir", required=True)
        p.add_argument("--index", type=int, required=True)
    p = sub.add_parser("four", help="send a four-letter word to one server")
    p.add_argument("--dir", required=True)
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--cmd", required=True)
    p = sub.add_parser("leader", help="print the leader's index")
    p.add_argument("--dir", required=True)
    p = sub.add_parser("_watchdog")
    p.add_argument("--dir", required=True)
    p.add_argument("--fd", type=int, required=True)
    a = ap.parse_args(argv)

    try:
        if a.command == "_watchdog":
            return _watchdog_main(a.dir, a.fd)
        if a.command == "start":
            ens = Ensemble(n=a.n, tick_ms=a.tick_ms, base_dir=a.dir, version=a.zk_version)
            ens.start(timeout=a.timeout)
            ens.detach()
            print(f"ZooKeeper {ens.version} ensemble of {ens.n} up in {os.path.abspath(a.dir)}",
                  flush=True)
            print(ens.connect_string, flush=True)
            return 0
        if a.command == "stop":
            if not os.path.exists(os.path.join(a.dir, STATE_FILE)):
                print(f"no ensemble in {a.dir}", file=sys.stderr)
                return 0
            Ensemble.attach(a.dir).stop()
            return 0
        ens = Ensemble.attach(a.dir)
        if a.command == "hosts":
            print(ens.connect_string)
        elif a.command == "status":
            print(json.dumps(ens.status(), indent=1))
        elif a.command == "leader":
            print(ens.leader_index())
        elif a.command == "stop-server":
            ens.stop_server(a.index)
        elif a.command == "kill-server":
            ens.kill_server(a.index)
        elif a.command == "pause-server":
            ens.pause_server(a.index)
        elif a.command == "resume-server":
            ens.resume_server(a.index)
        elif a.command == "start-server":
            ens.start_server(a.index)
            ens.detach()
        elif a.command == "four":
            sys.stdout.write(ens.four(a.index, a.cmd))
        return 0
    except (ZkBedError, IndexError, OSError) as e:
        print(f"zkbed: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

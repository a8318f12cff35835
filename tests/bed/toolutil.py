"""Helpers for the tests of the zkelect command-line tool.

Real processes only: `zkelect` subprocesses (Proc for any subcommand, its
lines read by bed/lines.py; Candidates for `zkelect candidate`, driven by
bed/participant.py) and a ctypes view of libzkelect's C API to compare
against.
"""

import ctypes
import os
import signal
import subprocess
import time

from . import participant
from .lines import LinePump


class Proc:
    """A zkelect subprocess whose stdout lines are queued as they arrive."""

    def __init__(self, argv, env, stdin=True, cwd=None):
        self.argv = [str(a) for a in argv]
        self.proc = subprocess.Popen(
            self.argv, env=env, cwd=cwd, text=True, bufsize=1,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.lines = LinePump(self.proc.stdout)
        self.seen = []
        self.err = LinePump(self.proc.stderr).lines     # every stderr line so far

    @property
    def pid(self):
        return self.proc.pid

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def next_line(self, deadline):
        """The next stdout line, None at EOF; raises TimeoutError at deadline."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        line = self.lines.next(left)
        if line is not None:
            self.seen.append(line)
        return line

    def wait_line(self, pred, timeout, what="a line"):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.next_line(deadline)
            except TimeoutError:
                raise AssertionError(
                    f"timed out ({timeout} s) waiting for {what} from {self.argv[:2]}; "
                    f"stdout so far: {self.seen[-20:]}; stderr: {self.err[-10:]}") from None
            if line is None:
                raise AssertionError(f"{self.argv[:2]} ended (rc={self.proc.poll()}) before "
                                     f"{what}; stdout: {self.seen[-20:]}; stderr: {self.err[-10:]}")
            if pred(line):
                return line

    def wait(self, timeout):
        return self.proc.wait(timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def parse_event(line):
    """('LEADER', '3', ns, {'token': '..'}) for an EVENT line, else None."""
    ev = participant.parse_event(line)
    return ev and (ev.kind, ev.id, ev.ns, ev.kv)


class Candidates:
    """Several `zkelect candidate` processes, one participant each, their
    lines merged in arrival order (tests/bed/participant.py's Hub)."""

    def __init__(self, zkelect, env, hosts, path, ids, session_ms=2000, extra=()):
        self.hub = participant.Hub()
        self.procs = {
            str(i): participant.Participant(
                participant.candidate_argv(zkelect, hosts, path, i, 1, session_ms, extra),
                env, name=f"candidate[{i}]", stderr="pipe", hub=self.hub)
            for i in ids}

    @property
    def state(self):
        """id -> the kind of its latest EVENT line."""
        return self.hub.state

    @property
    def log(self):
        """[(kind, id, ns, {k: v})] of every EVENT line so far."""
        with self.hub.cv:
            return [(e.kind, e.id, e.ns, e.kv) for e in self.hub.events]

    def wait(self, pred, timeout, what):
        """Feed (proc_id, line) to pred, in arrival order, until it returns
        truthy; line is None at the end of that process's output."""
        def offer(line):
            text = None if line.words == participant.EOF else " ".join(line.words)
            return pred(line.src.ids[0], text)
        return self.hub.wait(offer, timeout, what)

    def leaders(self):
        return self.hub.leaders()

    def send_all(self, line):
        for p in self.procs.values():
            if p.proc.poll() is None:
                p.send(line)

    def close(self):
        for p in self.procs.values():
            p.kill()


class CApi:
    """The parts of libzkelect's C API the tool tests compare against."""

    def __init__(self, build_dir):
        lib = ctypes.CDLL(str(build_dir / "capi" / "libzkelect.so.1"))
        vp, cp, sz, i64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int64
        for name, res, args in [
            ("zkelect_conf_new", vp, []),
            ("zkelect_conf_set", ctypes.c_int, [vp, cp, cp, cp, sz]),
            ("zkelect_conf_destroy", None, [vp]),
            ("zkelect_conf_key", cp, [sz]),
            ("zkelect_conf_get", ctypes.c_int, [vp, cp, cp, ctypes.POINTER(sz)]),
            ("zkelect_client_new", vp, [vp, cp, sz]),
            ("zkelect_client_await_connected", ctypes.c_int, [vp, ctypes.c_int]),
            ("zkelect_client_destroy", ctypes.c_int, [vp]),
            ("zkelect_client_participants", vp, [vp, cp, cp, sz]),
            ("zkelect_participants_count", sz, [vp]),
            ("zkelect_participants_id", cp, [vp, sz]),
            ("zkelect_participants_node", cp, [vp, sz]),
            ("zkelect_participants_token", i64, [vp, sz]),
            ("zkelect_participants_ctime_ms", i64, [vp, sz]),
            ("zkelect_participants_destroy", None, [vp]),
        ]:
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args
        self.lib = lib

    def conf_defaults(self):
        """{key: default} of every configuration key, in the library's order."""
        L = self.lib
        conf = L.zkelect_conf_new()
        out = {}
        try:
            i = 0
            while (key := L.zkelect_conf_key(i)) is not None:
                buf, n = ctypes.create_string_buffer(4096), ctypes.c_size_t(4096)
                assert L.zkelect_conf_get(conf, key, buf, ctypes.byref(n)) == 0, key
                out[key.decode()] = buf.value.decode()
                i += 1
        finally:
            L.zkelect_conf_destroy(conf)
        return out

    def participants(self, hosts, path):
        """[(id, token, node, ctime_ms)] in queue order, or None when it fails."""
        L = self.lib
        err = ctypes.create_string_buffer(512)
        conf = L.zkelect_conf_new()
        assert L.zkelect_conf_set(conf, b"zk.hosts", hosts.encode(), err, 512) == 0, err.value
        client = L.zkelect_client_new(conf, err, 512)
        L.zkelect_conf_destroy(conf)
        assert client, err.value
        try:
            assert L.zkelect_client_await_connected(client, 15000) == 0
            ps = L.zkelect_client_participants(client, path.encode(), err, 512)
            if not ps:
                return None
            out = []
            for i in range(L.zkelect_participants_count(ps)):
                out.append((L.zkelect_participants_id(ps, i).decode(),
                            L.zkelect_participants_token(ps, i),
                            L.zkelect_participants_node(ps, i).decode(),
                            L.zkelect_participants_ctime_ms(ps, i)))
            L.zkelect_participants_destroy(ps)
            return out
        finally:
            L.zkelect_client_destroy(client)


def status_group(zkelect, env, hosts, group, *extra):
    """`zkelect status --connect hosts --group group [extra]`, run to its end."""
    argv = [str(zkelect), "status", "--connect", hosts]
    if group is not None:
        argv += ["--group", group]
    return subprocess.run(argv + list(extra), env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def pid_alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def wait_gone(pid, timeout):
    """Wait (bounded) for pid to exit; True when it did. Uses a pidfd, so it
    wakes at the exit itself rather than polling."""
    import select
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        r, _, _ = select.select([fd], [], [], timeout)
        return bool(r) or not pid_alive(pid)
    finally:
        os.close(fd)


def set_tls_ca(lib_path, value=b"/etc/zk/ca.pem"):
    """zkelect_conf_set(conf, "zk.tls.ca", value) on a fresh configuration of
    the library at lib_path: (rc, message). Whether a build (or an installed
    package) has TLS is what this key answers: 0, or ZKELECT_ENOTSUP (-9)
    with a message naming docs/tls.md."""
    import ctypes
    lib = ctypes.CDLL(str(lib_path))
    lib.zkelect_conf_new.restype = ctypes.c_void_p
    lib.zkelect_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.c_char_p, ctypes.c_size_t]
    lib.zkelect_conf_destroy.argtypes = [ctypes.c_void_p]
    conf = lib.zkelect_conf_new()
    try:
        err = ctypes.create_string_buffer(512)
        rc = lib.zkelect_conf_set(conf, b"zk.tls.ca", value, err, 512)
        return rc, err.value.decode("utf-8", "replace")
    finally:
        lib.zkelect_conf_destroy(conf)

"""The public C API of libzkelect through ctypes, for tests that need many
small programs' worth of calls against the real ensemble (test_claims.py).
Only functions of capi/zkelect/zkelect.h; the library is the one of the
tested build (ZKELECT_BUILD_DIR/capi)."""

import ctypes as C
import os
import threading
import time
from pathlib import Path

EAUTH, EDEADLK, ETIMEDOUT, ECLOSED = -8, -10, -5, -4

CB = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p, C.c_void_p)
# zkelect_client_counter indices (ZKELECT_COUNTER_*)
COUNTER_REQUESTS, COUNTER_KEEPALIVES = 9, 10


def load(build_dir):
    lib = C.CDLL(str(Path(build_dir) / "capi" / "libzkelect.so.1"))
    P, I, S, L = C.c_void_p, C.c_int, C.c_char_p, C.c_int64
    sig = {
        "zkelect_conf_new": (P, []), "zkelect_conf_set": (I, [P, S, S, S, C.c_size_t]),
        "zkelect_conf_destroy": (None, [P]),
        "zkelect_client_new": (P, [P, S, C.c_size_t]), "zkelect_client_destroy": (I, [P]),
        "zkelect_client_shutdown": (I, [P, I]), "zkelect_client_is_connected": (I, [P]),
        "zkelect_requeue": (I, [P]),
        "zkelect_client_await_connected": (I, [P, I]),
        "zkelect_client_session_id": (L, [P]),
        "zkelect_client_session_timeout_ms": (I, [P]), "zkelect_client_lease_margin_ms": (I, [P]),
        "zkelect_election_new": (P, [P, S, S, S, C.c_size_t]),
        "zkelect_election_destroy": (I, [P]), "zkelect_volunteer": (I, [P]),
        "zkelect_resign": (I, [P]), "zkelect_is_leader": (I, [P]),
        "zkelect_release": (I, [P]), "zkelect_is_draining": (I, [P]),
        "zkelect_lease_left_ms": (L, [P]), "zkelect_is_leader_for": (I, [P, I]),
        "zkelect_leader_answer": (I, [P, S, C.POINTER(C.c_size_t)]),
        # Every function a test calls through this library needs its line
        # here: without argtypes ctypes passes a handle as a C int, and a
        # pointer above 4 GiB arrives cut to 32 bits (a segfault in CI,
        # test_priority's fencing token, when the heap lay high).
        "zkelect_fencing_token": (I, [P, C.POINTER(L)]),
        "zkelect_last_error": (S, []),
        "zkelect_last_error_code": (I, []),
        "zkelect_await_leader": (I, [P, I]), "zkelect_leader_id": (I, [P, S, C.c_size_t]),
        "zkelect_participants": (P, [P, S, C.c_size_t]),
        "zkelect_participants_count": (C.c_size_t, [P]),
        "zkelect_client_participants": (P, [P, S, S, C.c_size_t]),
        "zkelect_participants_id": (S, [P, C.c_size_t]),
        "zkelect_participants_destroy": (None, [P]),
        "zkelect_next_event": (P, [P, I]), "zkelect_event_type": (I, [P]),
        "zkelect_event_reason": (I, [P]), "zkelect_event_error": (I, [P]),
        "zkelect_event_token": (L, [P]), "zkelect_event_id": (S, [P]),
        "zkelect_event_message": (S, [P]),
        "zkelect_event_destroy": (None, [P]),
        "zkelect_set_event_cb": (I, [P, CB, P]), "zkelect_dispatch": (I, [P, I]),
        "zkelect_set_background_event_cb": (I, [P, CB, P]),
        "zkelect_observer_new": (P, [P, S, S, C.c_size_t]),
        "zkelect_observer_next_event": (P, [P, I]), "zkelect_observer_destroy": (I, [P]),
        "zkelect_client_counter": (I, [P, I, C.POINTER(C.c_uint64)]),
        "zkelect_election_stats": (P, [P, S, C.c_size_t]),
        "zkelect_client_stats": (P, [P, S, C.c_size_t]),
        "zkelect_client_group_stats": (P, [P, S, S, C.c_size_t]),
        "zkelect_stats_json": (S, [P]), "zkelect_stats_destroy": (None, [P]),
        "zkelect_event_type_name": (S, [I]), "zkelect_reason_name": (S, [I]),
        "zkelect_counter_name": (S, [I]),
        "zkelect_transfer": (I, [P, S, I]), "zkelect_err_name": (S, [I]),
        "zkelect_client_transfer": (I, [P, S, S, I]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


class Api:
    def __init__(self, build_dir):
        self.lib = load(build_dir)

    def client(self, **conf):
        lib = self.lib
        c = lib.zkelect_conf_new()
        err = C.create_string_buffer(512)
        try:
            for k, v in conf.items():
                key = k.replace("_", ".")
                if lib.zkelect_conf_set(c, key.encode(), str(v).encode(), err, 512) != 0:
                    raise ValueError(f"{key}={v}: {err.value.decode()}")
            cl = lib.zkelect_client_new(c, err, 512)
        finally:
            lib.zkelect_conf_destroy(c)
        if not cl:
            raise RuntimeError(err.value.decode())
        return cl

    def election(self, client, path, pid):
        err = C.create_string_buffer(512)
        e = self.lib.zkelect_election_new(client, path.encode(), pid.encode(), err, 512)
        if not e:
            raise RuntimeError(err.value.decode())
        return e

    def observer(self, client, path):
        err = C.create_string_buffer(512)
        o = self.lib.zkelect_observer_new(client, path.encode(), err, 512)
        if not o:
            raise RuntimeError(err.value.decode())
        return o

    def decode(self, ev):
        lib = self.lib
        # The names are the library's own (gen/vocabulary.toml), not a copy.
        d = {"type": lib.zkelect_event_type_name(lib.zkelect_event_type(ev)).decode(),
             "reason": lib.zkelect_reason_name(lib.zkelect_event_reason(ev)).decode(),
             "error": lib.zkelect_event_error(ev), "token": lib.zkelect_event_token(ev),
             "id": (lib.zkelect_event_id(ev) or b"").decode(errors="replace"),
             "message": (lib.zkelect_event_message(ev) or b"").decode(errors="replace")}
        lib.zkelect_event_destroy(ev)
        return d

    def next_event(self, e, timeout_ms):
        ev = self.lib.zkelect_next_event(e, timeout_ms)
        return self.decode(ev) if ev else None

    def drain(self, e):
        """The events e has queued now (at most 1,000), decoded."""
        seen = []
        for _ in range(1000):
            d = self.next_event(e, 0)
            if d is None:
                break
            seen.append(d)
        return seen

    def observer_event(self, o, timeout_ms):
        ev = self.lib.zkelect_observer_next_event(o, timeout_ms)
        return self.decode(ev) if ev else None

    def wait_event(self, e, types, timeout_s, observer=False):
        """Events until one whose type is in `types`; (that event, all seen)."""
        import time
        deadline = time.monotonic() + timeout_s
        seen = []
        while True:
            left = int((deadline - time.monotonic()) * 1000)
            if left <= 0:
                raise AssertionError(f"no {types} within {timeout_s} s; saw {seen}")
            d = (self.observer_event if observer else self.next_event)(e, min(left, 500))
            if d is None:
                continue
            seen.append(d)
            if d["type"] in types:
                return d, seen

    def counter(self, client, which):
        """ZKELECT_COUNTER_ZK_REQUESTS = 9, ZKELECT_COUNTER_KEEPALIVES = 10."""
        v = C.c_uint64(0)
        rc = self.lib.zkelect_client_counter(client, which, C.byref(v))
        assert rc == 0, rc
        return v.value

    def counter_named(self, client, name):
        """A client counter by its library name ("reconnects"); None when the
        library has no counter of that name."""
        for i in range(256):
            n = self.lib.zkelect_counter_name(i)
            if n is None:
                return None
            if n.decode() == name:
                return self.counter(client, i)
        return None

    def stats(self, handle, client=False):
        """zkelect_election_stats (or _client_stats) parsed by json.loads."""
        import json
        err = C.create_string_buffer(512)
        f = self.lib.zkelect_client_stats if client else self.lib.zkelect_election_stats
        st = f(handle, err, 512)
        if not st:
            raise RuntimeError(err.value.decode())
        try:
            return json.loads(self.lib.zkelect_stats_json(st).decode())
        finally:
            self.lib.zkelect_stats_destroy(st)

    def group_stats(self, client, group):
        """zkelect_client_group_stats: (the document parsed, "", 0), or
        (None, errbuf's message, zkelect_last_error_code()) when it failed.
        group may be None (NULL) or bytes."""
        import json
        err = C.create_string_buffer(512)
        g = group.encode() if isinstance(group, str) else group
        st = self.lib.zkelect_client_group_stats(client, g, err, 512)
        if not st:
            return None, err.value.decode(), self.lib.zkelect_last_error_code()
        try:
            return json.loads(self.lib.zkelect_stats_json(st).decode()), "", 0
        finally:
            self.lib.zkelect_stats_destroy(st)

    def leader_id(self, e):
        buf = C.create_string_buffer(1100)
        rc = self.lib.zkelect_leader_id(e, buf, 1100)
        return rc, buf.value.decode()


def build_dir():
    d = os.environ.get("ZKELECT_BUILD_DIR")
    return Path(d).resolve() if d else Path(__file__).resolve().parents[2] / "build"


# --- what the tests of this folder share ---------------------------------

def handles_fixture(api):
    """The body of a `handles` fixture: elections, observers and clients a
    test made, freed in that order after it."""
    made = {"e": [], "o": [], "c": []}
    yield made
    for e in made["e"]:
        if e:
            api.lib.zkelect_election_destroy(e)
    for o in made["o"]:
        api.lib.zkelect_observer_destroy(o)
    for c in made["c"]:
        api.lib.zkelect_client_destroy(c)


def connected_client(api, handles, hosts, timeout_ms=4000, **conf):
    """A client whose session is up, freed after the test."""
    c = api.client(zk_hosts=hosts, zk_session_timeout_ms=timeout_ms, zk_log_level="none", **conf)
    handles["c"].append(c)
    assert api.lib.zkelect_client_await_connected(c, 15000) == 0
    return c


def new_election(api, handles, client, path, pid):
    e = api.election(client, path, pid)
    handles["e"].append(e)
    return e


def volunteered(api, handles, client, path, pid, events=("ELECTED", "FOLLOWING"), timeout_s=10):
    """A new election's handle that has volunteered and reported one of
    events (its first ELECTED or FOLLOWING, by default)."""
    e = new_election(api, handles, client, path, pid)
    assert api.lib.zkelect_volunteer(e) == 0
    api.wait_event(e, set(events), timeout_s)
    return e


def until(fn, what, timeout_s=10):
    """For what no event announces (a keepalive's reply, a state in the
    stats): bounded polling; fn's first true value."""
    deadline = time.monotonic() + timeout_s
    for _ in range(100000):
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    raise AssertionError(f"not within {timeout_s} s: {what}")


class Sampler:
    """Samples is_leader of handles grouped by path (each group the handles
    of one election) on one thread, three passes a round: a handle that
    read 1 in the first and third passes while another of its group read 1
    in the second proves two leaders at once. overlaps: (group, x, y,
    monotonic ns) of each proof; x_last_one: when the first group's first
    handle last answered 1; rounds: the rounds sampled."""

    def __init__(self, lib, groups, max_rounds=2_000_000):
        self.lib = lib
        self.groups = [list(g) for g in groups]
        self.max_rounds = max_rounds
        self.overlaps = []
        self.x_last_one = 0
        self.rounds = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    @property
    def samples(self):
        return self.rounds

    def _run(self):
        f, groups = self.lib.zkelect_is_leader, self.groups
        while not self.stop.is_set() and self.rounds < self.max_rounds:
            a = [[f(h) for h in g] for g in groups]
            b = [[f(h) for h in g] for g in groups]
            c = [[f(h) for h in g] for g in groups]
            now = time.monotonic_ns()
            self.rounds += 1
            if a[0][0] == 1 or c[0][0] == 1:
                self.x_last_one = now
            for gi, g in enumerate(groups):
                for x in range(len(g)):
                    if a[gi][x] == 1 and c[gi][x] == 1:
                        self.overlaps.extend((gi, x, y, now) for y in range(len(g))
                                             if y != x and b[gi][y] == 1)
            time.sleep(0.0002)  # leave the library's threads a core

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)


def Overlaps(lib, x, z):
    """The sampler of one election's two handles; x_last_one is x's."""
    return Sampler(lib, [[x, z]], max_rounds=10_000_000)

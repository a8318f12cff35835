"""The C API of libzkelect.so.1 through ctypes: prototypes, the error rule,
and the library found by the system's loader (no compiler needed).

ctypes.CDLL lets go of the GIL for the length of every call, so a call that
blocks in the library (await_leader, next_event, a destroy waiting for its
node's deletion) never stops the interpreter's other threads.
"""

import ctypes
import os
from ctypes import (POINTER, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint, c_uint64, c_void_p,
                    create_string_buffer)

from . import _vocab

SONAME = "libzkelect.so.1"
MAJOR = 1
# The Python package came with 1.2 and calls its stats and key list.
MIN_MINOR = 2


def _load():
    # ZKELECT_LIBRARY names a file for a library outside the loader's path,
    # as the LuaJIT module reads it.
    name = os.environ.get("ZKELECT_LIBRARY") or SONAME
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        raise ImportError(
            f"zkelect: cannot load {name} ({e}). The Python package needs the C library: "
            f"install libzkelect1 (Debian: apt install libzkelect1; from source: meson install), "
            f"or set ZKELECT_LIBRARY to the path of {SONAME}") from None
    lib.zkelect_version.restype = c_uint
    lib.zkelect_version.argtypes = []
    v = lib.zkelect_version()
    major, minor = v >> 16, (v >> 8) & 0xff
    if major != MAJOR or minor < MIN_MINOR:
        raise ImportError(
            f"zkelect: {name} is libzkelect {major}.{minor}.{v & 0xff}; this package needs "
            f"{MAJOR}.x with x >= {MIN_MINOR} (libzkelect1 >= {MAJOR}.{MIN_MINOR}.0)")
    return lib


lib = _load()

_P = c_void_p
_PROTOS = {
    # name: (restype, argtypes)
    "zkelect_strerror": (c_char_p, [c_int]),
    "zkelect_err_name": (c_char_p, [c_int]),
    "zkelect_last_error": (c_char_p, []),
    "zkelect_last_error_code": (c_int, []),
    "zkelect_version_string": (c_char_p, []),
    "zkelect_conf_new": (_P, []),
    "zkelect_conf_set": (c_int, [_P, c_char_p, c_char_p, c_char_p, c_size_t]),
    "zkelect_conf_get": (c_int, [_P, c_char_p, c_char_p, POINTER(c_size_t)]),
    "zkelect_conf_destroy": (None, [_P]),
    "zkelect_conf_key": (c_char_p, [c_size_t]),
    "zkelect_client_new": (_P, [_P, c_char_p, c_size_t]),
    "zkelect_client_destroy": (c_int, [_P]),
    "zkelect_client_shutdown": (c_int, [_P, c_int]),
    "zkelect_client_await_connected": (c_int, [_P, c_int]),
    "zkelect_client_is_connected": (c_int, [_P]),
    "zkelect_client_session_timeout_ms": (c_int, [_P]),
    "zkelect_client_lease_margin_ms": (c_int, [_P]),
    "zkelect_client_crash_guard_wait": (c_int, [_P, c_int]),
    "zkelect_client_session_id": (c_int64, [_P]),
    "zkelect_client_counter": (c_int, [_P, c_int, POINTER(c_uint64)]),
    "zkelect_counter_name": (c_char_p, [c_int]),
    "zkelect_client_participants": (_P, [_P, c_char_p, c_char_p, c_size_t]),
    "zkelect_client_stats": (_P, [_P, c_char_p, c_size_t]),
    "zkelect_client_group_stats": (_P, [_P, c_char_p, c_char_p, c_size_t]),
    "zkelect_election_new": (_P, [_P, c_char_p, c_char_p, c_char_p, c_size_t]),
    "zkelect_election_destroy": (c_int, [_P]),
    "zkelect_volunteer": (c_int, [_P]),
    "zkelect_resign": (c_int, [_P]),
    "zkelect_requeue": (c_int, [_P]),
    "zkelect_is_leader": (c_int, [_P]),
    "zkelect_lease_left_ms": (c_int64, [_P]),
    "zkelect_leader_answer": (c_int, [_P, c_char_p, POINTER(c_size_t)]),
    "zkelect_is_leader_for": (c_int, [_P, c_int]),
    "zkelect_await_leader": (c_int, [_P, c_int]),
    "zkelect_transfer": (c_int, [_P, c_char_p, c_int]),
    "zkelect_client_transfer": (c_int, [_P, c_char_p, c_char_p, c_int]),
    "zkelect_fencing_token": (c_int, [_P, POINTER(c_int64)]),
    "zkelect_fenced_ops_new": (_P, []),
    "zkelect_fenced_ops_set": (c_int, [_P, c_char_p, c_char_p, c_size_t, c_int32]),
    "zkelect_fenced_ops_create": (c_int, [_P, c_char_p, c_char_p, c_size_t, c_int]),
    "zkelect_fenced_ops_delete": (c_int, [_P, c_char_p, c_int32]),
    "zkelect_fenced_ops_count": (c_size_t, [_P]),
    "zkelect_fenced_ops_failed": (c_int, [_P, POINTER(c_int)]),
    "zkelect_fenced_ops_destroy": (None, [_P]),
    "zkelect_fenced_commit": (c_int, [_P, _P, c_int]),
    "zkelect_client_fenced_commit": (c_int, [_P, c_char_p, c_int64, _P, c_int]),
    "zkelect_leader_id": (c_int, [_P, c_char_p, c_size_t]),
    "zkelect_participants": (_P, [_P, c_char_p, c_size_t]),
    "zkelect_participants_count": (c_size_t, [_P]),
    "zkelect_participants_id": (c_char_p, [_P, c_size_t]),
    "zkelect_participants_node": (c_char_p, [_P, c_size_t]),
    "zkelect_participants_token": (c_int64, [_P, c_size_t]),
    "zkelect_participants_ctime_ms": (c_int64, [_P, c_size_t]),
    "zkelect_participants_priority": (c_int, [_P, c_size_t]),
    "zkelect_participants_destroy": (None, [_P]),
    "zkelect_election_stats": (_P, [_P, c_char_p, c_size_t]),
    "zkelect_stats_json": (c_char_p, [_P]),
    "zkelect_stats_destroy": (None, [_P]),
    "zkelect_next_event": (_P, [_P, c_int]),
    "zkelect_event_fd": (c_int, [_P]),
    "zkelect_wake": (c_int, [_P]),
    "zkelect_event_type": (c_int, [_P]),
    "zkelect_event_reason": (c_int, [_P]),
    "zkelect_event_token": (c_int64, [_P]),
    "zkelect_event_error": (c_int, [_P]),
    "zkelect_event_zk_rc": (c_int, [_P]),
    "zkelect_event_message": (c_char_p, [_P]),
    "zkelect_event_node": (c_char_p, [_P]),
    "zkelect_event_id": (c_char_p, [_P]),
    "zkelect_event_time_ns": (c_int64, [_P]),
    "zkelect_event_type_name": (c_char_p, [c_int]),
    "zkelect_reason_name": (c_char_p, [c_int]),
    "zkelect_event_destroy": (None, [_P]),
}
for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

EINVAL, ENOMEM, ESTATE, ECLOSED, ETIMEDOUT = -1, -2, -3, -4, -5
EINTERNAL, ERANGE = -12, -14
ID_MAX = 1024
ERRBUF = 512
INT_MAX = 2**31 - 1


def text(b):
    """A string the library returned. Ids and node data are foreign (any
    bytes another client wrote), so undecodable bytes are replaced, never
    raised on."""
    return b.decode("utf-8", "replace") if b else ""


def err_name(code):
    return text(lib.zkelect_err_name(code))


class Error(Exception):
    """A libzkelect failure: .code is the C library's ZKELECT_E* code (a
    negative int), .name its symbol ("ZKELECT_ETIMEDOUT"), .message the
    library's detail. Each code has a subclass of its own (zkelect.TimedOut,
    zkelect.State, ...), named as the Rust crate's ErrorKind."""

    __module__ = "zkelect"
    code = 0

    def __init__(self, message, code=None):
        if code is not None:
            self.code = code
        self.message = message
        super().__init__(message)

    @property
    def name(self):
        return err_name(self.code)

    def __str__(self):
        return f"{self.message} ({self.name})"

    def __repr__(self):
        return f"zkelect.{type(self).__name__}({self.message!r}, code={self.code})"


CLASSES = {}
for _code, (_cls, _base) in _vocab.ERRORS.items():
    CLASSES[_code] = type(_cls, (Error,) + ((_base,) if _base else ()),
                          {"code": _code, "__module__": "zkelect",
                           "__doc__": f"{err_name(_code)}: {text(lib.zkelect_strerror(_code))}."})


def make_error(code, message):
    cls = CLASSES.get(code)
    if cls is None:  # a code newer than this package: still an Error
        return Error(message, code)
    return cls(message)


def from_code(code):
    """The error of a call that just returned code: this thread's
    zkelect_last_error detail when it names this code (a call that succeeds
    leaves it as it was, hence the check), else zkelect_strerror(code)."""
    last = text(lib.zkelect_last_error())
    prefix = err_name(code) + ": "
    if last.startswith(prefix) and len(last) > len(prefix):
        return make_error(code, last[len(prefix):])
    return make_error(code, text(lib.zkelect_strerror(code)))


def check(rc):
    if rc < 0:
        raise from_code(rc)
    return rc


def errbuf():
    return create_string_buffer(ERRBUF)


def null_error(buf, fallback=EINVAL):
    """The error of a call that reports failure by NULL and a message (the
    constructors, participants, stats): the rule of every binding
    (bindings/README.md): "ZKELECT_<NAME>: text" carries that code,
    "out of memory" is ENOMEM, "internal error" EINTERNAL, anything else
    fallback, the code of the documented causes."""
    msg = text(buf.value)
    name, sep, rest = msg.partition(": ")
    if sep and name.startswith("ZKELECT_E"):
        for code in range(-1, -65, -1):
            known = err_name(code)
            if known == "ZKELECT_EUNKNOWN":
                break
            if known == name:
                return make_error(code, rest or text(lib.zkelect_strerror(code)))
    if msg == "out of memory":
        return make_error(ENOMEM, msg)
    if msg == "internal error":
        return make_error(EINTERNAL, msg)
    return make_error(fallback, msg or text(lib.zkelect_strerror(fallback)))


def cstr(what, s):
    """s as the NUL-terminated UTF-8 the C API takes; a NUL inside or a
    value that is not a string is the caller's mistake, said as such."""
    if not isinstance(s, str):
        raise make_error(EINVAL, f"{what} must be a str, not {type(s).__name__}")
    if "\0" in s:
        raise make_error(EINVAL, f"{what} contains a NUL character")
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        raise make_error(EINVAL, f"{what} is not valid Unicode (a lone surrogate)") from None


def timeout_ms(seconds, what="timeout"):
    """Seconds (None: no limit) as the C API's ms: rounded up, so a short
    wait never becomes "do not wait"; past INT_MAX ms, no limit."""
    if seconds is None:
        return -1
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise make_error(EINVAL, f"{what} must be a number of seconds or None, "
                                 f"not {type(seconds).__name__}")
    if seconds != seconds or seconds < 0:  # NaN, negative
        raise make_error(EINVAL, f"{what} must be >= 0 seconds or None, not {seconds}")
    ms = seconds * 1000.0
    if ms >= INT_MAX:
        return -1
    whole = int(ms)
    return whole + (1 if ms > whole else 0)

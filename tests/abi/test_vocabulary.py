"""One source per vocabulary: the public header's enums (error codes, event
types, deposition reasons, counters) are the ABI and the one table. Every
other copy is held to it here: the library's name and message tables, the
engine's own enums (also static_asserted in capi/abi_check.cpp), the Java
binding's hand-written constants, docs/api.md, and the configuration keys
the library lists (zkelect_conf_key) against those the docs describe. Go and Lua take the
header's constants through SWIG, Rust's zkelect-sys checks its own against
the header (bindings/rust/zkelect-sys/tests/header.rs), LuaJIT's cdef is
checked by tests/bindings/test_luajit_cdef.py.
"""

import ctypes
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEADER = REPO / "capi" / "zkelect" / "zkelect.h"


def header_enum(name):
    """[(symbol, value)] of `enum name { ... }` in the public header."""
    text = HEADER.read_text()
    m = re.search(r"enum %s \{(.*?)\};" % re.escape(name), text, re.S)
    assert m, f"enum {name} not in the header"
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    out = []
    for sym, val in re.findall(r"(ZKELECT_[A-Z0-9_]+)\s*=\s*(-?\d+)", body):
        out.append((sym, int(val)))
    assert out, f"enum {name} is empty"
    return out


ERRORS = header_enum("zkelect_err")
EVENTS = header_enum("zkelect_event_type")
REASONS = header_enum("zkelect_reason")
COUNTERS = [(s, v) for s, v in header_enum("zkelect_counter") if s != "ZKELECT_COUNTER__COUNT"]


@pytest.fixture(scope="module")
def lib(build_dir):
    L = ctypes.CDLL(str(build_dir / "capi" / "libzkelect.so.1"))
    for f in ("zkelect_strerror", "zkelect_err_name", "zkelect_event_type_name",
              "zkelect_reason_name", "zkelect_counter_name"):
        getattr(L, f).restype = ctypes.c_char_p
        getattr(L, f).argtypes = [ctypes.c_int]
    return L


def _s(b):
    return b.decode() if b is not None else None


def test_every_value_is_distinct_and_counters_are_dense():
    for table in (ERRORS, EVENTS, REASONS, COUNTERS):
        values = [v for _s_, v in table]
        assert len(values) == len(set(values)), table
    assert sorted(v for _s_, v in COUNTERS) == list(range(len(COUNTERS)))
    count = dict(header_enum("zkelect_counter"))["ZKELECT_COUNTER__COUNT"]
    assert count == len(COUNTERS)


def test_error_names_and_messages_follow_the_header(lib):
    messages = {}
    for sym, v in ERRORS:
        assert _s(lib.zkelect_err_name(v)) == sym
        msg = _s(lib.zkelect_strerror(v))
        assert msg and "unknown" not in msg.lower(), (sym, msg)
        messages[msg] = sym
    assert len(messages) == len(ERRORS), "two codes share a message"
    lowest = min(v for _s_, v in ERRORS)
    assert _s(lib.zkelect_err_name(lowest - 1)) == "ZKELECT_EUNKNOWN"


def test_event_reason_and_counter_names_follow_the_header(lib):
    for sym, v in EVENTS:
        assert _s(lib.zkelect_event_type_name(v)) == sym[len("ZKELECT_EV_"):], sym
    for sym, v in REASONS:
        assert _s(lib.zkelect_reason_name(v)) == sym[len("ZKELECT_REASON_"):].lower(), sym
    for sym, v in COUNTERS:
        assert _s(lib.zkelect_counter_name(v)) == sym[len("ZKELECT_COUNTER_"):].lower(), sym
    assert _s(lib.zkelect_counter_name(len(COUNTERS))) is None
    assert _s(lib.zkelect_reason_name(max(v for _s_, v in REASONS) + 1)) == "unknown"


def _camel(sym, prefix):
    """ZKELECT_ESESSION_EXPIRED -> SESSION_EXPIRED style pieces, for the
    engine's kESessionExpired: compared letters only, case-folded."""
    return re.sub(r"[^a-z0-9]", "", sym[len(prefix):].lower())


def test_the_engine_copies_agree():
    text = (REPO / "cxx" / "errors.h").read_text()

    def enum(name):
        m = re.search(r"enum (?:class )?%s : int \{(.*?)\};" % name, text, re.S)
        assert m, name
        return {re.sub(r"[^a-z0-9]", "", k.lower()): int(v)
                for k, v in re.findall(r"k([A-Za-z0-9]+)\s*=\s*(-?\d+)", m.group(1))}

    errs = enum("Err")
    for sym, v in ERRORS:
        key = "ok" if sym == "ZKELECT_OK" else "e" + _camel(sym, "ZKELECT_E")
        assert errs.get(key) == v, (sym, key, errs)
    assert len(errs) == len(ERRORS)
    for name, table, prefix in (("EventType", EVENTS, "ZKELECT_EV_"),
                                ("Reason", REASONS, "ZKELECT_REASON_"),
                                ("Counter", COUNTERS, "ZKELECT_COUNTER_")):
        eng = enum(name)
        eng.pop("countercount", None)
        for sym, v in table:
            assert eng.get(_camel(sym, prefix)) == v, (name, sym, eng)
        assert len(eng) == len(table), (name, sorted(eng))


def test_the_java_constants_agree():
    java = (REPO / "bindings" / "java" / "src" / "main" / "java" / "org" / "zkelect"
            / "ZkelectException.java").read_text()
    consts = {k: int(v) for k, v in
              re.findall(r"public static final int ([A-Z_]+) = (-?\d+);", java)}
    for sym, v in ERRORS:
        if sym == "ZKELECT_OK":
            continue
        name = sym[len("ZKELECT_"):]
        assert consts.get(name) == v, (sym, consts.get(name))


def test_docs_list_every_code_event_reason_and_counter():
    api = (REPO / "docs" / "api.md").read_text()
    for sym, v in ERRORS + EVENTS + REASONS + COUNTERS:
        assert re.search(r"\b%s\s*=\s*%d\b" % (sym, v), api), f"docs/api.md lacks {sym} = {v}"


def test_every_configuration_key_is_documented_and_no_other(lib):
    """The library's one list of keys (zkelect_conf_key) against the header's
    and docs/api.md's key lists."""
    lib.zkelect_conf_key.restype = ctypes.c_char_p
    lib.zkelect_conf_key.argtypes = [ctypes.c_size_t]
    keys = set()
    for i in range(1024):
        k = lib.zkelect_conf_key(i)
        if k is None:
            break
        keys.add(k.decode())
    assert "zk.hosts" in keys and len(keys) >= 8
    for doc in (REPO / "docs" / "api.md", HEADER):
        text = doc.read_text()
        i = text.index("Keys (all values are strings):")
        block = text[i:i + 6000]
        documented = set()
        for line in block.splitlines()[1:]:
            line = line.lstrip(" *")
            if not line.startswith("- "):
                continue
            documented |= set(re.findall(r'"([a-z]+(?:\.[a-z]+)+|leadership)"', line))
        assert keys == documented, (f"{doc.name}: in the library only: "
                                    f"{sorted(keys - documented)}; in the doc only: "
                                    f"{sorted(documented - keys)}")

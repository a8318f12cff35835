"""One source per vocabulary: the public header's enums (error codes, event
types, deposition reasons, counters) are the ABI and the one table. Every
other copy is held to it here: the library's name and message tables, the
engine's own enums (also static_asserted in capi/abi_check.cpp), the Java
binding's code constants, docs/api.md, and the configuration keys
the library lists (zkelect_conf_key) against those the docs describe. Go and Lua take the
header's constants through SWIG, Rust's zkelect-sys checks its own against
the header (bindings/rust/zkelect-sys/tests/header.rs), LuaJIT's cdef is
checked by tests/bindings/test_luajit_cdef.py. The idiomatic layers' own
copies (Go's EventType/Reason/Code constants, Java's Event.Type and
Reason, Rust's EventKind, Reason, ErrorKind and Counter::ALL) and the
stats call of every language are held to the header at the end.

All those copies are written by gen/vocab.py from gen/vocabulary.toml
(tests/abi/test_generated.py checks they are current), as is the header:
comparing two of them checks the generator's spelling of each language,
not the vocabulary. What checks the words themselves is the library at run
time (its name and message tables, here) and the compilers (abi_check.cpp,
header.rs, and each binding's own test against the library).
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
    text = (REPO / "cxx" / "base" / "errors.h").read_text()

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
        # To the end of the comment (header) or the next heading (api.md).
        ends = [j for j in (text.find("*/", i), text.find("\n#", i)) if j > i]
        block = text[i:min(ends)]
        documented = set()
        for line in block.splitlines()[1:]:
            line = line.lstrip(" *")
            if not line.startswith("- "):
                continue
            documented |= set(re.findall(r'"([a-z]+(?:\.[a-z]+)+|leadership)"', line))
        assert keys == documented, (f"{doc.name}: in the library only: "
                                    f"{sorted(keys - documented)}; in the doc only: "
                                    f"{sorted(documented - keys)}")


# ---- the bindings' own copies ------------------------------------------------
# gen/vocab.py writes each binding's copy below; these hold the generator's
# output for each language to the header's enums, so a generator that
# drops or misnumbers a word in one language fails here as well as in that
# binding's own test.

BINDINGS = REPO / "bindings"


def _events_by_name():
    return {sym[len("ZKELECT_EV_"):]: v for sym, v in EVENTS}


def test_the_go_constants_agree():
    go = (BINDINGS / "go" / "elector.go").read_text() + (BINDINGS / "go" / "errors.go").read_text()
    for typ, table in (("EventType", EVENTS), ("Reason", REASONS),
                       ("Code", [(s, v) for s, v in ERRORS if s != "ZKELECT_OK"])):
        values = sorted(int(v) for v in re.findall(r"\b[A-Z]\w*\s+%s\s*=\s*(-?\d+)" % typ, go))
        assert values == sorted(v for _s_, v in table), (
            f"Go's {typ} constants {values} are not the header's "
            f"{[(s, v) for s, v in table]}")


def test_the_java_enums_agree():
    java = (BINDINGS / "java" / "src" / "main" / "java" / "org" / "zkelect" / "Event.java").read_text()
    java = re.sub(r"/\*.*?\*/", "", java, flags=re.S)
    java = re.sub(r"//[^\n]*", "", java)  # gen/vocab.py's region markers

    def enum(name):
        m = re.search(r"public enum %s \{(.*?);" % name, java, re.S)
        assert m, name
        return [w.strip() for w in m.group(1).split(",") if w.strip()]

    types = enum("Type")
    # Type.of(code) is values()[code]; 0 is UNKNOWN
    assert types[0] == "UNKNOWN"
    assert {i: t for i, t in enumerate(types) if i > 0} == {v: n for n, v in _events_by_name().items()}
    reasons = enum("Reason")
    assert {i: r for i, r in enumerate(reasons)} == {
        v: s[len("ZKELECT_REASON_"):] for s, v in REASONS}


def test_the_rust_variants_agree():
    rs = (BINDINGS / "rust" / "zkelect" / "src" / "lib.rs").read_text()
    for prefix, enum, table in (("ZKELECT_EV_", "EventKind", EVENTS),
                                ("ZKELECT_REASON_", "Reason", REASONS),
                                ("ZKELECT_E", "ErrorKind", [(s, v) for s, v in ERRORS
                                                           if s != "ZKELECT_OK"])):
        arms = set(re.findall(r"(%s[A-Z_]+) => %s::" % (prefix, enum), rs))
        assert arms == {s for s, _v in table}, (
            f"Rust's {enum} maps {sorted(arms)}, the header has {sorted(s for s, _v in table)}")


def test_the_rust_counters_agree():
    rs = (BINDINGS / "rust" / "zkelect" / "src" / "lib.rs").read_text()
    arms = dict(re.findall(r"Counter::(\w+) => (ZKELECT_COUNTER_[A-Z_]+)", rs))
    assert set(arms.values()) == {s for s, _v in COUNTERS}, sorted(arms.values())
    m = re.search(r"pub const ALL: \[Counter; (\d+)\] = \[(.*?)\];", rs, re.S)
    assert m, "Counter::ALL not found"
    listed = re.findall(r"Counter::(\w+)", m.group(2))
    assert int(m.group(1)) == len(COUNTERS) and sorted(listed) == sorted(arms), (
        f"Counter::ALL lists {listed}; the header has {len(COUNTERS)} counters")


def test_every_binding_has_stats():
    """README.md and bindings/README.md say every language reads the stats
    snapshot (zkelect_election_stats / zkelect_client_stats)."""
    calls = {
        "go": ((BINDINGS / "go" / "elector.go", r"func \(e \*Elector\) Stats\("),
               (BINDINGS / "go" / "zkelect.go", r"func \(c \*Client\) Stats\(")),
        "java": ((BINDINGS / "java/src/main/java/org/zkelect/Elector.java", r"public String stats\(\)"),
                 (BINDINGS / "java/src/main/java/org/zkelect/Client.java", r"public String stats\(\)")),
        # One Lua layer (luajit/zkelect/layer.lua) over SWIG's functions and ffi.lua's calls.
        "lua": ((BINDINGS / "luajit/zkelect/layer.lua", r"function Elector:stats\("),
                (BINDINGS / "luajit/zkelect/layer.lua", r"function Client:stats\(")),
        "luajit": ((BINDINGS / "luajit/zkelect/ffi.lua", r"C\.zkelect_election_stats\b"),
                   (BINDINGS / "luajit/zkelect/ffi.lua", r"C\.zkelect_client_stats\b")),
        "rust": ((BINDINGS / "rust/zkelect/src/lib.rs", r"zkelect_election_stats\("),
                 (BINDINGS / "rust/zkelect/src/lib.rs", r"zkelect_client_stats\(")),
    }
    missing = [f"{lang}: {path.name} /{rx}/" for lang, pairs in calls.items()
               for path, rx in pairs if not re.search(rx, path.read_text())]
    assert not missing, missing

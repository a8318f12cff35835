"""Issue 30: every copy of the vocabulary is written by gen/vocab.py from
gen/vocabulary.toml. A copy edited by hand, or a table entry not carried
into the copies, fails here."""

import copy
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GEN = REPO / "gen" / "vocab.py"


def _gen():
    import vocab  # gen/ is on pytest's path (pytest.ini)
    return vocab


def test_every_copy_is_what_the_generator_writes():
    r = subprocess.run([sys.executable, str(GEN), "--check"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def _changed(gen, t, grown):
    """For each target (file, its regions): whether the grown table changes it."""
    out = []
    for (rel, fn, regions), (_rel, _fn, grown_regions) in zip(gen.targets(t), gen.targets(grown)):
        text = (REPO / rel).read_text()
        out.append((rel, sorted(map(str, regions)), fn(REPO / rel, text, regions) !=
                    fn(REPO / rel, text, grown_regions)))
    return out


def test_a_new_event_and_counter_reach_every_copy():
    """What adding one line to the table does: each copy of the event types
    and counters changes, so no language can be left out of a new word."""
    gen = _gen()
    t = gen.load()
    grown = copy.deepcopy(t)
    grown["event"].append({"name": "PROBE_WORD", "value": len(t["event"]) + 1,
                           "go_doc": "a test's word", "doc": "A test's word."})
    grown["counter"].append({"name": "PROBE_COUNT", "value": len(t["counter"]),
                             "doc": "a test's counter", "metric": "zkelect_probe_count_total",
                             "metric_help": "A test's counter."})
    # Copies of the codes or the keys alone do not hold events or counters.
    only_other = {"bindings/go/errors.go", "cxx/base/conf.cpp", "cxx/base/conf.h",
                  "bindings/java/src/main/java/org/zkelect/ZkelectException.java",
                  "tests/capi/badinput_test.cpp", "bindings/luajit/zkelect/layer.lua",
                  "tests/unit/conf_test.cpp", "guard/guard.h"}
    missed = [(rel, regions) for rel, regions, changed in _changed(gen, t, grown)
              if not changed and rel not in only_other and not any("Keys" in r for r in regions)]
    assert not missed, f"a new event or counter does not reach: {missed}"
    # The tests that hold the bindings to the compiled header or library
    # take their lists of words from the table too.
    changed = {rel for rel, _r, c in _changed(gen, t, grown) if c}
    tests = {"bindings/go/foreign_test.go", "bindings/rust/zkelect-sys/tests/header.rs",
             "capi/abi_check.cpp"}
    assert tests <= changed, f"a new event or counter does not reach {sorted(tests - changed)}"


def test_a_new_code_reaches_every_copy():
    """A new error code changes every copy of the codes: the bindings'
    constants and the tests that hold them to the compiled header or library
    (tests/capi/badinput_test.cpp, capi/abi_check.cpp, zkelect-sys's
    tests/header.rs); only the copies of other words stay as they are."""
    gen = _gen()
    t = gen.load()
    grown = copy.deepcopy(t)
    low = min(e["value"] for e in t["error"])
    grown["error"].append({"name": "EPROBE", "value": low - 1, "engine": "kEProbe", "go": "Probe",
                           "rust": "Probe", "message": "a test's code", "doc": "A test's code."})
    changed = {rel for rel, _r, c in _changed(gen, t, grown) if c}
    copies = {"capi/zkelect/zkelect.h", "cxx/base/errors.h", "cxx/base/vocabulary.cpp",
              "bindings/go/errors.go", "bindings/java/src/main/java/org/zkelect/ZkelectException.java",
              "bindings/luajit/zkelect/ffi.lua", "bindings/rust/zkelect-sys/src/lib.rs",
              "bindings/rust/zkelect/src/lib.rs", "bindings/python/zkelect/_vocab.py",
              "capi/abi_check.cpp", "tests/capi/badinput_test.cpp",
              "bindings/rust/zkelect-sys/tests/header.rs"}
    assert changed == copies, (f"a new code does not reach {sorted(copies - changed)}; "
                               f"it changes, besides the copies of codes, {sorted(changed - copies)}")


def test_a_new_key_reaches_the_engine_and_the_header():
    gen = _gen()
    t = gen.load()
    grown = copy.deepcopy(t)
    grown["key"].append({"name": "probe.key.ms", "kind": "int", "min": 1, "max": 9,
                         "default": "5", "message": "probe.key.ms must be 1..9",
                         "doc": "a test's key.", "field": "probe_key_ms"})
    changed = {(rel, tuple(regions)) for rel, regions, c in _changed(gen, t, grown) if c}
    files = {rel for rel, _r in changed}
    # conf.cpp: its row, and its place in Settings; conf_test.cpp: the
    # member's initializer held to its default.
    assert {"cxx/base/conf.cpp", "cxx/base/conf.h", "capi/zkelect/zkelect.h", "bindings/python/zkelect/_vocab.py",
            "bindings/luajit/zkelect/layer.lua", "tests/unit/conf_test.cpp"} <= files, changed
    place = "\n".join(gen.place_lines(grown))
    assert "s->probe_key_ms = n; break;  // probe.key.ms" in place


def test_a_key_placed_nowhere_is_refused():
    """A key's row names where its value goes (field) or what places it
    (place): without either, no Settings member would ever see it, and the
    generator says so instead of writing a key that does nothing."""
    gen = _gen()
    grown = copy.deepcopy(gen.load())
    grown["key"].append({"name": "probe.key.ms", "kind": "int", "min": 1, "max": 9,
                         "default": "5", "message": "m", "doc": "d"})
    import pytest
    with pytest.raises(SystemExit, match="probe.key.ms needs exactly one of field and place"):
        gen.place_lines(grown)

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
    only_other = {"bindings/go/errors.go", "cxx/conf.cpp", "cxx/conf.h"}
    missed = [(rel, regions) for rel, regions, changed in _changed(gen, t, grown)
              if not changed and rel not in only_other and not any("Keys" in r for r in regions)]
    assert not missed, f"a new event or counter does not reach: {missed}"


def test_a_new_key_reaches_the_engine_and_the_header():
    gen = _gen()
    t = gen.load()
    grown = copy.deepcopy(t)
    grown["key"].append({"name": "probe.key.ms", "kind": "int", "min": 1, "max": 9,
                         "default": "5", "message": "probe.key.ms must be 1..9",
                         "doc": "a test's key."})
    changed = {(rel, tuple(regions)) for rel, regions, c in _changed(gen, t, grown) if c}
    files = {rel for rel, _r in changed}
    assert {"cxx/conf.cpp", "cxx/conf.h", "capi/zkelect/zkelect.h"} <= files, changed

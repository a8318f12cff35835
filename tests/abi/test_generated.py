"""Issue 30: every copy of the vocabulary is written by gen/vocab.py from
gen/vocabulary.toml. A copy edited by hand, or a table entry not carried
into the copies, fails here."""

import copy
import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GEN = REPO / "gen" / "vocab.py"


def _gen():
    spec = importlib.util.spec_from_file_location("vocab", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_copy_is_what_the_generator_writes():
    r = subprocess.run([sys.executable, str(GEN), "--check"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def test_a_new_event_and_counter_reach_every_copy():
    """What adding one line to the table does: each target file changes,
    so no language can be left out of a new word."""
    gen = _gen()
    t = gen.load()
    grown = copy.deepcopy(t)
    grown["event"].append({"name": "PROBE_WORD", "value": len(t["event"]) + 1,
                           "go_doc": "a test's word", "doc": "A test's word."})
    grown["counter"].append({"name": "PROBE_COUNT", "value": len(t["counter"]),
                             "doc": "a test's counter"})
    before = {rel: fn(REPO / rel, (REPO / rel).read_text(), regions)
              for rel, fn, regions in gen.targets(t)}
    after = {rel: fn(REPO / rel, (REPO / rel).read_text(), regions)
             for rel, fn, regions in gen.targets(grown)}
    # errors.go holds the codes only.
    unchanged = [rel for rel in before if before[rel] == after[rel]
                 and rel != "bindings/go/errors.go"]
    assert not unchanged, f"a new event or counter does not reach: {unchanged}"

"""docs/architecture.md is the one map of the source: docs/check_map.py holds
it to the tree (every file of cxx/, capi/, guard/, tools/ and explore/ named,
nothing named that is gone)."""
import importlib.util
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "docs" / "check_map.py"


def load_check():
    spec = importlib.util.spec_from_file_location("check_map", CHECK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_map_names_exactly_the_tree():
    r = subprocess.run([sys.executable, str(CHECK)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_map_check_sees_a_missing_file_and_a_gone_one():
    # The check itself can fail: a map that drops a file of the tree, or
    # names one the tree does not have, is refused, each named.
    check_map = load_check()
    text = check_map.MAP.read_text()
    assert check_map.check(text) == []
    dropped = text.replace("`cxx/base/lazy.h`", "`cxx/base/lazy_gone.h`")
    problems = check_map.check(dropped)
    assert "in the tree but not named in docs/architecture.md: cxx/base/lazy.h" in problems
    assert "named in docs/architecture.md but not in the tree: cxx/base/lazy_gone.h" in problems
    # A path outside the mapped folders is no claim on the map; a pattern
    # inside them is expanded.
    assert check_map.named_patterns("`tests/bed/x.{py,c}` `cxx/x.{h,cpp}`") == [
        "cxx/x.cpp", "cxx/x.h"]


def test_readme_layout_names_every_top_level_entry():
    check_map = load_check()
    assert check_map.check_readme() == []
    text = check_map.README.read_text()
    problems = check_map.check_readme(text.replace("\nfuzz/ ", "\nfuzzy/ "))
    assert "in the tree but not in README.md's Layout: fuzz/" in problems
    assert "in README.md's Layout but not in the tree: fuzzy/" in problems


def test_rooms_include_only_what_their_readme_uses():
    # cxx/ROOM/README.md's Uses: line is held to the includes: an include
    # from a room it does not name, or two rooms that use each other, fails.
    check_map = load_check()
    assert check_map.check_rooms() == []
    readmes = {d.name: (d / "README.md").read_text()
               for d in check_map.ENGINE.iterdir() if d.is_dir()}
    no_probe = dict(readmes, zk=readmes["zk"].replace("probe, ", ""))
    assert ("cxx/zk/zk_port.h includes peer_addr.h of probe/, which cxx/zk/README.md "
            "does not use") in check_map.check_rooms(no_probe)
    circle = dict(readmes, lease="# lease\n\nUses: election.\n")
    assert any(p.startswith("rooms that use each other:") for p in check_map.check_rooms(circle))

#!/usr/bin/env python3
"""Hold docs/architecture.md, the one map of the source, to the tree.

Every file of the folders the map covers (MAPPED below) must be named in it
in backticks, by its whole path from the top of the tree (`cxx/lease/lease.cpp`),
by a pattern (`cxx/lease/lease.*`, `capi/*.cpp`, `explore/sim/world.{h,cpp}`), and
every such path or pattern it names must match a file that is there. A map
that names a file that is gone, or misses one that came, fails here rather
than misleading the next reader.

    python3 docs/check_map.py      # exit 1, naming what differs

README.md's "Layout" block names every top-level entry of the tree, one
per line, and nothing that is gone (a newcomer's first map).

The engine's rooms (cxx/ROOM/, each with a README.md whose "Uses:" line
names the rooms it may use) are held to their word: a file of a room
includes from its own room and the rooms its Uses: line names only, and
the Uses: lines draw no circle, so every include runs down a floor.

Run by ./dev check and tests/docs/test_map.py.
"""
import fnmatch
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"
# The folders whose every file the map names: the engine, the ABI, the
# helper process, the tool and the fault explorer (a room of its own since
# issue 53). Build files are the build's, not concepts.
MAPPED = ("cxx/", "capi/", "guard/", "tools/", "explore/")
NOT_CONCEPTS = {"meson.build"}


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", *MAPPED],
                             capture_output=True, text=True, check=True, timeout=30).stdout
        files = out.split()
    except (OSError, subprocess.SubprocessError):
        files = [str(p.relative_to(ROOT)) for d in MAPPED
                 for p in (ROOT / d).rglob("*") if p.is_file()]
    # A file deleted in the work tree but not yet in git's index is gone.
    return sorted(f for f in files
                  if (ROOT / f).is_file() and pathlib.PurePath(f).name not in NOT_CONCEPTS)


def expand_braces(pattern):
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(pattern[:m.start()] + alt + pattern[m.end():])
    return out


def named_patterns(text):
    """The backticked tokens of the map that are paths in a mapped folder."""
    pats = set()
    for token in re.findall(r"`([^`\s]+)`", text):
        token = token.rstrip(":,.")
        if token.startswith(MAPPED) and not token.endswith("/"):
            pats.update(expand_braces(token))
    return sorted(pats)


def check(text=None):
    files = tracked_files()
    pats = named_patterns(MAP.read_text() if text is None else text)
    problems = []
    for p in pats:
        if not any(fnmatch.fnmatchcase(f, p) for f in files):
            problems.append(f"named in docs/architecture.md but not in the tree: {p}")
    for f in files:
        if not any(fnmatch.fnmatchcase(f, p) for p in pats):
            problems.append(f"in the tree but not named in docs/architecture.md: {f}")
    return problems


def top_level():
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                             text=True, check=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        out = [p.name for p in ROOT.iterdir() if not p.name.startswith(".git")]
    return sorted({f.split("/", 1)[0] + ("/" if "/" in f else "") for f in out
                   if (ROOT / f).exists()} - {".gitignore"})


def layout_entries(text):
    """The first word of each line of README.md's Layout block."""
    m = re.search(r"^## Layout\n.*?^```text\n(.*?)^```", text, re.S | re.M)
    if not m:
        return None
    return sorted(line.split()[0] for line in m.group(1).splitlines() if line.strip())


def check_readme(text=None):
    entries = layout_entries(README.read_text() if text is None else text)
    if entries is None:
        return ["README.md has no '## Layout' section with a ```text block"]
    tree = top_level()
    return ([f"in the tree but not in README.md's Layout: {e}" for e in tree if e not in entries]
            + [f"in README.md's Layout but not in the tree: {e}" for e in entries
               if e not in tree])


ENGINE = ROOT / "cxx"
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def room_uses(readme_text):
    """The rooms a room's README.md says it may use (its 'Uses:' line)."""
    m = re.search(r"^Uses: (.*)$", readme_text, re.M)
    if m is None:
        return None
    return set(re.findall(r"\b([a-z_]+)\b", re.sub(r"\([^)]*\)", "", m.group(1))))


def check_rooms(readmes=None):
    """Each include of the engine against its room's Uses: line; no circle."""
    rooms = sorted(d.name for d in ENGINE.iterdir() if d.is_dir())
    if readmes is None:
        readmes = {r: (ENGINE / r / "README.md").read_text() if (ENGINE / r / "README.md").is_file()
                   else "" for r in rooms}
    problems, uses, home = [], {}, {}
    for r in rooms:
        u = room_uses(readmes.get(r, ""))
        if u is None:
            problems.append(f"cxx/{r}/README.md has no 'Uses:' line")
            u = set()
        uses[r] = u & set(rooms)
        for f in (ENGINE / r).iterdir():
            home[f.name] = r
    for f in sorted(ENGINE.glob("*.[ch]*")):
        problems.append(f"in no room of the engine: cxx/{f.name}")
    for r in rooms:
        for f in sorted((ENGINE / r).glob("*.[ch]*")):
            for inc in INCLUDE.findall(f.read_text()):
                to = home.get(inc)
                if to is not None and to != r and to not in uses[r]:
                    problems.append(f"cxx/{r}/{f.name} includes {inc} of {to}/, "
                                    f"which cxx/{r}/README.md does not use")
    # A circle among the Uses: lines would let two rooms include each other.
    state = {}

    def visit(r, path):
        state[r] = "open"
        for u in sorted(uses[r]):
            if state.get(u) == "open":
                problems.append("rooms that use each other: " + " -> ".join(path + [u]))
            elif u not in state:
                visit(u, path + [u])
        state[r] = "done"
    for r in rooms:
        if r not in state:
            visit(r, [r])
    return problems


def main():
    problems = check() + check_readme() + check_rooms()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"docs/check_map.py: {len(problems)} differences between the map and the tree",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

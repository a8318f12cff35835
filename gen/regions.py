"""What gen/vocab.py and gen/cli.py share: a region of a hand-written file
rewritten in place, and writing (or, with --check, naming) the files that
differ from what a table wants."""

import re
import sys


def replace_marked(path, text, regions, lead, tool):
    """Each region NAME of regions lies between the lines
    `<lead> BEGIN gen/<tool> NAME` and `<lead> END gen/<tool> NAME` (each
    may be indented); its lines are replaced, the markers kept."""
    for name, lines in regions.items():
        begin = f"{lead} BEGIN gen/{tool} {name}"
        end = f"{lead} END gen/{tool} {name}"
        m = re.search(r"^[ \t]*" + re.escape(begin) + r"[^\n]*\n(.*?)^[ \t]*" + re.escape(end),
                      text, re.S | re.M)
        if not m:
            raise SystemExit(f"{path}: no region '{name}' ({begin} ... {end})")
        text = text[:m.start(1)] + "".join(l + "\n" for l in lines) + text[m.end(1):]
    return text


def settle(root, items, check, tool, table):
    """items: (path relative to root, make) where make(old text, or None
    for a missing file) gives the text the table wants. Writes each file
    that differs, or with check names them on stderr. The exit status."""
    stale = []
    for rel, make in items:
        path = root / rel
        old = path.read_text() if path.exists() else None
        new = make(old)
        if new != old:
            stale.append(rel)
            if not check:
                path.write_text(new)
    if check and stale:
        print(f"gen/{tool} --check: these differ from gen/{table} (run python3 gen/{tool}):",
              *stale, sep="\n  ", file=sys.stderr)
        return 1
    if not check:
        for rel in stale:
            print(f"wrote {rel}")
    return 0

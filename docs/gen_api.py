#!/usr/bin/env python3
"""Generate docs/api.md from capi/zkelect/zkelect.h.

The reference is built from the header's own comments so the two cannot
drift apart; tests/test_docs.py fails when the committed api.md differs from
what this script produces.

    python3 docs/gen_api.py            # rewrite docs/api.md
    python3 docs/gen_api.py --check    # exit 1 when docs/api.md is stale
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = ROOT / "capi" / "zkelect" / "zkelect.h"
OUT = ROOT / "docs" / "api.md"


def clean_comment(text):
    lines = []
    for line in text.splitlines():
        line = line.strip()
        line = re.sub(r"^/\*\*?|\*/$", "", line).strip()
        line = re.sub(r"^\* ?", "", line)
        lines.append(line)
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def decl_name(decl):
    if decl.startswith("#define"):
        return decl.split()[1]
    if decl.startswith("enum"):
        return decl.split()[1]
    if decl.startswith("typedef"):
        fnptr = re.search(r"\(\*\s*(\w+)\)", decl)
        return fnptr.group(1) if fnptr else re.findall(r"(\w+)\s*;", decl)[-1]
    return re.search(r"(\w+)\s*\(", decl).group(1)


def render(header_text):
    out = [
        "# libzkelect C API reference",
        "",
        "Generated from `capi/zkelect/zkelect.h` by `docs/gen_api.py`; do not edit.",
        "Read [threading.md](threading.md) for threads and ownership and",
        "[semantics.md](semantics.md) for what the events mean.",
        "",
        # tests/bed/examples.py: no block here is a program to run.
        "<!-- examples: fragment (the header's declarations and comments, not programs) -->",
        "",
    ]
    # The file comment: conventions.
    m = re.match(r"\s*/\*(.*?)\*/", header_text, re.S)
    if m:
        out += ["## Conventions", "", "```text", clean_comment(m.group(1)), "```", ""]
    body = header_text[header_text.index('extern "C" {'):]
    # Sections, comments and declarations in order.
    token = re.compile(
        r"/\* -{10,} \*/\s*/\* (?P<section>[^*]+?)\s*\*/\s*/\* -{10,} \*/"
        r"|(?P<comment>/\*.*?\*/)"
        r"|(?P<decl>(?:ZKELECT_API[^;]*;|typedef[^;]*;|enum \w+ \{.*?\};|#define ZKELECT_ID_MAX[^\n]*))",
        re.S,
    )
    pending = None
    for t in token.finditer(body):
        if t.group("section"):
            out += ["## " + t.group("section").strip(), ""]
            pending = None
        elif t.group("comment"):
            pending = clean_comment(t.group("comment"))
        elif t.group("decl"):
            decl = t.group("decl").replace("ZKELECT_API ", "")
            decl = re.sub(r"[ \t]+", " ", decl)
            decl = re.sub(r"\n\s+", "\n    ", decl).strip()
            title = decl_name(decl)
            out += ["### `%s`" % title, "", "```c", decl, "```", ""]
            if pending:
                out += [pending, ""]
            pending = None
    return "\n".join(out).rstrip() + "\n"


def main():
    text = render(HEADER.read_text())
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/api.md is stale: run python3 docs/gen_api.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

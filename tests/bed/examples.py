"""The fenced code blocks of the docs, and what each block says about itself.

A block is runnable when its language is one a user runs (RUNNABLE). Every
runnable block either runs (tests/docs/test_examples.py) or says why not,
in an HTML comment on a line of its own right above its fence:

    <!-- example: fragment (publish() is the host's) -->
    <!-- example: needs root (installs packages) -->
    <!-- example: tested by tests/tools/test_systemd_doc.py -->

Kinds that keep a block from running: `fragment`, `output`, `needs ...`
(what it needs, e.g. `needs root`), each with a reason in parentheses, and
`tested by PATH`, a test file that runs the block and names this document.
Kinds that change how a running block runs:

    <!-- example: given FILE=SOURCE (why) -->   FILE in the working folder,
        SOURCE the name of another block (`go-example`), or `job`: an
        executable script that prints its name and exits 0 (a user's job);
    <!-- example: interrupt zkelect observe (why) -->   a command starting
        so runs until interrupted: it gets SIGINT once it printed a line.

Other comments right above a fence name the block (`<!-- go-example -->`).
A comment `<!-- examples: KIND (reason) -->` on a line of its own applies
to every block of its file that carries no marker itself (docs/api.md,
generated: every block is a declaration).
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNNABLE = {"c", "go", "java", "lua", "rust", "sh", "shell", "bash", "console"}
NOT_RUN = ("fragment", "output", "needs ", "tested by ")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*(\S*)\s*$")
COMMENT = re.compile(r"^\s*<!--\s*(.*?)\s*-->\s*$")
MARK = re.compile(r"^example:\s*(.*)$")
FILE_MARK = re.compile(r"^\s*<!--\s*examples:\s*(.*?)\s*-->\s*$", re.M)
# The docs' example ensembles, each standing for a real one.
HOSTS = ["zk1:2181,zk2:2181,zk3:2181", "10.0.0.1:2181,10.0.0.2:2181", "zk1:2181",
         "127.0.0.1:2181"]


def documents():
    docs = [REPO / "README.md", REPO / "bindings" / "README.md",
            REPO / "bindings" / "rust" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return [d for d in docs if d.exists()]


@dataclass
class Block:
    doc: Path
    line: int            # 1-based line of the opening fence
    lang: str
    text: str
    names: list = field(default_factory=list)
    marks: list = field(default_factory=list)   # the `example:` comments, in order

    @property
    def where(self):
        return f"{self.doc.relative_to(REPO)}:{self.line}"

    @property
    def runnable(self):
        return self.lang in RUNNABLE

    def kind(self):
        """The first mark that keeps the block from running, or None."""
        for m in self.marks:
            if m.startswith(NOT_RUN):
                return m
        return None

    def given(self):
        """{file name: source} of the `given` marks."""
        out = {}
        for m in self.marks:
            g = re.match(r"given (\S+)=(\S+)", m)
            if g:
                out[g.group(1)] = g.group(2)
        return out

    def interrupted(self):
        return [re.match(r"interrupt (.+?)\s*\(", m).group(1)
                for m in self.marks if m.startswith("interrupt ")]

    @property
    def runtime(self):
        """lua5.4 or luajit for a Lua block, else the language."""
        if self.lang == "lua":
            return "luajit" if re.search(r"""require\s*\(?\s*["']zkelect\.ffi["']""", self.text) else "lua5.4"
        return self.lang


def blocks(doc):
    """Every fenced block of doc, in order."""
    lines = doc.read_text().split("\n")
    file_marks = FILE_MARK.findall("\n".join(lines))
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(2), m.group(3).lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if end == len(lines):
            raise AssertionError(f"{doc}:{i + 1}: a fence that never closes")
        names, marks = [], []
        j = i - 1
        while j >= 0 and COMMENT.match(lines[j]):
            c = COMMENT.match(lines[j]).group(1)
            mk = MARK.match(c)
            (marks if mk else names).insert(0, mk.group(1) if mk else c)
            j -= 1
        if not marks:
            marks = list(file_marks)
        indent = len(m.group(1))
        body = "\n".join(l[indent:] if l[:indent].isspace() else l for l in lines[i + 1:end])
        out.append(Block(doc, i + 1, lang, body + "\n", names, marks))
        i = end + 1
    return out


def all_blocks():
    return [b for d in documents() for b in blocks(d)]


def named(name):
    """The one block whose comment names it (`go-example`)."""
    found = [b for b in all_blocks() if name in b.names]
    assert len(found) == 1, f"{len(found)} blocks named {name!r}"
    return found[0]


def with_hosts(text, hosts):
    """text with each of the docs' example ensembles replaced by hosts."""
    return re.sub("|".join(re.escape(h) for h in HOSTS), hosts, text)

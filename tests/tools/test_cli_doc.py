"""Issue 30, item 4: every option of the zkelect tool is written once, in
gen/cli.toml. gen/cli.py writes from it the tool's getopt tables, usage lines
and option lists (tools/options.h, tools/options.c) and the SYNOPSIS and
option lists of docs/zkelect.1. These fail when `zkelect COMMAND --help` or
the man page says something other than the table, when the two disagree with
each other (read independently of the generator), or when the parser accepts
an option the documentation does not list, or refuses one it lists."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GEN = REPO / "gen" / "cli.py"
MAN = REPO / "docs" / "zkelect.1"
COMMANDS = ["run", "status", "observe", "candidate", "transfer", "fenced", "config"]


def _gen():
    import cli  # gen/ is on pytest's path (pytest.ini)
    return cli


@pytest.fixture(scope="module")
def gen():
    return _gen()


def zkelect(zkelect_bin, env, *args):
    return subprocess.run([str(zkelect_bin), *args], env=env, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)


# --- reading --help and the man page, without the generator ----------------------

OPT = r"--([a-z][a-z0-9-]*)(?: ([A-Z][A-Z:=]*))?"


def help_parts(text):
    """(usage line(s) as one line, {option: value name} of the option list)."""
    usage, _, rest = text.partition("\n\n")
    listing = rest.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    opts = {}
    for line in listing.splitlines():
        m = re.match(r"  (?:-[a-z], )?" + OPT, line)
        if m:
            opts[m.group(1)] = m.group(2)
    return " ".join(usage.split()), opts


def roff_text(line):
    """A roff line as the reader sees its words (fonts dropped)."""
    line = line.replace("\\-", "-").replace("\\(dq", '"').replace("\\%", "").replace("\\~", " ")
    line = re.sub(r"\\f[BIRP]", "", line)
    m = re.match(r"\.(B|I|BI|BR|IR|RB|RI|IB)\s+(.*)", line)
    if not m:
        return line
    words = re.findall(r'"[^"]*"|\S+', m.group(2))
    words = [w[1:-1] if w.startswith('"') else w for w in words]
    # Alternating fonts join their words; .B and .I keep the spaces.
    return ("" if len(m.group(1)) == 2 else " ").join(words)


def man_sections(text):
    """{command: [option tag lines]} of COMMANDS, and {command: synopsis}."""
    lines = text.splitlines()
    tags, cmd = {}, None
    for i, line in enumerate(lines):
        if line.startswith(".SS "):
            cmd = line.split()[1]
            tags[cmd] = []
        elif line.startswith(".SH "):
            cmd = None
        elif cmd and line == ".TP" and i + 1 < len(lines):
            tags[cmd].append(roff_text(lines[i + 1]))
    syn = text.split(".SH SYNOPSIS\n", 1)[1].split("\n.SH ", 1)[0]
    synopsis = {}
    for block in syn.split("\n.br\n"):
        words = " ".join(roff_text(l) for l in block.splitlines() if not l.startswith('.\\"'))
        words = " ".join(words.split())
        if words.startswith("zkelect ") and words.split()[1] in COMMANDS:
            synopsis[words.split()[1]] = words
    return tags, synopsis


def man_options(tags):
    opts = {}
    for tag in tags:
        for m in re.finditer(OPT, tag):
            opts[m.group(1)] = m.group(2)
    return opts


# --- the tests ----------------------------------------------------------------

def test_written_files_are_what_the_table_gives():
    r = subprocess.run([sys.executable, str(GEN), "--check"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_prints_the_table(zkelect_bin, env, gen, cmd):
    """What the built tool prints is what the table says (a stale build, or a
    command printing usage lines of its own, fails here)."""
    t = gen.load()
    r = zkelect(zkelect_bin, env, cmd, "--help")
    assert r.returncode == 0 and r.stderr == "", r
    assert r.stdout.startswith(gen.help_synopsis(t, cmd) + "\n"), r.stdout
    assert "\noptions:\n" + gen.help_options(t, cmd) + "\n" in r.stdout, r.stdout
    assert zkelect(zkelect_bin, env, cmd, "-h").stdout == r.stdout


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_and_man_page_agree(zkelect_bin, env, cmd):
    """Read independently: the options of `--help` and of the man page's
    section of the command, with their value names, and the usage line."""
    help_usage, help_opts = help_parts(zkelect(zkelect_bin, env, cmd, "--help").stdout)
    tags, synopsis = man_sections(MAN.read_text())
    assert help_opts, help_usage
    assert man_options(tags[cmd]) == help_opts
    assert help_usage == "usage: " + synopsis[cmd]


SAMPLE = {"MS": "1000", "N": "1", "K": "1", "I": "1", "KEY=VALUE": "leadership=strict",
          "SIG": "USR1"}


@pytest.mark.parametrize("cmd", COMMANDS)
def test_parser_takes_exactly_the_options_listed(zkelect_bin, env, gen, cmd):
    """Every option of any command, tried on this one: listed ones are taken
    (with a good value), the others refused as unknown."""
    listed = help_parts(zkelect(zkelect_bin, env, cmd, "--help").stdout)[1]
    every = {}
    for other in COMMANDS:
        every.update(help_parts(zkelect(zkelect_bin, env, other, "--help").stdout)[1])
    assert set(every) == set(gen.load()["option"])
    for name, arg in every.items():
        value = [SAMPLE.get(arg, "x")] if arg else []
        r = zkelect(zkelect_bin, env, cmd, f"--{name}", *value, "--help")
        if name in listed:
            assert r.returncode == 0 and r.stdout.startswith(f"usage: zkelect {cmd}"), (name, r)
        else:
            assert r.returncode == 2, (name, r)
            assert r.stderr.splitlines()[0] == \
                f"zkelect {cmd}: unknown option or missing value: --{name}", (name, r.stderr)


def test_a_new_option_reaches_help_and_man_page(gen):
    """What adding an option to the table does: the parser's table, --help
    and the man page all change."""
    t = gen.load()
    grown = gen.load()
    grown["option"]["probe-option"] = {"arg": "X", "help": "a test's option",
                                       "man": "a test's option.\n"}
    grown["command"]["config"]["options"].append("probe-option")
    before, after = gen.outputs(t), gen.outputs(grown)
    assert set(after) == {"tools/options.h", "tools/options.c", "docs/zkelect.1"}
    marks = {
        "tools/options.h": ["ZT_OPT_PROBE_OPTION"],
        # The getopt table, the usage line and the option list of --help.
        "tools/options.c": ['{"probe-option", required_argument', "[--probe-option X]",
                            "  --probe-option X  "],
        # SYNOPSIS and config's option list.
        "docs/zkelect.1": [".RB \\%[ \\-\\-probe\\-option", '.BI \\-\\-probe\\-option " X"'],
    }
    for rel, wanted in marks.items():
        for w in wanted:
            assert w not in before[rel] and w in after[rel], (rel, w)


@pytest.mark.skipif(not shutil.which("man"), reason="man is not installed")
def test_man_page_has_no_warnings():
    """lintian runs the same check on the package."""
    r = subprocess.run(["man", "--warnings", "-l", str(MAN)], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, MANWIDTH="80"))
    assert r.returncode == 0 and r.stderr == "", r.stderr

#!/usr/bin/env python3
"""Write the zkelect tool's option tables and the option lists of its man page
from gen/cli.toml, where each option is written once.

    python3 gen/cli.py            # rewrite them
    python3 gen/cli.py --check    # exit 1, naming them, when one differs

tools/options.h and tools/options.c are written whole: the option and command
ids, each command's getopt_long table, and its usage lines and option list as
--help prints them. In docs/zkelect.1 only the regions between
'.\\" BEGIN gen/cli.py NAME' and '.\\" END gen/cli.py NAME' are written: the
command lines of SYNOPSIS ("synopsis") and each command's option list
("options run", ...). tests/tools/test_cli_doc.py runs --check and compares
`zkelect COMMAND --help` and the man page with the table and each other.
"""

import re
import sys
import textwrap
import tomllib

import regions as regions_
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "gen" / "cli.toml"
WIDTH = 79  # of a --help line
HELP_COLUMN = 28  # where the text of an option starts in --help
FIRST_ID = 256  # getopt_long values of options without a short alias
FIELDS = {"arg", "short", "repeat", "synopsis", "help", "man", "min", "max", "default"}
OVERRIDABLE = {"arg", "help", "man", "max"}
NUMBERS = ("min", "max", "default")


VOCABULARY = ROOT / "gen" / "vocabulary.toml"


def key_facts(text):
    """{key:NAME:default|min|max} in the option texts: the library's
    configuration table (gen/vocabulary.toml) says it, not a copy."""
    keys = {k["name"]: k for k in tomllib.loads(VOCABULARY.read_text())["key"]}

    def fact(m):
        k = keys.get(m.group(1))
        if k is None or m.group(2) not in k:
            raise SystemExit(f"{TABLE}: {m.group(0)}: no such key or fact in {VOCABULARY}")
        return str(k[m.group(2)])
    return re.sub(r"\{key:([a-z.]+):(default|min|max)\}", fact, text)


def opt_facts(t):
    """{opt:NAME:min|max|default} (or {opt:NAME.COMMAND:max} for a
    command's own bound) in the option texts: the option's own numbers,
    which the tool's parser takes from options.h."""
    def fact(m):
        name, _, cmd = m.group(1).partition(".")
        opt = t["option"].get(name, {})
        val = opt.get(cmd, {}).get(m.group(2)) if cmd else opt.get(m.group(2))
        if not isinstance(val, int):
            raise SystemExit(f"{TABLE}: {m.group(0)}: the option has no such number")
        return str(val)

    def walk(d):
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v)
            elif isinstance(v, str):
                d[k] = re.sub(r"\{opt:([a-z.-]+):(min|max|default)\}", fact, v)
    walk(t["option"])


def load(text=None):
    t = tomllib.loads(key_facts(TABLE.read_text() if text is None else text))
    opt_facts(t)
    commands, options = t["command"], t["option"]
    for name, opt in options.items():
        if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
            raise SystemExit(f"{TABLE}: bad option name '{name}'")
        for key, val in opt.items():
            if isinstance(val, dict):
                if key not in commands or not set(val) <= OVERRIDABLE:
                    raise SystemExit(f"{TABLE}: option.{name}.{key}: not a command, or "
                                     f"fields other than {sorted(OVERRIDABLE)}")
            elif key not in FIELDS:
                raise SystemExit(f"{TABLE}: option.{name}: unknown field '{key}'")
    for cname, cmd in commands.items():
        for o in cmd["options"] + cmd["required"]:
            if o not in options:
                raise SystemExit(f"{TABLE}: command.{cname}: no option '{o}'")
        if not set(cmd["required"]) <= set(cmd["options"]):
            raise SystemExit(f"{TABLE}: command.{cname}: required options must be among options")
        if len(set(cmd["options"])) != len(cmd["options"]):
            raise SystemExit(f"{TABLE}: command.{cname}: an option twice")
        for o in cmd["options"]:
            for field in ("help", "man"):
                if not spec(t, cname, o).get(field):
                    raise SystemExit(f"{TABLE}: option.{o}: no {field} for command {cname}")
    unused = set(options) - {o for c in commands.values() for o in c["options"]}
    if unused:
        raise SystemExit(f"{TABLE}: options no command takes: {sorted(unused)}")
    return t


def spec(t, cmd, name):
    """Option name as command cmd shows it: the option's fields with the
    command's overrides, and `own` when arg or man is overridden."""
    opt = t["option"][name]
    over = opt.get(cmd, {})
    s = {k: v for k, v in opt.items() if not isinstance(v, dict)}
    s.update(over)
    s["name"] = name
    s["own"] = "arg" in over or "man" in over
    return s


def home(t, name):
    """The first command whose entry for option name is the whole one (the
    option's own man text): the others that use that text refer to it."""
    for cname, cmd in t["command"].items():
        if name in cmd["options"] and not spec(t, cname, name)["own"]:
            return cname
    return None


def c_ident(name):
    return name.upper().replace("-", "_")


# --- --help ------------------------------------------------------------------

def help_item(s, required):
    text = f"--{s['name']}" + (f" {s['arg']}" if s.get("arg") else "")
    if not required:
        text = f"[{text}]"
    return text + ("..." if s.get("repeat") else "")


def help_synopsis(t, cmd):
    """The usage lines of `zkelect cmd --help`."""
    c = t["command"][cmd]
    prefix = f"usage: zkelect {cmd} "
    items = [help_item(spec(t, cmd, o), o in c["required"])
             for o in c["options"] if spec(t, cmd, o).get("synopsis", True)]
    if c.get("operands"):
        items.append(c["operands"])
    lines, line = [], prefix
    for item in items:
        if line.strip() and len(line) + len(item) > WIDTH and line != prefix:
            lines.append(line.rstrip())
            line = " " * len(prefix)
        line += item + " "
    lines.append(line.rstrip())
    return "".join(l + "\n" for l in lines)


def help_tag(s):
    tag = (f"-{s['short']}, " if s.get("short") else "") + f"--{s['name']}"
    return tag + (f" {s['arg']}" if s.get("arg") else "")


def help_options(t, cmd):
    """The option list of `zkelect cmd --help`."""
    col = HELP_COLUMN
    out = []
    for o in t["command"][cmd]["options"]:
        s = spec(t, cmd, o)
        lines = textwrap.wrap(" ".join(s["help"].split()), WIDTH - col,
                              break_long_words=False, break_on_hyphens=False)
        tag = "  " + help_tag(s)
        if len(tag) + 2 > col:  # its text starts on the next line
            out.append(tag)
            tag = ""
        out.append(tag.ljust(col) + lines[0])
        out += [" " * col + l for l in lines[1:]]
    return "".join(l + "\n" for l in out)


# --- C -----------------------------------------------------------------------

def c_string(s, indent):
    """s as C string literals, one per line of s."""
    parts = s.splitlines(keepends=True)
    lits = ['"' + p.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
            for p in parts]
    return ("\n" + " " * indent).join(lits)


GENERATED = "Written by gen/cli.py from gen/cli.toml: edit those and run python3 gen/cli.py."


def secret_keys():
    """Configuration keys whose values are credentials (gen/vocabulary.toml)."""
    return [k["name"] for k in tomllib.loads(VOCABULARY.read_text())["key"] if k.get("secret")]


def options_h(t):
    ids = []
    n = FIRST_ID
    for name, opt in t["option"].items():
        if opt.get("short"):
            ids.append(f"    ZT_OPT_{c_ident(name)} = '{opt['short']}',")
        else:
            ids.append(f"    ZT_OPT_{c_ident(name)} = {n},")
            n += 1
    cmds = [f"    ZT_CMD_{c_ident(c)}," for c in t["command"]]
    numbers = []
    for name, opt in t["option"].items():
        for n in NUMBERS:
            if n in opt:
                numbers.append(f"#define ZT_{c_ident(name)}_{n.upper()} {opt[n]}LL")
        for cname, own in opt.items():
            if isinstance(own, dict) and "max" in own:
                numbers.append(f"#define ZT_{c_ident(name)}_MAX_{c_ident(cname)} {own['max']}LL")
    shorts = "".join(o["short"] + (":" if o.get("arg") else "")
                     for o in t["option"].values() if o.get("short"))
    width = max(len(c) for c in t["command"]) + 1
    listing = " \\\n    ".join(f'"  {c.ljust(width)} {cmd["summary"]}\\n"'
                                for c, cmd in t["command"].items())
    return f"""/* {GENERATED} */
#ifndef ZKELECT_TOOL_OPTIONS_H
#define ZKELECT_TOOL_OPTIONS_H

struct option;

/* getopt_long's short options ("+": the first operand ends the options). */
#define ZT_SHORT_OPTIONS "+{shorts}"

/* What getopt_long returns for each option. */
enum zt_opt {{
{chr(10).join(ids)}
}};

enum zt_cmd {{
{chr(10).join(cmds)}
    ZT_CMD__COUNT
}};

/* The bounds and defaults of numeric options (min, max, default; _MAX_CMD
   where one command bounds an option more tightly), as --help and zkelect.1
   say them. */
{chr(10).join(numbers)}

struct zt_command_spec {{
    const char *name;
    const struct option *getopt; /* its options, for getopt_long */
    int takes_cmd;               /* "--" CMD [ARGS...] follows the options */
    int takes_operands;          /* operands follow the options, without "--" */
    int needs_target;            /* --connect (or ZKELECT_CONNECT) and --path required */
    const char *synopsis;        /* the usage lines of --help */
    const char *options;         /* the option list of --help */
}};

extern const struct zt_command_spec zt_commands[ZT_CMD__COUNT];

/* The commands, one line each, for `zkelect --help`. */
#define ZT_COMMANDS_HELP \\
    {listing}

/* The configuration keys whose values are credentials, NULL-terminated,
   and the same as text for --help. */
extern const char *const zt_secret_keys[];
#define ZT_SECRET_KEYS_TEXT "{", ".join(secret_keys())}"

#endif
"""


def options_c(t):
    out = [f"/* {GENERATED} */", '#include "options.h"', "", "#include <getopt.h>", ""]
    for cname, cmd in t["command"].items():
        out.append(f"static const struct option {c_ident(cname).lower()}_options[] = {{")
        for o in cmd["options"]:
            has_arg = "required_argument" if spec(t, cname, o).get("arg") else "no_argument"
            out.append(f'    {{"{o}", {has_arg}, 0, ZT_OPT_{c_ident(o)}}},')
        out += ["    {0, 0, 0, 0},", "};", ""]
    out.append("const struct zt_command_spec zt_commands[ZT_CMD__COUNT] = {")
    for cname, cmd in t["command"].items():
        target = int("connect" in cmd["required"] and "path" in cmd["required"])
        out += [f"    [ZT_CMD_{c_ident(cname)}] = {{",
                f'        .name = "{cname}",',
                f"        .getopt = {c_ident(cname).lower()}_options,",
                f"        .takes_cmd = {int(bool(cmd.get('operands')) and not cmd.get('positional'))},",
                f"        .takes_operands = {int(bool(cmd.get('positional')))},",
                f"        .needs_target = {target},",
                f"        .synopsis = {c_string(help_synopsis(t, cname), 20)},",
                f"        .options = {c_string(help_options(t, cname), 19)},",
                "    },"]
    out += ["};", "", "const char *const zt_secret_keys[] = {"]
    out += [f'    "{k}",' for k in secret_keys()] + ["    0,", "};"]
    return "".join(l + "\n" for l in out)


# --- the man page --------------------------------------------------------------

def roff_name(name, whole=False):
    """--name in roff; whole: never hyphenated at a line's end (\\%)."""
    return ("\\%" if whole else "") + "\\-\\-" + name.replace("-", "\\-")


def man_arg(arg, after=""):
    """arg in italics but its punctuation (KEY=VALUE, HOST:PORT), then after,
    as one .I or .IR line."""
    words = re.split(r"([=:])", arg)
    if after:
        words.append(after)
    return (".IR " if len(words) > 1 else ".I ") + " ".join(words)


def man_synopsis_item(s, required):
    name, arg, rep = roff_name(s["name"]), s.get("arg"), "..." if s.get("repeat") else ""
    # \% before a word: not hyphenated at a line's end.
    if required:
        return [f".B \\%{name}"] + ([man_arg(arg)] if arg else [])
    if arg:
        return [f".RB \\%[ {name}", man_arg(arg, "]" + rep)]
    return [f".RB \\%[ {name} ]{rep}"]


def man_operands(text):
    out = []
    for tok in text.split():
        if tok.startswith("[") and tok.endswith("]"):
            inner = tok[1:-1]
            dots = "..." if inner.endswith("...") else ""
            out.append(f".RI [ {inner[:len(inner) - len(dots)]} {dots}]")
        elif tok.startswith("-"):
            out.append(".B " + tok.replace("-", "\\-"))
        else:
            out.append(f".I {tok}")
    return out


def man_synopsis(t):
    out = []
    for cname, cmd in t["command"].items():
        out.append(f".B zkelect {cname}")
        for o in cmd["options"]:
            s = spec(t, cname, o)
            if s.get("synopsis", True):
                out += man_synopsis_item(s, o in cmd["required"])
        if cmd.get("operands"):
            out += man_operands(cmd["operands"])
        out.append(".br")
    return out


def man_tag(s):
    """The tag of an option's .TP entry."""
    name, arg = roff_name(s["name"]), s.get("arg")
    if s.get("short"):
        return f".BR \\-{s['short']} \", \" {name}" + (f' " {arg}"' if arg else "")
    return f'.BI {name} " {arg}"' if arg else f".B {name}"


def man_inline(s):
    """The same in running text, for a tag naming several options."""
    tag = (f"\\fB\\-{s['short']}\\fR, " if s.get("short") else "")
    tag += f"\\fB{roff_name(s['name'], True)}\\fR"
    return tag + (f" \\fI{s['arg']}\\fR" if s.get("arg") else "")


def man_options(t, cmd):
    """The .TP entries of cmd's options: one naming those documented under
    another command ("as for run"), then its own, in the table's order."""
    groups, own = {}, []
    for o in t["command"][cmd]["options"]:
        s, h = spec(t, cmd, o), home(t, o)
        if s["own"] or h == cmd:
            own.append(s)
        else:
            groups.setdefault(h, []).append(s)
    out = []
    for h, specs in groups.items():
        out += [".TP", ", ".join(man_inline(s) for s in specs), "as for", f".BR {h} ."]
    for s in own:
        out += [".TP", man_tag(s)] + s["man"].strip("\n").splitlines()
    return out


def man_regions(t):
    regions = {"synopsis": man_synopsis(t)}
    for cname in t["command"]:
        regions[f"options {cname}"] = man_options(t, cname)
    return regions


def replace_marked(path, text, regions):
    return regions_.replace_marked(path, text, regions, '.\\"', "cli.py")


# --- the files ---------------------------------------------------------------

def outputs(t):
    """{path relative to the repository: its text as the table wants it}."""
    man = ROOT / "docs" / "zkelect.1"
    return {
        "tools/options.h": options_h(t),
        "tools/options.c": options_c(t),
        "docs/zkelect.1": replace_marked(man, man.read_text(), man_regions(t)),
    }


def main(argv):
    return regions_.settle(ROOT, ((rel, lambda _old, new=new: new)
                                  for rel, new in outputs(load()).items()),
                           "--check" in argv[1:], "cli.py", "cli.toml")


if __name__ == "__main__":
    sys.exit(main(sys.argv))

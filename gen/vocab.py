#!/usr/bin/env python3
"""Write every copy of libzkelect's vocabulary from gen/vocabulary.toml.

    python3 gen/vocab.py            # rewrite the copies
    python3 gen/vocab.py --check    # exit 1, naming them, when a copy differs

The copies are regions of hand-written files. In the public header and the
engine's errors.h a region is the body of a named enum (so the header stays
plain C for its readers); elsewhere it lies between two marker comments,
BEGIN and END "gen/vocab.py <region>". Everything outside a region is left
as it is. The tests that hold a binding to the compiled header or library
take their lists of words from here too (the compiled side is what they
compare with). tests/abi/test_generated.py runs --check in ./dev test.
"""

import re
import sys
import tomllib

import regions as regions_
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "gen" / "vocabulary.toml"


def camel(name):
    """LEADER_CHANGED -> LeaderChanged."""
    return "".join(w.capitalize() for w in name.lower().split("_"))


def load():
    t = tomllib.loads(TABLE.read_text())
    for kind in ("error", "event", "reason", "counter"):
        seen = set()
        for e in t[kind]:
            if e["value"] in seen or e["name"] in seen:
                raise SystemExit(f"{TABLE}: {kind} {e['name']} = {e['value']} twice")
            seen |= {e["value"], e["name"]}
    for c in t["counter"]:
        # Every counter reaches the Prometheus exposition: as the client's
        # metric, or through the per-election families (tools/metrics.c).
        if not c.get("metric") and not c.get("per_election"):
            raise SystemExit(f"{TABLE}: counter {c['name']} has neither a metric nor per_election")
    counters = [c["value"] for c in t["counter"]]
    if counters != list(range(len(counters))):
        raise SystemExit(f"{TABLE}: counters must be 0, 1, 2, ... in order")
    reasons = [r["value"] for r in t["reason"]]
    if reasons != list(range(len(reasons))):
        raise SystemExit(f"{TABLE}: reasons must be 0, 1, 2, ... in order")
    events = [e["value"] for e in t["event"]]
    if events != list(range(1, len(events) + 1)):
        raise SystemExit(f"{TABLE}: event types must be 1, 2, 3, ... in order")
    return t


def doc_lines(doc):
    return [l.strip() for l in doc.strip().splitlines()] if doc else []


def align(rows):
    """rows of columns, padded as gofmt pads a block: each column but the
    last starts one space after the widest cell of the column before."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [" ".join(c.ljust(w) for c, w in zip(r, widths)) + " " + r[-1] for r in rows]


# --- C: the public header and the engine -----------------------------------

def c_enum(entries, prefix, last_extra=None):
    out = []
    items = [(f"{prefix}{e['name']}", e["value"], e.get("doc")) for e in entries]
    if last_extra:
        items.append((last_extra[0], last_extra[1], last_extra[2]))
    for i, (sym, val, doc) in enumerate(items):
        lines = doc_lines(doc)
        if len(lines) == 1:
            out.append(f"    /** {lines[0]} */")
        elif lines:
            out.append(f"    /** {lines[0]}")
            out += [f"     *  {l}" for l in lines[1:-1]]
            out.append(f"     *  {lines[-1]} */")
        out.append(f"    {sym} = {val}" + ("," if i + 1 < len(items) else ""))
    return out


def header_regions(t):
    n = len(t["counter"])
    return {
        "zkelect_err": c_enum(t["error"], "ZKELECT_"),
        "zkelect_counter": c_enum(t["counter"], "ZKELECT_COUNTER_",
                                  ("ZKELECT_COUNTER__COUNT", n, "How many counters there are.")),
        "zkelect_event_type": c_enum(t["event"], "ZKELECT_EV_"),
        "zkelect_reason": c_enum(t["reason"], "ZKELECT_REASON_"),
    }


def engine_enum(entries, names, extra=None):
    rows = [f"    {n} = {e['value']}," for e, n in zip(entries, names)]
    if extra:
        rows.append(f"    {extra[0]} = {extra[1]},")
    return rows


def errors_h_regions(t):
    return {
        "Err : int": engine_enum(t["error"], [e["engine"] for e in t["error"]]),
        "class EventType : int": engine_enum(t["event"], ["k" + camel(e["name"]) for e in t["event"]]),
        "class Reason : int": engine_enum(t["reason"], ["k" + camel(e["name"]) for e in t["reason"]]),
        "Counter : int": engine_enum(t["counter"], ["k" + camel(e["name"]) for e in t["counter"]],
                                     ("kCounterCount", len(t["counter"]))),
    }


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def abi_check_regions(t):
    """A static_assert per word: the header's enum and the engine's, both
    compiled, must give it one number."""
    pairs = [(f"ZKELECT_{e['name']}", e["engine"]) for e in t["error"]]
    pairs += [(f"ZKELECT_EV_{e['name']}", f"EventType::k{camel(e['name'])}") for e in t["event"]]
    pairs += [(f"ZKELECT_REASON_{r['name']}", f"Reason::k{camel(r['name'])}") for r in t["reason"]]
    pairs += [(f"ZKELECT_COUNTER_{c['name']}", f"k{camel(c['name'])}") for c in t["counter"]]
    pairs.append(("ZKELECT_COUNTER__COUNT", "kCounterCount"))
    return {"same": [f"ZKE_SAME({p}, {e});" for p, e in pairs]}


def capi_test_regions(t):
    """tests/capi/badinput_test.cpp: each code's C name, which the library's
    zkelect_err_name must give back."""
    return {"error names": [f'        {{ZKELECT_{e["name"]}, "ZKELECT_{e["name"]}"}},'
                            for e in t["error"]]}


def vocabulary_cpp_regions(t):
    errors = ["constexpr ErrWords kErrors[] = {"]
    errors += [f"    {{{e['engine']}, \"ZKELECT_{e['name']}\", {c_string(e['message'])}}},"
               for e in t["error"]]
    errors.append("};")

    def names(var, words):
        return [f"constexpr const char *{var}[] = {{"] + [f"    {c_string(w)}," for w in words] + ["};"]

    return {
        "errors": errors,
        "names": names("kEventTypes", ["UNKNOWN"] + [e["name"] for e in t["event"]])
        + names("kReasons", [r["name"].lower() for r in t["reason"]])
        + names("kCounters", [c["name"].lower() for c in t["counter"]]),
    }


# --- Go ---------------------------------------------------------------------

def go_regions(t):
    ev = align([(e.get("go", camel(e["name"])), f"EventType = {e['value']}",
                  f"// {e['go_doc']}") for e in t["event"]])
    rs = align([(f"Reason{camel(r['name'])}", f"Reason = {r['value']}") for r in t["reason"]])
    codes = [e for e in t["error"] if e["value"] != 0]
    cs = align([(f"Code{e['go']}", f"Code = {e['value']}") for e in codes])
    sentinels = align([(f"Err{e['go']}", f"= &Error{{Code: Code{e['go']}}}") for e in codes])
    tab = lambda rows: ["\t" + r for r in rows]
    return {"events": tab(ev), "reasons": tab(rs), "codes": tab(cs), "sentinels": tab(sentinels)}


def go_test_regions(t):
    """foreign_test.go's map from the library's event type names (what
    EventType.String asks libzkelect) to the binding's constants."""
    rows = align([(f'"{e["name"]}":', f"zkelect.{e.get('go', camel(e['name']))},")
                  for e in t["event"]])
    return {"event names": ["\t\t" + r.rstrip() for r in rows]}


# --- Java -------------------------------------------------------------------

def java_regions(t):
    types = ["        UNKNOWN,"]
    for i, e in enumerate(t["event"]):
        if e.get("since"):
            types.append(f"        /** Since {e['since']}. */")
        types.append(f"        {e['name']}" + ("," if i + 1 < len(t["event"]) else ";"))
    return {"event types": types,
            "reasons": ["        " + ", ".join(r["name"] for r in t["reason"]) + ";"]}


def java_exception_regions(t):
    return {"codes": [f"    public static final int {e['name']} = {e['value']};"
                      for e in t["error"] if e["value"] != 0]}


# --- LuaJIT -----------------------------------------------------------------

def lua_regions(t):
    rows = [f"  {e['name']} = {e['value']}," for e in t["error"]]
    rows += [f"  EV_{e['name']} = {e['value']}," for e in t["event"]]
    rows += [f"  REASON_{r['name']} = {r['value']}," for r in t["reason"]]
    rows += [f"  COUNTER_{c['name']} = {c['value']}," for c in t["counter"]]
    rows.append(f"  COUNTER__COUNT = {len(t['counter'])},")
    return {"constants": rows}


# --- Rust -------------------------------------------------------------------

def rust_sys_regions(t):
    def consts(prefix, entries):
        out = []
        for e in entries:
            if e.get("since"):
                out.append(f"/// Since {e['since']}.")
            out.append(f"pub const ZKELECT_{prefix}{e['name']}: c_int = {e['value']};")
        return out
    return {
        "errors": consts("", t["error"]),
        "counters": consts("COUNTER_", t["counter"])
        + [f"pub const ZKELECT_COUNTER__COUNT: c_int = {len(t['counter'])};"],
        "events": consts("EV_", t["event"]),
        "reasons": consts("REASON_", t["reason"]),
    }


def rust_header_test_regions(t):
    """The names tests/header.rs has the C compiler print, to compare with
    zkelect-sys's values: the compiled header is the judge, not this table."""
    names = [f"ZKELECT_{e['name']}" for e in t["error"]]
    names += [f"ZKELECT_COUNTER_{c['name']}" for c in t["counter"]] + ["ZKELECT_COUNTER__COUNT"]
    names += [f"ZKELECT_EV_{e['name']}" for e in t["event"]]
    names += [f"ZKELECT_REASON_{r['name']}" for r in t["reason"]]
    return {"constants": [f"        {n}," for n in names]}


def rust_variants(entries, ident):
    """An enum's variant declarations, each after its rust_doc."""
    out = []
    for e in entries:
        out += [f"    /// {l}" for l in doc_lines(e.get("rust_doc"))]
        out.append(f"    {ident(e)},")
    return out


def rust_regions(t):
    codes = [e for e in t["error"] if e["value"] != 0]
    counters = [camel(c["name"]) for c in t["counter"]]
    return {
        "error kind variants": rust_variants(codes, lambda e: e["rust"]),
        "event kind variants": rust_variants(t["event"], lambda e: camel(e["name"])),
        "reason variants": rust_variants(t["reason"], lambda e: camel(e["name"])),
        "error kinds": [f"            ZKELECT_{e['name']} => ErrorKind::{e['rust']}," for e in codes],
        "event kinds": [f"            ZKELECT_EV_{e['name']} => EventKind::{camel(e['name'])},"
                        for e in t["event"]],
        "reasons": [f"            ZKELECT_REASON_{r['name']} => Reason::{camel(r['name'])},"
                    for r in t["reason"]],
        "counter variants": [l for c in t["counter"] for l in
                             ([f"    /// {c['doc'][0].upper() + c['doc'][1:]}."] if c.get("doc") else [])
                             + [f"    {camel(c['name'])},"]],
        "counters": [f"    pub const ALL: [Counter; {len(counters)}] = ["]
        + [f"        Counter::{c}," for c in counters] + ["    ];"],
        "counter codes": [f"            Counter::{camel(c['name'])} => ZKELECT_COUNTER_{c['name']},"
                          for c in t["counter"]],
    }


# --- Python -------------------------------------------------------------------

def py_keyword(k):
    """zk.session.timeout.ms -> session_timeout_ms; election.acl -> acl."""
    if k.get("py"):
        return k["py"]
    return re.sub(r"^(zk|election)\.", "", k["name"]).replace(".", "_")


def lua_layer_regions(t):
    """The Lua layer's option names: the Python keywords, for the same keys."""
    return {"options": [f'    {{ "{py_keyword(k)}", "{k["name"]}" }},' for k in t["key"]]}


def python_regions(t):
    codes = [e for e in t["error"] if e["value"] != 0]
    out = ["ERRORS = {"]
    out += [f"    {e['value']}: ({e['rust']!r}, {e.get('py_base', 'None')})," for e in codes]
    out.append("}")
    out.append("EVENTS = (")
    out += [f"    {e['name']!r}," for e in t["event"]]
    out.append(")")
    out.append("REASONS = (" + ", ".join(repr(r["name"].lower()) for r in t["reason"]) + ",)")
    out.append("COUNTERS = (")
    out += [f"    {c['name'].lower()!r}," for c in t["counter"]]
    out.append(")")
    out.append("KEYWORDS = {")
    out += [f"    {py_keyword(k)!r}: {k['name']!r}," for k in t["key"]]
    out.append("}")
    return {"vocabulary": out}


# --- configuration keys -------------------------------------------------------

def key_const(name):
    """zk.session.timeout.ms -> kDefaultZkSessionTimeoutMs."""
    return "kDefault" + "".join(w.capitalize() for w in re.split(r"[._]", name))


def conf_regions(t):
    rows = []
    for k in t["key"]:
        kind = {"hosts": "kHosts", "int": "kInt", "choice": "kChoice", "auth": "kAuth",
                "tls": "kTls", "sasl": "kSasl", "path": "kPath", "zkpath": "kZkPath"}[k["kind"]]
        choices = c_string("|".join(k["choices"])) if k.get("choices") else "nullptr"
        message = c_string(k["message"]) if k.get("message") else "nullptr"
        rows.append(f"    {{{c_string(k['name'])}, {c_string(k['default'])}, Kind::{kind}, "
                    f"{k.get('min', 0)}, {k.get('max', 0)}, {str(k.get('empty_ok', False)).lower()},")
        rows.append(f"     {choices},")
        rows.append(f"     {message}}},")
    return {"keys": ["constexpr Key kKeys[] = {"] + rows + ["};"], "place": place_lines(t)}


def place_lines(t):
    """conf.cpp's place(): each key's row says where its value goes (field
    and values) or which function places it (place)."""
    out = ["std::string place(const Key &k, const std::string &value, int n, int choice, Settings *s) {",
           "    switch (&k - kKeys) {"]
    for i, k in enumerate(t["key"]):
        field, place = k.get("field"), k.get("place")
        if bool(field) == bool(place):
            raise SystemExit(f"gen/vocabulary.toml: key {k['name']} needs exactly one of field and place")
        if place == "together":
            out.append(f"    case {i}: break;  // {k['name']}: placed with the keys it goes with")
        elif place:
            out.append(f"    case {i}: return {place}(k, value, n, s);  // {k['name']}")
        elif k.get("values"):
            if len(k["values"]) != len(k.get("choices", [])):
                raise SystemExit(f"gen/vocabulary.toml: key {k['name']}: values must match choices")
            member = "Settings::" + field.replace(".", "::").replace("sasl::", "Sasl::")
            out.append(f"    case {i}: {{  // {k['name']}")
            out.append(f"        static constexpr decltype({member}) v[] = {{{', '.join(k['values'])}}};")
            out.append(f"        s->{field} = v[choice];")
            out.append("        break;")
            out.append("    }")
        elif k["kind"] == "int":
            out.append(f"    case {i}: s->{field} = n; break;  // {k['name']}")
        elif k["kind"] in ("hosts", "sasl", "path", "zkpath"):
            out.append(f"    case {i}: s->{field} = value; break;  // {k['name']}")
        else:
            raise SystemExit(f"gen/vocabulary.toml: key {k['name']}: kind {k['kind']} needs values or place")
    out += ["    }", "    (void)choice;", "    return {};", "}"]
    return out


def conf_test_regions(t):
    """Settings' member initializers, held to each row's default: what a
    Settings made in code (the engine's tests, the simulator) starts with is
    what a client of an empty configuration gets."""
    out = []
    for k in t["key"]:
        if k.get("field") and k["default"]:
            out.append(f"    EXPECT_EQ(d.{k['field']}, s.{k['field']}) << \"{k['name']}\";")
    return {"defaults": out}


def guard_h_regions(t):
    """zkelect-guard's bounds of its drain delay: crash.guard.delay.ms's row,
    as the library checks the key (the guard is a program of its own, in C,
    and takes the delay on its command line or hello line)."""
    k = next(k for k in t["key"] if k["name"] == "crash.guard.delay.ms")
    return {"delay": [f"#define DEFAULT_DELAY_MS {k['default']}", f"#define MAX_DELAY_MS {k['max']}"]}


def conf_h_regions(t):
    return {"defaults": [f"constexpr int {key_const(k['name'])} = {k['default']};"
                         for k in t["key"] if k["kind"] == "int" and k["default"]]}


def header_keys(t):
    out = []
    for k in t["key"]:
        lines = doc_lines(k["doc"])
        quoted = '"' + k["name"] + '"'
        out.append(f" *  - {quoted.ljust(23)} {lines[0]}".rstrip())
        out += [(" *" + " " * 28 + l).rstrip() for l in lines[1:]]
    return out


def replace_between(path, text, regions):
    for (start, end), lines in regions.items():
        a = text.find(start)
        b = text.find(end, a + len(start)) if a >= 0 else -1
        if a < 0 or b < 0:
            raise SystemExit(f"{path}: no text between {start!r} and {end!r}")
        text = text[:a + len(start)] + "".join(l + "\n" for l in lines) + text[b:]
    return text


# --- the files ----------------------------------------------------------------

def marker_style(path):
    if path.suffix == ".md":
        return "<!--"
    if path.suffix == ".lua":
        return "--"
    if path.suffix in (".py", ".toml"):
        return "#"
    return "//"


def replace_marked(path, text, regions):
    return regions_.replace_marked(path, text, regions, marker_style(path), "vocab.py")


def replace_enums(path, text, regions):
    for name, lines in regions.items():
        m = re.search(r"^(\s*)enum " + re.escape(name) + r" \{\n(.*?)^\};", text, re.S | re.M)
        if not m:
            raise SystemExit(f"{path}: no 'enum {name} {{ ... }};'")
        text = text[:m.start(2)] + "".join(l + "\n" for l in lines) + text[m.end(2):]
    return text


# --- the client's counters as Prometheus metrics ---------------------------------

def metric_regions(t):
    out = []
    for c in (c for c in t["counter"] if c.get("metric")):
        first = f'    client_counter(&b, doc, "{c["metric"]}", "{c["name"].lower()}",'
        if len(first) > 100:
            out += [f'    client_counter(&b, doc, "{c["metric"]}",', f'                   "{c["name"].lower()}",']
        else:
            out.append(first)
        out.append(f'                   {c_string(c["metric_help"])});')
    return out


def monitoring_regions(t):
    return [f'| `{c["metric"]}` | counter | | {c.get("metric_doc", c["metric_help"])} |'
            for c in t["counter"] if c.get("metric")]


def targets(t):
    return [
        ("capi/zkelect/zkelect.h", replace_enums, header_regions(t)),
        ("capi/zkelect/zkelect.h", replace_between,
         {(" * Keys (all values are strings):\n",
           " */\nZKELECT_API zkelect_conf_t *zkelect_conf_new(void);"): header_keys(t)}),
        ("cxx/base/errors.h", replace_enums, errors_h_regions(t)),
        ("cxx/base/conf.cpp", replace_marked, conf_regions(t)),
        ("cxx/base/conf.h", replace_marked, conf_h_regions(t)),
        ("tests/unit/conf_test.cpp", replace_marked, conf_test_regions(t)),
        ("guard/guard.h", replace_marked, guard_h_regions(t)),
        ("cxx/base/vocabulary.cpp", replace_marked, vocabulary_cpp_regions(t)),
        ("capi/abi_check.cpp", replace_marked, abi_check_regions(t)),
        ("tests/capi/badinput_test.cpp", replace_marked, capi_test_regions(t)),
        ("bindings/go/elector.go", replace_marked,
         {k: v for k, v in go_regions(t).items() if k in ("events", "reasons")}),
        ("bindings/go/errors.go", replace_marked,
         {k: v for k, v in go_regions(t).items() if k in ("codes", "sentinels")}),
        ("bindings/go/foreign_test.go", replace_marked, go_test_regions(t)),
        ("bindings/java/src/main/java/org/zkelect/Event.java", replace_marked, java_regions(t)),
        ("bindings/java/src/main/java/org/zkelect/ZkelectException.java", replace_marked,
         java_exception_regions(t)),
        ("bindings/luajit/zkelect/ffi.lua", replace_marked, lua_regions(t)),
        ("bindings/luajit/zkelect/layer.lua", replace_marked, lua_layer_regions(t)),
        ("bindings/rust/zkelect-sys/src/lib.rs", replace_marked, rust_sys_regions(t)),
        ("bindings/rust/zkelect-sys/tests/header.rs", replace_marked, rust_header_test_regions(t)),
        ("bindings/rust/zkelect/src/lib.rs", replace_marked, rust_regions(t)),
        ("bindings/python/zkelect/_vocab.py", replace_marked, python_regions(t)),
        ("tools/metrics.c", replace_marked, {"client counters": metric_regions(t)}),
        ("docs/monitoring.md", replace_marked, {"client counters": monitoring_regions(t)}),
    ]


def main(argv):
    t = load()
    # A file may be a target twice (the header: its enums, its key list):
    # the second rewrite starts from the first's text.
    return regions_.settle(ROOT, ((rel, lambda old, fn=fn, regions=regions, rel=rel:
                                   fn(ROOT / rel, old, regions)) for rel, fn, regions in targets(t)),
                           "--check" in argv[1:], "vocab.py", "vocabulary.toml")


if __name__ == "__main__":
    sys.exit(main(sys.argv))

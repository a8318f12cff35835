//! The declarations in src/lib.rs (their constants written by gen/vocab.py,
//! the functions by hand); this test holds them to the C header the library
//! was built with (the one pkg-config pointed build.rs at). Which constants
//! to look at comes from gen/vocabulary.toml too; their values come from
//! the compiled Rust and the compiled C. A C compiler is the judge: every Rust declaration is turned
//! back into a C prototype and redeclared after `#include <zkelect/zkelect.h>`,
//! where any difference of type is a hard error, and every constant is
//! printed by C and compared with its Rust value.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use zkelect_sys::*;

macro_rules! consts {
    ($($name:ident),* $(,)?) => { vec![$((stringify!($name), $name as i64)),*] };
}

fn rust_consts() -> Vec<(&'static str, i64)> {
    consts![
        // BEGIN gen/vocab.py constants
        ZKELECT_OK,
        ZKELECT_EINVAL,
        ZKELECT_ENOMEM,
        ZKELECT_ESTATE,
        ZKELECT_ECLOSED,
        ZKELECT_ETIMEDOUT,
        ZKELECT_ECONNLOSS,
        ZKELECT_ESESSION_EXPIRED,
        ZKELECT_EAUTH,
        ZKELECT_ENOTSUP,
        ZKELECT_EDEADLK,
        ZKELECT_EZK,
        ZKELECT_EINTERNAL,
        ZKELECT_ENOLEADER,
        ZKELECT_ERANGE,
        ZKELECT_ENOTLEADER,
        ZKELECT_ENOCANDIDATE,
        ZKELECT_ETARGET_LOST,
        ZKELECT_ELIMIT,
        ZKELECT_EFENCED,
        ZKELECT_COUNTER_TERMS_WON,
        ZKELECT_COUNTER_DEPOSED_RESIGNED,
        ZKELECT_COUNTER_DEPOSED_SUSPENDED,
        ZKELECT_COUNTER_DEPOSED_LEASE_ENDED,
        ZKELECT_COUNTER_DEPOSED_EXPIRED,
        ZKELECT_COUNTER_DEPOSED_NODE_DELETED,
        ZKELECT_COUNTER_DEPOSED_CLOSED,
        ZKELECT_COUNTER_RECONNECTS,
        ZKELECT_COUNTER_EXPIRIES,
        ZKELECT_COUNTER_ZK_REQUESTS,
        ZKELECT_COUNTER_KEEPALIVES,
        ZKELECT_COUNTER_SEQUENCE_NEAR_WRAP,
        ZKELECT_COUNTER_SESSION_TIMEOUT_BELOW_TWO_TICKS,
        ZKELECT_COUNTER_CRASH_GUARD_WARNINGS,
        ZKELECT_COUNTER_LEASE_LOW,
        ZKELECT_COUNTER_BALANCE_MOVES,
        ZKELECT_COUNTER__COUNT,
        ZKELECT_EV_ELECTED,
        ZKELECT_EV_DEPOSED,
        ZKELECT_EV_FOLLOWING,
        ZKELECT_EV_SUSPENDED,
        ZKELECT_EV_RECONNECTED,
        ZKELECT_EV_EXPIRED,
        ZKELECT_EV_LEADER_CHANGED,
        ZKELECT_EV_ERROR,
        ZKELECT_EV_RESIGNED,
        ZKELECT_EV_OVERFLOW,
        ZKELECT_EV_WARNING,
        ZKELECT_EV_STEPPED_BACK,
        ZKELECT_EV_LEASE_LOW,
        ZKELECT_REASON_NONE,
        ZKELECT_REASON_RESIGNED,
        ZKELECT_REASON_SUSPENDED,
        ZKELECT_REASON_LEASE_ENDED,
        ZKELECT_REASON_EXPIRED,
        ZKELECT_REASON_NODE_DELETED,
        ZKELECT_REASON_CLOSED,
        ZKELECT_REASON_TRANSFERRED,
        // END gen/vocab.py constants
        // Not words of gen/vocabulary.toml: the header's own #defines and log levels.
        ZKELECT_ID_MAX, ZKELECT_EVENT_QUEUE_MAX, ZKELECT_FENCED_EPHEMERAL,
        ZKELECT_LOG_NONE, ZKELECT_LOG_ERROR, ZKELECT_LOG_WARN, ZKELECT_LOG_INFO, ZKELECT_LOG_DEBUG,
    ]
}

fn include_paths() -> Vec<PathBuf> {
    std::env::split_paths(env!("ZKELECT_SYS_INCLUDE_PATHS"))
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

fn header_path() -> PathBuf {
    let paths = include_paths();
    paths
        .iter()
        .map(|p| p.join("zkelect/zkelect.h"))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("zkelect/zkelect.h is under none of pkg-config's include paths {paths:?}"))
}

fn strip_c_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.map_or(true, |l| b < l) => {
                out.push_str(&rest[..b]);
                let end = rest[b + 2..].find("*/").expect("unterminated comment") + b + 4;
                out.push(' ');
                rest = &rest[end..];
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |n| &rest[l + n..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Names of the functions the header exports, and of its enumerators and
/// integer #defines (the version macros live in version.h, not here).
fn header_names() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = strip_c_comments(&fs::read_to_string(header_path()).unwrap());
    let mut funcs = BTreeSet::new();
    let mut consts = BTreeSet::new();
    for stmt in text.split(';') {
        let flat: String = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(at) = flat.rfind("ZKELECT_API ") {
            let decl = &flat[at..];
            if let Some(paren) = decl.find('(') {
                let name: String = decl[..paren].trim_end().chars().rev()
                    .take_while(|&c| is_ident(c)).collect::<Vec<_>>().into_iter().rev().collect();
                if name.starts_with("zkelect_") {
                    funcs.insert(name);
                }
            }
        }
    }
    let mut rest = text.as_str();
    while let Some(at) = rest.find("enum zkelect_") {
        let body_start = rest[at..].find('{').unwrap() + at + 1;
        let body_end = rest[body_start..].find('}').unwrap() + body_start;
        for item in rest[body_start..body_end].split(',') {
            let name = item.split('=').next().unwrap().trim();
            if !name.is_empty() {
                consts.insert(name.to_string());
            }
        }
        rest = &rest[body_end..];
    }
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() == Some("#define") {
            if let (Some(name), Some(value)) = (words.next(), words.next()) {
                if name.starts_with("ZKELECT_") && value.parse::<i64>().is_ok() {
                    consts.insert(name.to_string());
                }
            }
        }
    }
    (funcs, consts)
}

/// Translate one Rust FFI type of src/lib.rs into C.
fn c_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(inner) = t.strip_prefix("*mut ") {
        return format!("{} *", c_type(inner));
    }
    if let Some(inner) = t.strip_prefix("*const ") {
        return format!("const {} *", c_type(inner));
    }
    match t {
        "c_int" => "int",
        "c_uint" => "unsigned",
        "c_char" => "char",
        "c_void" => "void",
        "i64" => "int64_t",
        "i32" => "int32_t",
        "u64" => "uint64_t",
        "size_t" => "size_t",
        other if other.starts_with("zkelect_") => other,
        other => panic!("no C spelling known for Rust type `{other}`"),
    }
    .to_string()
}

/// (name, C prototype) of every function declared in src/lib.rs.
fn rust_prototypes() -> Vec<(String, String)> {
    let src = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let block = &src[src.find("extern \"C\" {").expect("extern block")..];
    let mut out = Vec::new();
    for decl in block.split("pub fn ").skip(1) {
        let decl = &decl[..decl.find(';').unwrap()];
        let open = decl.find('(').unwrap();
        let close = decl.rfind(')').unwrap();
        let name = decl[..open].trim().to_string();
        let params: Vec<String> = decl[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| c_type(p.split_once(':').expect("named parameter").1))
            .collect();
        let ret = decl[close + 1..].trim().strip_prefix("->").map_or("void".to_string(), c_type);
        let params = if params.is_empty() { "void".to_string() } else { params.join(", ") };
        out.push((name.clone(), format!("{ret} {name}({params});")));
    }
    out
}

#[test]
fn every_header_function_is_declared_and_nothing_else() {
    let (funcs, _) = header_names();
    assert!(funcs.len() > 40, "header parse found only {funcs:?}");
    let ours: BTreeSet<String> = rust_prototypes().into_iter().map(|(n, _)| n).collect();
    let missing: Vec<_> = funcs.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&funcs).collect();
    assert!(missing.is_empty(), "functions in the header but not in zkelect-sys: {missing:?}");
    assert!(extra.is_empty(), "functions in zkelect-sys but not in the header: {extra:?}");
}

#[test]
fn every_header_constant_is_declared() {
    let (_, consts) = header_names();
    let ours: BTreeSet<String> = rust_consts().into_iter().map(|(n, _)| n.to_string()).collect();
    let missing: Vec<_> = consts.difference(&ours).collect();
    assert!(missing.is_empty(), "constants in the header but not in zkelect-sys: {missing:?}");
}

#[test]
fn c_compiler_agrees_with_types_and_values() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("zkelect-sys-header-check");
    fs::create_dir_all(&dir).unwrap();
    let mut c = String::from("#include <zkelect/zkelect.h>\n#include <stdio.h>\n\n");
    for (_, proto) in rust_prototypes() {
        c.push_str(&proto);
        c.push('\n');
    }
    c.push_str("\nint main(void) {\n");
    for (name, _) in rust_consts() {
        c.push_str(&format!("    printf(\"%s %lld\\n\", \"{name}\", (long long)({name}));\n"));
    }
    c.push_str("    printf(\"ZKELECT_VERSION_NUMBER %lld\\n\", (long long)ZKELECT_VERSION_NUMBER);\n");
    c.push_str("    return 0;\n}\n");
    let src = dir.join("check.c");
    let exe = dir.join("check");
    fs::write(&src, &c).unwrap();

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(&cc);
    cmd.args(["-std=c99", "-Wall", "-Werror", "-pedantic", "-o"]).arg(&exe).arg(&src);
    for p in include_paths() {
        cmd.arg("-I").arg(p);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        out.status.success(),
        "the C compiler rejects zkelect-sys's declarations against the header:\n{}\n--- generated {}",
        String::from_utf8_lossy(&out.stderr),
        src.display()
    );

    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    let stdout = String::from_utf8(run.stdout).unwrap();
    let mut seen = 0;
    for line in stdout.lines() {
        let (name, value) = line.split_once(' ').unwrap();
        let value: i64 = value.parse().unwrap();
        if name == "ZKELECT_VERSION_NUMBER" {
            // The library that is linked must be the one the header describes.
            assert_eq!(unsafe { zkelect_version() } as i64, value, "runtime zkelect_version()");
            continue;
        }
        let (_, ours) = rust_consts().into_iter().find(|(n, _)| *n == name).unwrap();
        assert_eq!(ours, value, "{name}: Rust has {ours}, the header {value}");
        seen += 1;
    }
    assert_eq!(seen, rust_consts().len());
}

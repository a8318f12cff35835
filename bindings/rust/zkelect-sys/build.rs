// Finds libzkelect through pkg-config, as -sys crates conventionally do, so
// an installed library and an uninstalled meson build dir
// (PKG_CONFIG_PATH=$BUILD/meson-uninstalled) are found the same way; or,
// for a library pkg-config cannot see, through ZKELECT_LIB_DIR.
use std::env;
use std::path::PathBuf;

// The declarations in src/lib.rs are those of ABI major 1: a 2.x library may
// give the same names other meanings, so it is refused here, at build time.
const VERSION_RANGE: std::ops::Range<&str> = "1.0".."2.0";

fn main() {
    for var in ["ZKELECT_LIB_DIR", "ZKELECT_INCLUDE_DIR", "ZKELECT_STATIC"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let (includes, version) = match env::var_os("ZKELECT_LIB_DIR") {
        Some(dir) => from_env(PathBuf::from(dir)),
        None => from_pkg_config(),
    };
    // DEP_ZKELECT_INCLUDE for crates that compile C against the same header.
    println!("cargo:include={includes}");
    // The header check in tests/ compiles C against exactly the header this
    // build linked with, so it needs the include path chosen here.
    println!("cargo:rustc-env=ZKELECT_SYS_INCLUDE_PATHS={includes}");
    println!("cargo:rustc-env=ZKELECT_SYS_LIB_VERSION={version}");
}

fn from_pkg_config() -> (String, String) {
    let lib = match pkg_config::Config::new()
        .range_version(VERSION_RANGE)
        .probe("libzkelect")
    {
        Ok(lib) => lib,
        Err(e) => panic!(
            "\n\nzkelect-sys: libzkelect >= {}, < {} was not found through pkg-config.\n\
             Install it (Debian: apt-get install libzkelect-dev), point PKG_CONFIG_PATH at\n\
             a directory holding libzkelect.pc (uninstalled meson build: $BUILD/meson-uninstalled),\n\
             or set ZKELECT_LIB_DIR (and ZKELECT_INCLUDE_DIR) to where the library is.\n\n{e}\n",
            VERSION_RANGE.start, VERSION_RANGE.end
        ),
    };
    let includes = env::join_paths(&lib.include_paths)
        .expect("include paths joinable with ':'")
        .to_string_lossy()
        .into_owned();
    (includes, lib.version)
}

fn from_env(dir: PathBuf) -> (String, String) {
    let statik = env::var_os("ZKELECT_STATIC").map_or(false, |v| v != "0" && !v.is_empty());
    let file = if statik { "libzkelect.a" } else { "libzkelect.so" };
    if !dir.join(file).exists() {
        panic!(
            "\n\nzkelect-sys: ZKELECT_LIB_DIR={} holds no {file}.\n",
            dir.display()
        );
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    if statik {
        // What libzkelect.pc's Libs.private says a static link needs.
        println!("cargo:rustc-link-lib=static=zkelect");
        for lib in ["zookeeper_mt", "stdc++", "m"] {
            println!("cargo:rustc-link-lib={lib}");
        }
    } else {
        println!("cargo:rustc-link-lib=zkelect");
    }
    let includes = env::var("ZKELECT_INCLUDE_DIR").unwrap_or_default();
    // Without pkg-config there is no version to report; the header's
    // ZKELECT_VERSION_STRING is the next best, when the header is known.
    let version = std::fs::read_to_string(PathBuf::from(&includes).join("zkelect/version.h"))
        .ok()
        .and_then(|h| {
            h.lines()
                .find_map(|l| l.strip_prefix("#define ZKELECT_VERSION_STRING \""))
                .map(|v| v.trim_end_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    (includes, version)
}

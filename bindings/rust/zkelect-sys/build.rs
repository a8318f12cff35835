// Finds libzkelect through pkg-config, as -sys crates conventionally do, so
// an installed library and an uninstalled meson build dir
// (PKG_CONFIG_PATH=$BUILD/meson-uninstalled) are found the same way.
fn main() {
    let lib = match pkg_config::Config::new()
        .atleast_version("1.0")
        .probe("libzkelect")
    {
        Ok(lib) => lib,
        Err(e) => panic!(
            "\n\nzkelect-sys: libzkelect >= 1.0 was not found through pkg-config.\n\
             Install it, or point PKG_CONFIG_PATH at a directory holding libzkelect.pc\n\
             (for an uninstalled meson build: $BUILD/meson-uninstalled).\n\n{e}\n"
        ),
    };
    let includes = std::env::join_paths(&lib.include_paths)
        .expect("include paths joinable with ':'")
        .to_string_lossy()
        .into_owned();
    // DEP_ZKELECT_INCLUDE for crates that compile C against the same header.
    println!("cargo:include={includes}");
    // The header check in tests/ compiles C against exactly the header this
    // build linked with, so it needs the include path pkg-config chose.
    println!("cargo:rustc-env=ZKELECT_SYS_INCLUDE_PATHS={includes}");
    println!("cargo:rustc-env=ZKELECT_SYS_LIB_VERSION={}", lib.version);
}

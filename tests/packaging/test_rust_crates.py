"""The Rust crates (bindings/rust) are ready to publish, and zkelect-sys
finds libzkelect the ways its README promises.

- `cargo package --workspace` packs and verifies both crates in dependency
  order: zkelect is verified against the zkelect-sys just packed (cargo's
  temporary local registry), which `cargo package -p zkelect` alone cannot
  do before zkelect-sys is on crates.io. Each .crate carries the metadata
  crates.io shows (licence, description, repository, documentation, readme,
  keywords, categories) and the licence text.
- pkg-config is asked for `>= 1.0, < 2.0`: a 2.x library is refused.
- ZKELECT_LIB_DIR / ZKELECT_INCLUDE_DIR reach a library pkg-config cannot
  see; without them and without pkg-config the build says what to set.
"""

import os
import re
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUST = REPO / "bindings" / "rust"
TIMEOUT = 900


def _need():
    if shutil.which("cargo") is None:
        pytest.fail("cargo is not installed (Debian: apt-get install cargo)", pytrace=False)


def _env(build_dir, **extra):
    env = dict(os.environ)
    for var in ("PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "ZKELECT_LIB_DIR", "ZKELECT_INCLUDE_DIR",
                "ZKELECT_STATIC"):
        env.pop(var, None)
    env.update(CARGO_TARGET_DIR=str(build_dir / "rust-pkg-target"), CARGO_TERM_COLOR="never",
               PKG_CONFIG_PATH=str(build_dir / "meson-uninstalled"),
               LD_LIBRARY_PATH=str(build_dir / "capi"))
    env.update(extra)
    return env


def _cargo(args, env):
    try:
        return subprocess.run(["cargo", *args], cwd=RUST, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"cargo {args} did not finish in {TIMEOUT} s:\n{e.stderr or ''}", pytrace=False)


def _forget_verified_copies(target):
    """cargo package verifies zkelect against the zkelect-sys it just
    packed, through a local registry. A registry's crate of one version is
    taken as never changing: its sources are unpacked under CARGO_HOME
    (registry/src/-HASH/) once, and its build in the target dir is reused,
    so a change to zkelect-sys within one version would be verified against
    the old copy. Both go before each run: the target dir is the test's
    own, and the unpacked copies are only ever our own packs (local
    registries' folders start with "-")."""
    shutil.rmtree(target, ignore_errors=True)
    home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo") / "registry"
    for d in (home / "src").glob("-*/zkelect*-*"):
        shutil.rmtree(d, ignore_errors=True)
    for f in (home / "cache").glob("-*/zkelect*-*.crate"):
        f.unlink(missing_ok=True)


def test_both_crates_package_and_verify_in_dependency_order(build_dir):
    _need()
    env = _env(build_dir)
    out = build_dir / "rust-pkg-target" / "package"
    _forget_verified_copies(build_dir / "rust-pkg-target")
    # --allow-dirty: the test also runs in a working tree with edits; what
    # is packed is the same set of files either way.
    proc = _cargo(["package", "--workspace", "--locked", "--allow-dirty"], env)
    assert proc.returncode == 0, proc.stderr[-5000:]
    order = re.findall(r"Verifying (zkelect(?:-sys)?) v", proc.stderr)
    assert order == ["zkelect-sys", "zkelect"], proc.stderr
    for name, extra in (("zkelect-sys", {"links": "zkelect"}), ("zkelect", {})):
        version = tomllib.loads((RUST / name / "Cargo.toml").read_text())["package"]["version"]
        crate = out / f"{name}-{version}.crate"
        assert crate.exists(), f"no {crate}"
        with tarfile.open(crate) as tar:
            names = {Path(m.name).relative_to(f"{name}-{version}").as_posix() for m in tar.getmembers()}
            manifest = tomllib.loads(tar.extractfile(f"{name}-{version}/Cargo.toml").read().decode())
            license_text = tar.extractfile(f"{name}-{version}/LICENSE").read().decode()
        pkg = manifest["package"]
        for field in ("license", "description", "repository", "documentation", "readme",
                      "keywords", "categories", "homepage"):
            assert pkg.get(field), f"{name}: no {field} in Cargo.toml"
        assert pkg["license"] == "Apache-2.0"
        assert "Apache License" in license_text and "Version 2.0" in license_text
        assert pkg["readme"] in names, f"{name}: readme {pkg['readme']} not packed: {sorted(names)}"
        assert "github.com/libzkelect/libzkelect" in pkg["repository"]
        for key, value in extra.items():
            assert pkg.get(key) == value, (name, key, pkg.get(key))
        if name == "zkelect":
            dep = manifest["dependencies"]["zkelect-sys"]
            sys_version = tomllib.loads((RUST / "zkelect-sys" / "Cargo.toml").read_text())["package"]["version"]
            assert dep["version"].lstrip("^=") == sys_version and "path" not in dep, dep


def test_a_2x_library_is_refused(build_dir, tmp_path):
    _need()
    pc = tmp_path / "pc"
    pc.mkdir()
    (pc / "libzkelect.pc").write_text(
        f"Name: libzkelect\nDescription: a 2.x stand-in\nVersion: 2.0.0\n"
        f"Cflags: -I{REPO / 'capi'}\nLibs: -L{build_dir / 'capi'} -lzkelect\n")
    proc = _cargo(["build", "--locked", "-p", "zkelect-sys"],
                  _env(build_dir, PKG_CONFIG_PATH=str(pc)))
    assert proc.returncode != 0, "zkelect-sys accepted libzkelect 2.0.0"
    assert "libzkelect >= 1.0, < 2.0 was not found" in proc.stderr, proc.stderr[-3000:]


def test_env_override_reaches_a_library_pkg_config_cannot_see(build_dir, tmp_path):
    _need()
    inc = tmp_path / "inc"
    (inc / "zkelect").mkdir(parents=True)
    shutil.copy(REPO / "capi" / "zkelect" / "zkelect.h", inc / "zkelect")
    shutil.copy(build_dir / "capi" / "zkelect" / "version.h", inc / "zkelect")
    empty = tmp_path / "no-pc"
    empty.mkdir()
    blind = dict(PKG_CONFIG_PATH="", PKG_CONFIG_LIBDIR=str(empty))
    proc = _cargo(["build", "--locked", "-p", "zkelect-sys"], _env(build_dir, **blind))
    assert proc.returncode != 0, "built with pkg-config blind and no ZKELECT_LIB_DIR"
    assert "ZKELECT_LIB_DIR" in proc.stderr, proc.stderr[-3000:]
    # The crate's own header check compiles C against the header it was
    # pointed at and compares every constant: it proves the include dir
    # arrived, and the test binary links (the lib dir arrived).
    # (Only that test: whether every header name is declared in Rust is the
    # crate's own business, run by tests/bindings/test_rust.py.)
    proc = _cargo(["test", "--locked", "-p", "zkelect-sys", "--test", "header",
                   "c_compiler_agrees_with_types_and_values"],
                  _env(build_dir, ZKELECT_LIB_DIR=str(build_dir / "capi"),
                       ZKELECT_INCLUDE_DIR=str(inc), **blind))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"test c_compiler_agrees_with_types_and_values \.\.\. ok", proc.stdout), proc.stdout
    proc = _cargo(["build", "--locked", "-p", "zkelect-sys"],
                  _env(build_dir, ZKELECT_LIB_DIR=str(empty), **blind))
    assert proc.returncode != 0 and "holds no libzkelect.so" in proc.stderr, proc.stderr[-3000:]

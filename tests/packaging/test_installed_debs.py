"""The Debian packages, installed, serve each language's README example run
from a folder outside the repository, against a real ensemble.

`./dev test` builds the packages (./dev package) and names their folder in
ZKELECT_DEBS; this module installs them with apt (root, or sudo without a
password: CI is root on a throwaway machine), runs the examples with an
environment that points nowhere into the build tree, and purges the
packages afterwards so the other suites keep using the build tree.

- C: the README's example, `cc elect.c $(pkg-config --cflags --libs libzkelect)`;
- Go: a fresh module requiring the installed module source
  (/usr/share/gocode/src/...) through a replace line, a fresh build cache;
- Lua: a plain `require "zkelect"` (no LUA_CPATH);
- LuaJIT: a plain `require "zkelect.ffi"` (no LUA_PATH, no ZKELECT_LIBRARY);
- Java: `java -cp /usr/share/java/zkelect.jar Example.java`, no -D flag;
- Python: a plain `import zkelect` by /usr/bin/python3 (no PYTHONPATH), both
  examples (blocking and asyncio);
- Rust: a fresh crate with a path dependency on bindings/rust/zkelect,
  finding the installed library through pkg-config;
- and the packages install over an older libzkelect1 as an upgrade;
- the packages carry ZooKeeper's C client built in (-Dzookeeper=bundled,
  Built-Using: zookeeper), hidden: the library exports zkelect_* only and
  needs libssl and libsasl2, not libzookeeper-mt2;
- the installed `zkelect` elects over TLS-only servers that require SASL
  (DIGEST-MD5): with ssl.clientAuth=none from zk.tls.ca alone, with need
  from a client certificate (and zk.tls.ca alone is refused there, exit 5);
  a wrong password exits 5 (docs/tls.md, docs/security.md).
"""

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bed import examples
from bed.sh import ok as _ok, run as _run
from bed.toolutil import set_tls_ca
from sasl import saslbed
from tls import tlsbed

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ["libzkelect1", "libzkelect-dev", "zkelect", "lua-zkelect", "libzkelect-jni",
            "libzkelect-java", "golang-github-libzkelect-libzkelect-dev", "python3-zkelect"]
GO_MODULE = "github.com/libzkelect/libzkelect/bindings/go"
GO_SRC = Path("/usr/share/gocode/src") / GO_MODULE
# One holder at a time on this machine: two runs installing and purging the
# same packages would pull them from under each other.
LOCK = "/tmp/zkelect-installed-debs.lock"


def _installed(pkg):
    proc = _run(["dpkg-query", "-W", "-f=${Status}", pkg], timeout=60)
    return proc.returncode == 0 and "install ok installed" in proc.stdout


def _clean_env(tmp):
    """os.environ without anything that leads into the build tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "LD_LIBRARY_PATH", "LIBRARY_PATH",
                        "CPATH", "C_INCLUDE_PATH", "LUA_CPATH", "LUA_PATH", "LUA_CPATH_5_4",
                        "LUA_PATH_5_4", "CLASSPATH", "ZKELECT_BUILD_DIR", "ZKELECT_LIB_DIR",
                        "ZKELECT_INCLUDE_DIR", "ZKELECT_LIBRARY", "GOFLAGS", "CARGO_TARGET_DIR", "JAVA_TOOL_OPTIONS",
                        "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "VIRTUAL_ENV")}
    env["HOME"] = os.environ.get("HOME", str(tmp))
    return env


def _version(pkg):
    return _run(["dpkg-query", "-W", "-f=${Version}", pkg], timeout=60).stdout.strip()


def _deb_version(deb):
    return _ok(_run(["dpkg-deb", "-f", str(deb), "Version"], timeout=60), "dpkg-deb -f").stdout.strip()


def _older(deb, tmp):
    """deb repacked as version <upstream>~rc1-1: sorts before the real one."""
    root = tmp / "root"
    _ok(_run(["dpkg-deb", "-R", str(deb), str(root)], timeout=120), "dpkg-deb -R")
    control = root / "DEBIAN" / "control"
    version = _deb_version(deb)
    upstream = version.split("-")[0]
    text = control.read_text().replace(f"Version: {version}\n", f"Version: {upstream}~rc1-1\n")
    assert f"{upstream}~rc1-1" in text, text
    control.write_text(text)
    out = tmp / f"libzkelect1_{upstream}~rc1-1.deb"
    _ok(_run(["dpkg-deb", "--root-owner-group", "-b", str(root), str(out)], timeout=120), "dpkg-deb -b")
    return out


@pytest.fixture(scope="module")
def debs(tmp_path_factory):
    folder = os.environ.get("ZKELECT_DEBS")
    if not folder:
        pytest.skip("ZKELECT_DEBS is not set: ./dev test builds the packages and sets it")
    folder = Path(folder)
    files = sorted(p for p in folder.glob("*.deb") if "-dbgsym_" not in p.name)
    names = {p.name.split("_")[0] for p in files}
    assert names == set(PACKAGES), f"{folder} holds {sorted(names)}, expected {PACKAGES}"
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if sudo and _run(["sudo", "-n", "true"], timeout=30).returncode != 0:
        pytest.fail("installing the packages needs root (or sudo without a password)", pytrace=False)
    lock = open(LOCK, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        already = [p for p in PACKAGES if _installed(p)]
        assert not already, (f"{already} are installed already; this test purges what it installs "
                             "and will not remove someone else's")
        apt = [*sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q",
               "--no-install-recommends", "-o", "DPkg::Lock::Timeout=900"]
        try:
            # A system with an older libzkelect1: the same library under an
            # earlier version, installed first, must upgrade in place.
            older = _older(next(p for p in files if p.name.startswith("libzkelect1_")),
                           tmp_path_factory.mktemp("older"))
            _ok(_run([*apt, str(older)], timeout=1200), "apt-get install an older libzkelect1")
            before = _version("libzkelect1")
            _ok(_run([*apt, *map(str, files)], timeout=1200), "apt-get install the .debs")
            yield SimpleNamespace(files=files, before=before, after=_version("libzkelect1"),
                                  new=_deb_version(files[0]))
        finally:
            _run([*sudo, "dpkg", "--purge", *PACKAGES], timeout=600)
            left = [p for p in PACKAGES if _installed(p)]
            assert not left, f"{left} still installed after the purge"
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


def _readme_block(path, marker_re):
    text = path.read_text()
    m = re.search(marker_re, text, re.S)
    assert m, f"{path} has no example matching {marker_re}"
    return m.group(1)


def _outside(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    assert not d.resolve().is_relative_to(REPO.resolve())
    return d


def _token(out, what):
    m = re.search(r"leading with (?:fencing )?token (\d+)$", out.strip())
    assert m and int(m.group(1)) > 0, f"{what} did not lead:\n{out}"


def test_an_older_libzkelect1_was_upgraded(debs):
    assert debs.before.endswith("~rc1-1"), debs.before
    assert debs.after == debs.new, (debs.before, debs.after, debs.new)
    ok = _run(["dpkg", "--audit"], timeout=120)
    assert ok.returncode == 0 and not ok.stdout.strip(), ok.stdout


def _packaged_library():
    return _ok(_run(["sh", "-c", "dpkg -L libzkelect1 | grep '/libzkelect.so.1$'"], timeout=60),
               "dpkg -L libzkelect1").stdout.strip()


def test_the_packaged_library_bundles_the_client_hidden_with_tls_and_sasl(debs):
    lib_path = _packaged_library()
    ldd = _ok(_run(["ldd", lib_path], timeout=60), "ldd").stdout
    assert "libzookeeper_mt" not in ldd, ldd
    assert re.search(r"libssl\.so\.3 => ", ldd) and re.search(r"libsasl2\.so\.2 => ", ldd), ldd
    # The client inside is static and hidden: a program that also loads
    # libzookeeper-mt2 keeps its own (zkclient/meson.build).
    nm = _ok(_run(["nm", "-D", "--defined-only", lib_path], timeout=60), "nm -D").stdout
    exported = {line.split()[-1] for line in nm.splitlines() if line.strip()}
    others = sorted(n for n in exported if not n.startswith("zkelect_") and not n.startswith("ZKELECT_"))
    assert not others and any(n.startswith("zkelect_") for n in exported), others[:20]
    rc, msg = set_tls_ca(lib_path)
    assert rc == 0, (rc, msg)
    for pkg in ("libzkelect1", "libzkelect-dev"):
        deb = next(p for p in debs.files if p.name.startswith(pkg + "_"))
        built_using = _ok(_run(["dpkg-deb", "-f", str(deb), "Built-Using"], timeout=60),
                          "dpkg-deb -f").stdout.strip()
        assert re.fullmatch(r"zookeeper \(= 3\.8\.0-[\w.+~]+\)", built_using), (pkg, built_using)
    copyright = Path("/usr/share/doc/libzkelect1/copyright").read_text()
    assert "Files: zookeeper-client/*" in copyright and "Christopher Clark" in copyright


SESSION_MS = 4000


@pytest.fixture(scope="module", params=["none", "need"])
def secure_server(request, debs):
    """One TLS-only server that requires SASL (DIGEST-MD5) of every
    client, with ssl.clientAuth=none or need."""
    d = tempfile.mkdtemp(prefix="zkelect-debs-secure-")
    ens, keys = saslbed.secure_ensemble(d, n=1, client_auth=request.param)
    try:
        ens.start()
        yield ens, keys, request.param
    finally:
        ens.stop()
        subprocess.run(["rm", "-rf", d], check=False)


def _installed_zkelect(ens, keys, env, tmp_path, stdin="join\n"):
    return _run(["/usr/bin/zkelect", "candidate", "--connect", ens.secure_connect_string,
                 "--path", "/debs/never", "--first-id", "1", "--count", "1",
                 "--session-timeout-ms", str(SESSION_MS), "--connect-timeout-ms", "8000",
                 *saslbed.as_set_args(keys)], cwd=tmp_path, env=env, timeout=60, input=stdin)


def test_installed_zkelect_elects_over_tls_and_sasl(secure_server, tmp_path):
    ens, keys, client_auth = secure_server
    d = _outside(tmp_path, "secure")
    env = _clean_env(tmp_path)
    ca_only = {k: v for k, v in keys.items() if k not in ("zk.tls.cert", "zk.tls.key")}
    path = f"/debs/secure-{client_auth}-{os.getpid()}"
    if client_auth == "none":
        # The usual managed set-up: encryption by TLS, identity by SASL, a
        # CA and no client certificate.
        tlsbed.elect_three_and_hand_over("/usr/bin/zkelect", env, ens.secure_connect_string, path,
                                         SESSION_MS, saslbed.as_set_args(ca_only),
                                         "from the packages, TLS with only a CA, and SASL")
    else:
        tlsbed.elect_three_and_hand_over("/usr/bin/zkelect", env, ens.secure_connect_string, path,
                                         SESSION_MS, saslbed.as_set_args(keys),
                                         "from the packages, TLS with a client certificate, and SASL")
        r = _installed_zkelect(ens, ca_only, env, d)
        assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
        assert "zk.tls.cert" in r.stderr and "client certificate" in r.stderr, r.stderr
    # A wrong password: refused, exit 5 (denied), not a timeout.
    wrong = dict(ca_only if client_auth == "none" else keys)
    wrong["zk.sasl.password.file"] = saslbed.password_file(str(d), "pw-wrong", "not-the-password")
    r = _installed_zkelect(ens, wrong, env, d)
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "ZKELECT_EAUTH" in r.stderr, r.stderr


def test_c_readme_example_with_pkg_config(debs, zk, tmp_path):
    d = _outside(tmp_path, "c")
    (d / "elect.c").write_text(_readme_block(REPO / "README.md", r"## Use it from C.*?```c\n(.*?)```"))
    env = _clean_env(tmp_path)
    _ok(_run(["sh", "-c", "cc elect.c -o elect $(pkg-config --cflags --libs libzkelect)"], cwd=d, env=env),
        "cc elect.c $(pkg-config --cflags --libs libzkelect)")
    ldd = _ok(_run(["ldd", str(d / "elect")], env=env), "ldd").stdout
    m = re.search(r"libzkelect\.so\.1 => (\S+)", ldd)
    assert m, ldd
    # /lib is /usr/lib on a merged-/usr system: compare the files.
    owner = _ok(_run(["dpkg", "-S", os.path.realpath(m.group(1))], env=env), "dpkg -S").stdout
    assert owner.startswith("libzkelect1:"), f"the example loads {m.group(1)}, owned by {owner}"
    proc = _ok(_run([str(d / "elect"), zk.connect_string], cwd=d, env=env, timeout=120), "the C example")
    _token(proc.stdout, "the C example")


def test_go_readme_example_in_a_fresh_module(debs, zk, tmp_path, build_dir):
    go = shutil.which("go") or "/usr/local/go/bin/go"
    assert os.path.exists(go), "go is not installed"
    assert (GO_SRC / "go.mod").exists(), f"the Go package installed no module source at {GO_SRC}"
    d = _outside(tmp_path, "goex")
    (d / "main.go").write_text(_readme_block(REPO / "bindings" / "README.md",
                                             r"<!-- go-example -->\s*```go\n(.*?)```"))
    (d / "go.mod").write_text(f"module example\n\ngo 1.21\n\nrequire {GO_MODULE} v1.0.0\n\n"
                              f"replace {GO_MODULE} => {GO_SRC}\n")
    env = _clean_env(tmp_path)
    # Go's cache does not key on pkg-config's answer, so a package compiled
    # against the build tree could stand in for the installed one and hide
    # a broken install. A CGO_CFLAGS of this run's own keys every cgo
    # package afresh (the module's, runtime/cgo, net): they are compiled
    # against the installed header and linked with the installed library,
    # while the plain Go of the standard library comes from the build's
    # cache (a fresh cache compiled all of it again: about 30 s of CPU).
    env.update(GOCACHE=str(build_dir / "bindings" / "go" / "gocache"),
               CGO_CFLAGS=f"-O2 -g -DZKELECT_INSTALLED_PROBE={os.getpid()}{time.time_ns()}",
               GOMODCACHE=str(tmp_path / "gomod"),
               GOPATH=str(tmp_path / "gopath"), GOFLAGS="-mod=mod", GOPROXY="off",
               GOTOOLCHAIN="local", CGO_ENABLED="1", ZK_HOSTS=zk.connect_string)
    proc = _ok(_run([go, "run", "."], cwd=d, env=env, timeout=900), "go run of the Go example")
    _token(proc.stdout, "the Go example")


def test_lua_readme_example_with_a_plain_require(debs, zk, tmp_path):
    d = _outside(tmp_path, "lua")
    (d / "example.lua").write_text(_readme_block(REPO / "bindings" / "README.md",
                                                 r"<!-- lua-example -->\s*```lua\n(.*?)```"))
    env = _clean_env(tmp_path)
    env["ZK_HOSTS"] = zk.connect_string
    where = _ok(_run(["lua5.4", "-e", 'print(package.searchpath("zkelect", package.cpath))'],
                     cwd=d, env=env), "package.searchpath").stdout.strip()
    assert where.startswith("/usr/lib/") and where.endswith("/lua/5.4/zkelect.so"), where
    proc = _ok(_run(["lua5.4", "example.lua"], cwd=d, env=env, timeout=120), "the Lua example")
    _token(proc.stdout, "the Lua example")


def test_luajit_readme_example_with_a_plain_require(debs, zk, tmp_path):
    d = _outside(tmp_path, "luajit")
    (d / "example.lua").write_text(_readme_block(REPO / "bindings" / "README.md",
                                                 r"<!-- luajit-example -->\s*```lua\n(.*?)```"))
    env = _clean_env(tmp_path)
    env["ZK_HOSTS"] = zk.connect_string
    where = _ok(_run(["luajit", "-e", 'print(package.searchpath("zkelect.ffi", package.path))'],
                     cwd=d, env=env), "package.searchpath").stdout.strip()
    assert where == "/usr/share/lua/5.1/zkelect/ffi.lua", where
    owner = _ok(_run(["dpkg", "-S", where], env=env), "dpkg -S").stdout
    assert owner.startswith("lua-zkelect:"), owner
    proc = _ok(_run(["luajit", "example.lua"], cwd=d, env=env, timeout=120), "the LuaJIT example")
    _token(proc.stdout, "the LuaJIT example")


def test_java_readme_example_with_the_system_jar_and_no_flag(debs, zk, tmp_path):
    d = _outside(tmp_path, "java")
    (d / "Example.java").write_text(_readme_block(REPO / "bindings" / "README.md",
                                                  r"<!-- java-example -->\s*```java\n(.*?)```"))
    env = _clean_env(tmp_path)
    env["ZK_HOSTS"] = zk.connect_string
    proc = _ok(_run(["java", "-cp", "/usr/share/java/zkelect.jar", "Example.java"], cwd=d, env=env,
                    timeout=300), "java -cp /usr/share/java/zkelect.jar Example.java")
    _token(proc.stdout, "the Java example")


def test_rust_readme_example_in_a_fresh_crate(debs, zk, tmp_path):
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    assert os.path.exists(cargo), "cargo is not installed"
    d = _outside(tmp_path, "rustex")
    (d / "src").mkdir()
    (d / "src" / "main.rs").write_text(_readme_block(REPO / "bindings" / "rust" / "README.md",
                                                     r"## Example.*?```rust\n(.*?)```"))
    (d / "Cargo.toml").write_text(
        '[package]\nname = "example"\nversion = "0.1.0"\nedition = "2021"\n\n'
        f'[dependencies]\nzkelect = {{ path = "{REPO / "bindings" / "rust" / "zkelect"}" }}\n')
    env = _clean_env(tmp_path)
    env.update(CARGO_TARGET_DIR=str(tmp_path / "target"), CARGO_TERM_COLOR="never")
    env["PATH"] = f"{os.path.dirname(cargo)}:{env.get('PATH', '')}"
    proc = _ok(_run([cargo, "run", "-q", "--", zk.connect_string], cwd=d, env=env,
                    timeout=900), "cargo run of the Rust example")
    _token(proc.stdout, "the Rust example")


@pytest.mark.parametrize("doc,block", [
    ("bindings/README.md", r"<!-- python-example -->\s*```python\n(.*?)```"),
    ("bindings/README.md", r"<!-- python-asyncio-example -->\s*```python\n(.*?)```"),
    ("README.md", r"## Other languages.*?```python\n(.*?)```")],
    ids=["bindings-readme", "bindings-readme-asyncio", "readme"])
def test_python_readme_example_with_a_plain_import(debs, zk, tmp_path, doc, block):
    d = _outside(tmp_path, "python")
    (d / "example.py").write_text(examples.with_hosts(_readme_block(REPO / doc, block),
                                                      zk.connect_string))
    env = _clean_env(tmp_path)
    env["ZK_HOSTS"] = zk.connect_string
    where = _ok(_run(["/usr/bin/python3", "-c", "import zkelect; print(zkelect.__file__)"],
                     cwd=d, env=env), "import zkelect").stdout.strip()
    assert where == "/usr/lib/python3/dist-packages/zkelect/__init__.py", where
    owner = _ok(_run(["dpkg", "-S", where], env=env), "dpkg -S").stdout
    assert owner.startswith("python3-zkelect:"), owner
    proc = _ok(_run(["/usr/bin/python3", "example.py"], cwd=d, env=env, timeout=120),
               f"the Python example of {doc}")
    _token(proc.stdout, f"the Python example of {doc}")


def test_the_fencing_sql_of_the_zkelect_package_guards_postgresql(debs):
    """docs/fencing.md's step 1 and 2 from the installed package: the file
    is where the docs say, installs into a database, and refuses a token
    older than one seen (SQLSTATE ZKE01)."""
    from bed.pgbed import PgServer
    sql = "/usr/share/zkelect/fencing.sql"
    listed = _ok(_run(["dpkg", "-L", "zkelect"], timeout=60), "dpkg -L zkelect").stdout.split()
    assert sql in listed, listed
    with PgServer() as pg:
        _ok(_run(pg.psql_argv("-f", sql), timeout=60), "psql -f fencing.sql")
        assert pg.psql("SELECT zkelect.fence('orders', 7)").stdout.strip() == "7"
        r = _run(pg.psql_argv("-c", "SELECT zkelect.fence('orders', 6)"), timeout=60)
        assert r.returncode != 0 and "older than 7" in r.stderr, r.stderr

"""The candidates of the cross-language tests: one small program per
language (tests/bindings/crosslang/, and bindings/rust/zkelect/examples/
candidate.rs) speaking one request/response protocol on stdin/stdout
(tests/bindings/test_crosslang.py describes it), built once per session
(the `crosslang_built` fixture of tests/conftest.py) and driven by
Candidate. Each takes the library's configuration keys as KEY=VALUE
arguments after HOSTS PATH ID: the plain-TCP election
(tests/bindings/test_crosslang.py) and the TLS + SASL one
(tests/sasl/test_secure_ensemble.py) run the same programs."""

import os
import resource
import subprocess
import time
from pathlib import Path

import pytest

from . import sh
from .lines import LinePump

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / "tests" / "bindings" / "crosslang"
BUILD_TIMEOUT = 900
REPLY_TIMEOUT = 40
ORDER = ["go", "java", "lua", "rust", "c", "python"]
ID = {name: f"{name}-\U0001F600-\u00e9" for name in ORDER}


def run(cmd, env, cwd=REPO):
    return sh.ok(sh.run(cmd, BUILD_TIMEOUT, cwd=cwd, env=env), " ".join(map(str, cmd)))


def build_all(env, build_dir, out, names=ORDER):
    """argv (without HOSTS PATH ID) and extra env for each language of
    names (ORDER's, and "luajit": the Lua candidate on the ffi module)."""
    sh.need("cc", "pkg-config")
    sh.need_library(build_dir)
    progs = {}

    if "c" in names:
        run(["sh", "-c", f"cc -std=c99 -Wall -Werror {HERE / 'candidate.c'} -o {out / 'candidate_c'} "
                          "$(pkg-config --cflags --libs libzkelect)"], env)
        progs["c"] = ([str(out / "candidate_c")], {})

    if "rust" in names:
        sh.need("cargo")
        cargo_env = dict(env, CARGO_TARGET_DIR=str(build_dir / "rust-target"))
        run(["cargo", "build", "--locked", "-q", "-p", "zkelect", "--example", "candidate"],
             cargo_env, cwd=REPO / "bindings" / "rust")
        progs["rust"] = ([str(build_dir / "rust-target" / "debug" / "examples" / "candidate")], {})

    if "go" in names:
        sh.need("go")
        # The build's own cache, as tests/bindings/test_go.py's: the same
        # library, and the standard library compiled once per run, not
        # again into $HOME's cache.
        go_env = dict(env, GOFLAGS="-mod=mod", CGO_ENABLED="1",
                      GOCACHE=str(build_dir / "bindings" / "go" / "gocache"))
        go_env.setdefault("GOTOOLCHAIN", "local")
        run(["go", "build", "-o", str(out / "candidate_go"), "."], go_env, cwd=HERE / "go")
        progs["go"] = ([str(out / "candidate_go")], {})

    if "java" in names:
        sh.need("swig", "javac", "java")
        java_out = build_dir / "script-bindings" / "java"
        run(["sh", str(REPO / "bindings" / "java" / "build.sh"), str(java_out)], env)
        jar = java_out / "zkelect.jar"
        run(["javac", "-d", str(out), "-cp", str(jar), str(HERE / "Candidate.java")], env)
        progs["java"] = (["java", f"-Djava.library.path={java_out}", "-cp", f"{jar}{os.pathsep}{out}",
                          "Candidate"], {})

    if "lua" in names:
        sh.need("swig", "lua5.4")
        lua_out = build_dir / "script-bindings" / "lua"
        run(["sh", str(REPO / "bindings" / "lua" / "build.sh"), str(lua_out)], env)
        progs["lua"] = (["lua5.4", str(HERE / "candidate.lua")], {"LUA_CPATH": f"{lua_out}/?.so;;"})

    if "luajit" in names:
        sh.need("luajit")
        progs["luajit"] = (["luajit", str(HERE / "candidate.lua")],
                           {"LUA_PATH": f"{REPO / 'bindings' / 'luajit'}/?.lua;;",
                            "ZKELECT_LIBRARY": str(sh.need_library(build_dir))})

    if "python" in names:
        # The package straight from the source tree: pure Python, nothing to
        # build; it loads libzkelect.so.1 through LD_LIBRARY_PATH like the others.
        pypath = os.pathsep.join(filter(None, [str(REPO / "bindings" / "python"),
                                               env.get("PYTHONPATH")]))
        progs["python"] = (["/usr/bin/python3", str(HERE / "candidate.py")], {"PYTHONPATH": pypath})
    return progs


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def session_builds(build_dir, out):
    """get(env, names=ORDER): build_all's programs into `out`, each
    language built once however often it is asked for (Java's build alone
    takes seconds)."""
    done = {}

    def get(env, names=ORDER):
        missing = [n for n in names if n not in done]
        if missing:
            done.update(build_all(env, build_dir, out, missing))
        return {n: done[n] for n in names}
    return get


class Candidate:
    """One candidate process; its replies come through the bed's LinePump,
    so every read has a deadline."""

    def __init__(self, name, argv, env, logdir):
        self.name = name
        self.err_path = logdir / f"{name}.stderr"
        self._err = open(self.err_path, "w")
        # In the log folder, without core files: a candidate killed by
        # SIGSEGV or SIGABRT leaves nothing behind (a JVM writes its
        # hs_err file to its working folder).
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, encoding="utf-8", bufsize=1,
                                     env=env, cwd=logdir, preexec_fn=no_core)
        self.lines = LinePump(self.proc.stdout)

    def _stderr(self):
        self._err.flush()
        return self.err_path.read_text()[-5000:]

    def line(self, timeout=REPLY_TIMEOUT):
        try:
            line = self.lines.next(timeout)
        except TimeoutError:
            pytest.fail(f"{self.name}: no reply in {timeout} s; stderr:\n{self._stderr()}",
                        pytrace=False)
        if line is None:
            pytest.fail(f"{self.name}: exited ({self.proc.wait(5)}); stderr:\n{self._stderr()}",
                        pytrace=False)
        return line

    def cmd(self, text, timeout=REPLY_TIMEOUT):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        return self.line(timeout)

    def events(self, ms):
        """Events from one `events MS` command (waits up to MS for the first)."""
        first = self.cmd(f"events {ms}", timeout=ms / 1000 + REPLY_TIMEOUT)
        out = []
        line = first
        while line != "END":
            assert line.startswith("EVENT "), f"{self.name}: {line!r}"
            out.append(line[len("EVENT "):])
            line = self.line()
        return out

    def events_until(self, last, ms=20000):
        """Events until one starting with `last`, bounded by a deadline."""
        got = []
        deadline = time.monotonic() + ms / 1000
        while not any(e.startswith(last) for e in got):
            left = int((deadline - time.monotonic()) * 1000)
            assert left > 0, f"{self.name}: no {last} in time; events: {got}"
            got += self.events(left)
        return got

    def quit(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._err.close()


def start_all(progs, test_env, hosts, zk_path, tmp_path, cands, keys=()):
    """One candidate of each language, in ORDER, appended to `cands` (so
    the caller's finally quits those started before a failure); `keys`:
    more configuration for each, as KEY=VALUE words."""
    for name in ORDER:
        argv, extra = progs[name]
        # The JVM decodes its arguments by the locale: a UTF-8 one.
        cands.append(Candidate(name, argv + [hosts, zk_path, ID[name], *keys],
                               dict(test_env, LC_ALL="C.UTF-8", **extra), tmp_path))
    for c in cands:
        assert c.line(60) == "READY", c.name


def quit_all(cands):
    """Every candidate says BYE and exits 0."""
    for c in cands:
        assert c.cmd("quit") == "BYE", c.name
        assert c.proc.wait(20) == 0, f"{c.name} exit code; stderr:\n{c._stderr()}"

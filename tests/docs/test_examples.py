"""Every runnable block of the docs (README.md, bindings/README.md,
bindings/rust/README.md, docs/*.md; tests/bed/examples.py finds them) runs
here against the build tree and the test ensemble, or says in the Markdown
why it does not; an example that stops working fails the build.

- C: built with the command its first comment names (else `cc FILE
  $(pkg-config --cflags --libs libzkelect)`), run with the ensemble as its
  first argument;
- Go: `go run` in a fresh module that requires the version the document
  names, with a replace to bindings/go;
- Rust: `cargo run` of a fresh crate with a path dependency on
  bindings/rust/zkelect (the target folder shared with test_rust.py);
- LuaJIT: `luajit` with bindings/luajit on LUA_PATH and the built library;
- shell: each command (a line, with its continuations) in `bash -e -o
  pipefail`, in a folder that looks like a checkout (the repository's
  folders linked, `build` the tested build), with the build's `zkelect`
  first on PATH and what bindings/README.md exports (the build's
  pkg-config and library paths, ZK_HOSTS). Java and Lua 5.4 programs run
  through the shell block that builds and runs them ("given").

In every block the docs' example ensembles (127.0.0.1:2181, zk1:2181, ...)
become the test ensemble, and a folder under /tmp one of this test's own
(two runs at once must not share /tmp/zkj); nothing else is changed. A
program that prints "leading with" in the docs must print it here.
"""

import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from bed import examples
from bed.sh import ok as _ok, run as _run

REPO = examples.REPO
FIRST_LINE_WITHIN = 30
GO_MODULE = "github.com/libzkelect/libzkelect/bindings/go"
ALL = examples.all_blocks()
RUNNABLE = [b for b in ALL if b.runnable]
GIVEN = {src for b in RUNNABLE for src in b.given().values()}
UNSAFE = re.compile(r"(^|[;&|(]\s*)(sudo|su|apt|apt-get|dpkg|systemctl|git|\./dev|"
                    r"cargo publish|meson (?:setup|configure|install)|rm -rf /)\b", re.M)
RUNNERS = {"c", "go", "rust", "luajit", "sh", "shell", "bash"}


def _consumed(b):
    return any(n in GIVEN for n in b.names)


TO_RUN = [b for b in RUNNABLE if not b.kind() and not _consumed(b)]


def test_every_runnable_block_runs_or_says_why_not():
    problems = []
    names = {n for b in ALL for n in b.names}
    for b in ALL:
        if not b.lang:
            problems.append(f"{b.where}: a fence without a language (`text` for a listing)")
        for m in b.marks:
            if m.startswith("tested by "):
                path = REPO / m[len("tested by "):].split()[0]
                if not path.is_file():
                    problems.append(f"{b.where}: {m}: no such file")
                elif b.doc.name not in path.read_text():
                    problems.append(f"{b.where}: {m}: that test does not name {b.doc.name}")
            elif m.startswith(("fragment", "output", "needs ", "interrupt ")):
                if not re.search(r"\(.+\)$", m):
                    problems.append(f"{b.where}: '{m}' gives no reason in parentheses")
            elif m.startswith("given "):
                g = re.fullmatch(r"given (\S+)=(\S+) \(.+\)", m)
                if not g:
                    problems.append(f"{b.where}: '{m}' is not `given FILE=SOURCE (why)`")
                elif g.group(2) != "job" and g.group(2) not in names:
                    problems.append(f"{b.where}: '{m}': no block is named {g.group(2)}")
            else:
                problems.append(f"{b.where}: unknown mark '{m}'")
        if b.runnable and not b.kind() and not _consumed(b) and b.runtime not in RUNNERS:
            problems.append(f"{b.where}: a {b.runtime} block that nothing runs: mark it or "
                            "give it to a shell block")
    assert not problems, "\n".join(problems)
    assert len(TO_RUN) >= 10, [b.where for b in TO_RUN]


@pytest.fixture
def env(test_env, build_dir, zk):
    e = dict(test_env)
    e["PATH"] = f"{build_dir / 'tools'}:{e.get('PATH', '')}"
    e["ZK_HOSTS"] = zk.connect_string
    e["CGO_ENABLED"] = "1"
    e.setdefault("GOTOOLCHAIN", "local")
    e["GOFLAGS"] = "-mod=mod"
    e["GOPROXY"] = "off"
    # Shared with tests/bindings/test_go.py and test_rust.py: compiled once.
    e["GOCACHE"] = str(build_dir / "bindings" / "go" / "gocache")
    e["CARGO_TARGET_DIR"] = str(build_dir / "rust-target")
    e["CARGO_TERM_COLOR"] = "never"
    return e


def _checkout(tmp_path, build_dir):
    """A folder that looks like a checkout whose build/ is the tested build."""
    d = tmp_path / "checkout"
    d.mkdir()
    for p in REPO.iterdir():
        if p.name not in ("build", ".git"):
            (d / p.name).symlink_to(p)
    (d / "build").symlink_to(build_dir)
    return d


def _given(block, folder):
    for name, src in block.given().items():
        f = folder / name
        if src == "job":
            f.write_text(f"#!/bin/sh\necho {name} ran with token $ZKELECT_TOKEN\n")
            f.chmod(0o755)
        else:
            f.write_text(examples.named(src).text)


def _commands(text):
    """The block's commands: its lines, a trailing backslash joining the next."""
    out, cur = [], ""
    for line in text.splitlines():
        cur += line + "\n"
        if line.endswith("\\"):
            continue
        if cur.strip() and not cur.strip().startswith("#"):
            out.append(cur)
        cur = ""
    return out


def _interrupted(cmd, cwd, env):
    """cmd, which runs until interrupted: SIGINT once it printed a line."""
    out_f, err_f = cwd.parent / "interrupted.out", cwd.parent / "interrupted.err"
    with open(out_f, "w") as out, open(err_f, "w") as err:
        p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", cmd], cwd=cwd, env=env,
                             stdout=out, stderr=err, start_new_session=True)
    deadline = time.monotonic() + FIRST_LINE_WITHIN
    while p.poll() is None and "\n" not in out_f.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    early = p.poll()
    if early is None:
        os.killpg(p.pid, signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        pytest.fail(f"{cmd}: still running 30 s after SIGINT:\n{out_f.read_text()}\n"
                    f"{err_f.read_text()}", pytrace=False)
    out, err = out_f.read_text(), err_f.read_text()
    if early is not None:
        pytest.fail(f"{cmd}: ended by itself (exit {early}) though marked to run until "
                    f"interrupted:\n{out}\n{err}", pytrace=False)
    assert out.strip(), f"{cmd}: printed nothing in {FIRST_LINE_WITHIN} s\n{err}"
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _sh(block, text, env, tmp_path, build_dir):
    cwd = _checkout(tmp_path, build_dir)
    _given(block, cwd)
    outs = []
    for cmd in _commands(text):
        # An unmarked block runs as root under CI: what changes the machine
        # or the repository, or starts ./dev test again, is refused unrun.
        if UNSAFE.search(cmd):
            pytest.fail(f"{block.where}: `{cmd.strip()}` is not run here: mark the block "
                        "(tests/bed/examples.py says how)", pytrace=False)
        if any(cmd.lstrip().startswith(i) for i in block.interrupted()):
            proc = _interrupted(cmd, cwd, env)
        else:
            proc = _run(["bash", "-e", "-o", "pipefail", "-c", cmd], cwd=cwd, env=env)
        outs.append(_ok(proc, f"{block.where}: {cmd.strip()}").stdout)
    return "".join(outs)


def _c(block, text, env, tmp_path, zk):
    m = re.match(r"\s*/\*\s*(\S+\.c):\s*(.*?)\s*\*/", text)
    name, build = (m.group(1), m.group(2)) if m else (
        "example.c", "cc example.c $(pkg-config --cflags --libs libzkelect)")
    (tmp_path / name).write_text(text)
    _ok(_run(["bash", "-e", "-c", f"{build} -o example"], cwd=tmp_path, env=env), build)
    return _ok(_run(["./example", zk.connect_string], cwd=tmp_path, env=env, timeout=120),
               f"{block.where}: the program").stdout


def _go(block, text, env, tmp_path):
    m = re.search(rf"require {re.escape(GO_MODULE)} (v[\w.-]+)", block.doc.read_text())
    (tmp_path / "main.go").write_text(text)
    (tmp_path / "go.mod").write_text(
        f"module example\n\ngo 1.21\n\nrequire {GO_MODULE} {m.group(1) if m else 'v0.0.0'}\n\n"
        f"replace {GO_MODULE} => {REPO / 'bindings' / 'go'}\n")
    return _ok(_run(["go", "run", "."], cwd=tmp_path, env=env), f"{block.where}: go run").stdout


def _rust(block, text, env, tmp_path, zk):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.rs").write_text(text)
    (tmp_path / "Cargo.toml").write_text(
        '[package]\nname = "example"\nversion = "0.1.0"\nedition = "2021"\n\n'
        f'[dependencies]\nzkelect = {{ path = "{REPO / "bindings" / "rust" / "zkelect"}" }}\n')
    # The workspace's lock file: the same pkg-config crate, offline.
    shutil.copy(REPO / "bindings" / "rust" / "Cargo.lock", tmp_path / "Cargo.lock")
    return _ok(_run(["cargo", "run", "-q", "--offline", "--", zk.connect_string], cwd=tmp_path,
                    env=env), f"{block.where}: cargo run").stdout


def _luajit(block, text, env, tmp_path, build_dir):
    (tmp_path / "example.lua").write_text(text)
    # What bindings/README.md sets to run the module from a checkout.
    env = dict(env, LUA_PATH=f"{REPO / 'bindings' / 'luajit'}/?.lua;;",
               ZKELECT_LIBRARY=str(build_dir / "capi" / "libzkelect.so.1"))
    return _ok(_run(["luajit", "example.lua"], cwd=tmp_path, env=env, timeout=120),
               f"{block.where}: luajit").stdout


@pytest.mark.parametrize("block", TO_RUN, ids=[b.where for b in TO_RUN])
def test_example_runs(block, env, zk, tmp_path, build_dir):
    text = examples.with_hosts(block.text, zk.connect_string)
    text = text.replace("/tmp/", f"{tmp_path}/tmp/")
    (tmp_path / "tmp").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    rt = block.runtime
    if rt in ("sh", "shell", "bash"):
        out = _sh(block, text, env, work, build_dir)
    elif rt == "c":
        out = _c(block, text, env, work, zk)
    elif rt == "go":
        out = _go(block, text, env, work)
    elif rt == "rust":
        out = _rust(block, text, env, work, zk)
    elif rt == "luajit":
        out = _luajit(block, text, env, work, build_dir)
    else:
        pytest.fail(f"{block.where}: no runner for {rt}", pytrace=False)
    said = block.text + "".join(examples.named(s).text for s in block.given().values() if s != "job")
    if "leading with" in said:
        assert re.search(r"leading with (fencing )?token [1-9]\d*$", out, re.M), (block.where, out)

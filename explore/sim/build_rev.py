#!/usr/bin/env python3
"""Builds today's simulator (explore/sim/sim.cpp, world.cpp) around the engine
of another commit: `./dev explore --sim --rev REV`. The engine's sources
(cxx/) and headers come from REV's worktree under build-rev/; everything
else (the simulator's own files, flags, the ZooKeeper client library) from
today's build, whose compile_commands.json holds the simulator's compile
lines. Only REV's cxx/ is taken, so a REV from before the simulator moved
out of tests/ (issue 53) builds as well as a later one. It works for a
commit whose engine has what the simulator calls (the ZkPort interface,
Election::begin_transfer, Client::sim_turn ...): 9cb89af has; one much older
fails to compile, and says so.

    build_rev.py BUILD_DIR REV_SOURCE_DIR OUT_DIR    (writes OUT_DIR/zkelect-sim)
"""
import json
import os
import re
import shlex
import subprocess
import sys


def engine_sources(rev_src):
    """REV's engine units: cxx/*.cpp, or cxx/ROOM/*.cpp."""
    top = os.path.join(rev_src, "cxx")
    return sorted(os.path.join(d, n) for d, _, names in os.walk(top)
                  for n in names if n.endswith(".cpp"))


def source_root(build):
    """The tree the build was configured from (meson-info), else its parent."""
    try:
        info = json.load(open(os.path.join(build, "meson-info", "meson-info.json")))
        return os.path.realpath(info["directories"]["source"])
    except (OSError, KeyError, ValueError):
        return os.path.realpath(os.path.dirname(build))


UNITY_INCLUDE = re.compile(r'^#include\s*[<"]([^>"]+)[>"]', re.M)


def sources_of(build, entry):
    """The source files one compile line compiles. The simulator builds as
    unity (explore/sim/meson.build), so a line's file is mostly a generated
    unity file in the build tree that includes today's sources by path:
    each of those is taken apart, or it would compile today's engine."""
    path = os.path.realpath(os.path.join(build, entry["file"]))
    if not path.startswith(os.path.realpath(build) + os.sep):
        return [path]
    return [os.path.realpath(os.path.join(os.path.dirname(path), inc))
            for inc in UNITY_INCLUDE.findall(open(path).read())]


def main():
    build, rev_src, out = (os.path.abspath(a) for a in sys.argv[1:4])
    root = source_root(build)
    engine_dir = os.path.join(root, "cxx") + os.sep
    cc = json.load(open(os.path.join(build, "compile_commands.json")))
    units = [c for c in cc if "zkelect-sim.p" in c["output"]]
    if not units:
        sys.exit(f"build_rev.py: no simulator in {build}/compile_commands.json")
    os.makedirs(out, exist_ok=True)
    objs, done, engine_cmd = [], set(), None
    # REV's engine folders (cxx/ and, since issue 53, its rooms), in place of
    # today's on the include path: a flat REV and a roomed one both build.
    rev_inc = [f"-I{d}" for d, _, names in sorted(os.walk(os.path.join(rev_src, "cxx")))
               if any(n.endswith(".h") for n in names)]
    for c in units:
        args, cmd, skip = shlex.split(c["command"]), [], False
        rev_dirs = rev_inc
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-MQ", "-MF", "-o"):
                skip = True
                continue
            if a in ("-MD", "-c") or a == c["file"]:
                continue
            if a == "-I../cxx" or a.startswith("-I../cxx/"):
                if rev_dirs:
                    cmd += rev_dirs
                    rev_dirs = []
                continue
            if a.startswith("-I") and not a.startswith("-I/"):
                a = f"-I{os.path.join(build, a[2:])}"
            cmd.append(a)
        for today in sources_of(build, c):
            # The engine (cxx/) is REV's; the rest (the simulator) today's,
            # wherever today's tree keeps it.
            engine = today.startswith(engine_dir)
            src = os.path.join(rev_src, os.path.relpath(today, root)) if engine else today
            if engine:
                engine_cmd = cmd  # REV's own files (below) compile with it too
            if not os.path.exists(src):
                continue  # an engine file added or moved since REV
            obj = os.path.join(out, os.path.basename(src) + ".o")
            subprocess.run(cmd + ["-w", "-c", src, "-o", obj], check=True, cwd=build)
            objs.append(obj)
            done.add(os.path.realpath(src))
    # An engine file REV has that today's build does not (renamed or removed
    # since): compiled with an engine file's line.
    for path in engine_sources(rev_src):
        src = os.path.realpath(path)
        if src in done or engine_cmd is None:
            continue
        obj = os.path.join(out, os.path.basename(src) + ".o")
        subprocess.run(engine_cmd + ["-w", "-c", src, "-o", obj], check=True, cwd=build)
        objs.append(obj)
    exe = os.path.join(out, "zkelect-sim")
    subprocess.run(["c++", "-o", exe, *objs, "-Wl,--start-group",
                    os.path.join(build, "zkclient", "libzkclient.a"), "-lssl", "-lcrypto",
                    "-lsasl2", "-lm", "-pthread", "-Wl,--end-group"], check=True)
    print(exe)


if __name__ == "__main__":
    main()

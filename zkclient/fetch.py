#!/usr/bin/python3
"""Fetch and cache the source of ZooKeeper's C client for -Dzookeeper=bundled
(stdlib only; nothing of it goes into this repository).

    fetch.py dir        # the cached tree, fetched first when missing; its
                        # path on stdout, why not on stderr (exit 1)
    fetch.py dir --offline   # the cached tree or exit 1; never fetches
    fetch.py version    # the Debian version of the tree `dir --offline`
                        # answers (debian/rules: Built-Using), or exit 1

ZKELECT_ZKCLIENT_DIR names a tree of this layout to use instead of the
cache; then nothing is fetched. The Debian packages' build sets it: a
package build cannot download, so ./dev package copies the cached tree into
the source tree it builds (zookeeper-client/) first.

The source is Debian's own: the package `zookeeper` of the suite apt knows
(Debian 12: 3.8.0, the release of the system's libzookeeper-mt and of the
servers the tests run), fetched by `apt-get source`, which needs a deb-src
line (./dev adds /etc/apt/sources.list.d/zkelect-src.sources). Debian's
patches are applied by `dpkg-source -x`. The protocol's C code is not in the
source package: it is generated from zookeeper.jute by ZooKeeper's jute
compiler, which Debian's libzookeeper-java ships (/usr/share/java/
zookeeper-jute.jar, installed with the server), else the same release's
org.apache.zookeeper:zookeeper-jute from Maven Central.

The cache, $XDG_CACHE_HOME/zkelect/zkclient/<upstream version> (default
~/.cache/zkelect/zkclient/...), holds only what the build reads:

    include/zookeeper/   the public headers, the generated zookeeper.jute.h
    src/                 the client's .c files and private headers
    generated/           zookeeper.jute.c
    LICENSE NOTICE SOURCE   (SOURCE: which Debian version it came from)

A fetch is bounded in time (FETCH_TIMEOUT) and serialised by a lock file, so
the three build trees ./dev configures fetch once.
"""

import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tempfile

# The release whose protocol and behaviour the engine was written and tested
# against; another upstream release is a deliberate change, not an accident
# of what the mirror has today.
UPSTREAM = "3.8.0"
FETCH_TIMEOUT = 300
DEBIAN_JUTE_JAR = "/usr/share/java/zookeeper-jute.jar"
CLIENT = "zookeeper-client/zookeeper-client-c"
JUTE = "zookeeper-jute/src/main/resources/zookeeper.jute"
SOURCES = ["zookeeper.c", "recordio.c", "zk_log.c", "zk_hashtable.c", "addrvec.c",
           "mt_adaptor.c", "zk_sasl.c", "hashtable/hashtable.c", "hashtable/hashtable_itr.c"]
PUBLIC = ["zookeeper.h", "zookeeper_log.h", "zookeeper_version.h", "proto.h", "recordio.h"]


class FetchError(Exception):
    pass


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "zkelect", "zkclient", UPSTREAM)


def complete(d):
    return os.path.isfile(os.path.join(d, "SOURCE"))


def run(cmd, cwd, what, timeout):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
    except FileNotFoundError:
        raise FetchError(f"{what}: {cmd[0]} is not installed")
    except subprocess.TimeoutExpired:
        raise FetchError(f"{what}: did not finish within {timeout:.0f} s")
    if p.returncode != 0:
        tail = "\n".join(p.stdout.strip().splitlines()[-8:])
        raise FetchError(f"{what} failed (exit {p.returncode}):\n{tail}")
    return p.stdout


def debian_version():
    try:
        out = run(["apt-cache", "showsrc", "zookeeper"], None, "apt-cache showsrc zookeeper", 60)
    except FetchError as e:
        out = str(e)
    versions = [l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Version:")]
    if not versions:
        raise FetchError(
            "apt knows no source package `zookeeper` (" + out.strip().splitlines()[-1] + "): "
            "add a deb-src line for this Debian suite "
            "(./dev does it: /etc/apt/sources.list.d/zkelect-src.sources) and run apt-get update, "
            "or build against the system's client with -Dzookeeper=system")
    fit = [v for v in versions if v.split("-")[0] == UPSTREAM]
    if not fit:
        raise FetchError(f"apt offers zookeeper {', '.join(versions)}, not {UPSTREAM} "
                         "(the release this build pins): use -Dzookeeper=system")
    return fit[0]


def jute_compile(jute, out_dir, work, deadline_s):
    jar = DEBIAN_JUTE_JAR if os.path.isfile(DEBIAN_JUTE_JAR) else None
    if jar is None:
        # Maven Central, the same release; dependency:copy puts it in work.
        run(["mvn", "-q", "-B", "dependency:copy",
             f"-Dartifact=org.apache.zookeeper:zookeeper-jute:{UPSTREAM}",
             f"-DoutputDirectory={work}"], work, "mvn (zookeeper-jute from Maven Central)", deadline_s)
        jar = os.path.join(work, f"zookeeper-jute-{UPSTREAM}.jar")
    run(["java", "-cp", jar, "org.apache.jute.compiler.generated.Rcc", "-l", "c", jute],
        out_dir, "the jute compiler", 120)


def fetch(dest):
    with tempfile.TemporaryDirectory(prefix="zkclient-") as work:
        ver = debian_version()
        run(["apt-get", "source", "--download-only", f"zookeeper={ver}"], work,
            f"apt-get source zookeeper={ver}", FETCH_TIMEOUT)
        dsc = glob.glob(os.path.join(work, "zookeeper_*.dsc"))
        if not dsc:
            raise FetchError("apt-get source left no .dsc")
        run(["dpkg-source", "--no-check", "-x", dsc[0], "src"], work, "dpkg-source -x", 120)
        top = os.path.join(work, "src")
        client = os.path.join(top, CLIENT)
        tmp = dest + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        inc = os.path.join(tmp, "include", "zookeeper")
        os.makedirs(inc)
        os.makedirs(os.path.join(tmp, "src", "hashtable"))
        os.makedirs(os.path.join(tmp, "generated"))
        for h in PUBLIC:
            shutil.copy(os.path.join(client, "include", h), inc)
        for f in glob.glob(os.path.join(client, "src", "*.[ch]")) + \
                glob.glob(os.path.join(client, "src", "hashtable", "*.[ch]")):
            shutil.copy(f, os.path.join(tmp, "src", os.path.relpath(f, os.path.join(client, "src"))))
        for s in SOURCES:
            if not os.path.isfile(os.path.join(tmp, "src", s)):
                raise FetchError(f"the source package has no {CLIENT}/src/{s}")
        gen = os.path.join(work, "gen")
        os.makedirs(gen)
        jute_compile(os.path.join(top, JUTE), gen, work, FETCH_TIMEOUT)
        shutil.copy(os.path.join(gen, "zookeeper.jute.h"), inc)
        shutil.copy(os.path.join(gen, "zookeeper.jute.c"), os.path.join(tmp, "generated"))
        shutil.copy(os.path.join(client, "LICENSE"), os.path.join(tmp, "LICENSE"))
        shutil.copy(os.path.join(client, "NOTICE.txt"), os.path.join(tmp, "NOTICE"))
        with open(os.path.join(tmp, "SOURCE"), "w") as f:
            f.write(f"Debian source package zookeeper {ver}, {CLIENT}; "
                    "zookeeper.jute.[ch] generated by its jute compiler\n")
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)


def debian_version_of(tree):
    """The Debian version SOURCE names, or None."""
    try:
        with open(os.path.join(tree, "SOURCE")) as f:
            words = f.read().split()
    except OSError:
        return None
    # "Debian source package zookeeper <version>, ..."
    if len(words) > 4 and words[:4] == ["Debian", "source", "package", "zookeeper"]:
        return words[4].rstrip(",")
    return None


def main(argv):
    if argv == ["version"]:
        tree = os.environ.get("ZKELECT_ZKCLIENT_DIR") or cache_dir()
        ver = debian_version_of(tree)
        if ver is None:
            print(f"no fetched ZooKeeper C client source in {tree}", file=sys.stderr)
            return 1
        print(ver)
        return 0
    if len(argv) < 1 or argv[0] != "dir" or argv[1:] not in ([], ["--offline"]):
        print(__doc__, file=sys.stderr)
        return 2
    given = os.environ.get("ZKELECT_ZKCLIENT_DIR")
    if given:
        if not complete(given):
            print(f"ZKELECT_ZKCLIENT_DIR={given} holds no fetched ZooKeeper C client source "
                  "(no SOURCE file): ./dev package copies it there", file=sys.stderr)
            return 1
        print(os.path.abspath(given))
        return 0
    dest = cache_dir()
    if not complete(dest):
        if argv[1:] == ["--offline"]:
            print(f"ZooKeeper's C client source is not cached in {dest}", file=sys.stderr)
            return 1
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not complete(dest):
                try:
                    fetch(dest)
                except FetchError as e:
                    print(f"cannot fetch ZooKeeper's C client source: {e}", file=sys.stderr)
                    return 1
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

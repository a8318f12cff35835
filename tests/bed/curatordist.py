#!/usr/bin/python3
"""Which Apache Curator the interop tests run beside libzkelect: Debian's
package (libcurator-recipes-java, 5.4.0), or a release's jars from Maven
Central, fetched once and cached the way bed/zkdist.py caches ZooKeeper
servers (its Maven code, lock and failure handling; stdlib only).

    from bed import curatordist
    curatordist.versions()            # ["debian", "5.9.0"]: the interop runs
    curatordist.classpath("5.9.0")    # fetches on first use; ZkDistError if it cannot
    curatordist.classpath("debian")   # Debian's jars (their manifests name the rest)

Command line (`./dev test` fetches what the tests will run before they start):

    curatordist.py fetch [VERSION...] # default: versions()
    curatordist.py classpath VERSION  # for bench/participants/curator (CURATOR_CLASSPATH)
    curatordist.py versions           # one a line

A fetched release lives in $ZKELECT_CURATOR_CACHE/<version>/lib (default
$XDG_CACHE_HOME/zkelect/curator, else ~/.cache/zkelect/curator), never in
the source tree: the runtime dependencies of
org.apache.curator:curator-recipes as Maven resolves them (curator-framework,
curator-client, the ZooKeeper client that release was built with, guava and
its pieces, slf4j-api, ...) plus slf4j-simple at the resolved slf4j-api's
version. Netty's tcnative (prebuilt BoringSSL for five platforms) and any
logback or log4j are left out: the participant's client uses no TLS and
logs through slf4j-simple, as Debian's does. The two class paths share no
jar: a fetched release's never names /usr/share/java, and Debian's jars
name only each other. Each Maven run is bounded by
$ZKELECT_ZK_FETCH_TIMEOUT seconds (default 600), as zkdist's.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

try:
    from bed import zkdist
except ImportError:     # run as a script: tests/bed/curatordist.py
    import zkdist

__all__ = ["DEBIAN", "DEBIAN_RELEASE", "NEWEST", "versions", "normalize", "classpath", "fetch",
           "is_cached", "cache_root"]

DEBIAN = "debian"
# bookworm's libcurator-recipes-java; its jars' manifests name
# curator-framework, curator-client, guava, slf4j-api and Debian's
# ZooKeeper 3.8.0 client.
DEBIAN_RELEASE = "5.4.0"
DEBIAN_CLASSPATH = "/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-simple.jar"
# The newest curator-recipes Maven Central served here with all its
# dependencies (tried 2026-11: 5.9.0, with the ZooKeeper 3.9.3 client).
NEWEST = "5.9.0"

ENV_ALSO = "ZKELECT_CURATOR_ALSO"
_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>zkelect.bed</groupId>
  <artifactId>curator-{version}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.curator</groupId>
      <artifactId>curator-recipes</artifactId>
      <version>{version}</version>
{exclusions}    </dependency>{extra}
  </dependencies>
</project>
"""


def cache_root():
    return zkdist.cache_dir("ZKELECT_CURATOR_CACHE", "curator")


def normalize(version):
    v = str(version).strip()
    if v.lower() == DEBIAN:
        return DEBIAN
    if not _RELEASE.match(v):
        raise zkdist.ZkDistError(f"Curator version {v!r}: expected 'debian' or a release such as "
                                 f"{NEWEST}")
    return v


def versions():
    """The Curators the interop test runs beside libzkelect: Debian's, then
    $ZKELECT_CURATOR_ALSO (comma-separated; "" for none), else NEWEST."""
    env = os.environ.get(ENV_ALSO)
    also = [NEWEST] if env is None else [normalize(v) for v in env.split(",") if v.strip()]
    return list(dict.fromkeys([DEBIAN] + also))


def _dir(version):
    return os.path.join(cache_root(), version)


def is_cached(version):
    v = normalize(version)
    return v == DEBIAN or os.path.exists(os.path.join(_dir(v), "complete"))


def fetch(version, timeout=zkdist.FETCH_TIMEOUT):
    """Fetch `version`'s jars into the cache unless they are there; returns
    the lib directory. ZkDistError (with Maven's reason) when it cannot be
    had."""
    v = normalize(version)
    if v == DEBIAN:
        return "/usr/share/java"
    try:
        return zkdist.maven_fetch(f"Curator {v}", cache_root(), v,
                                  lambda extra: _POM.format(version=v, extra=extra, exclusions=zkdist.MAVEN_EXCLUSIONS),
                                  f"curator-recipes-{v}.jar", timeout)
    except zkdist.ZkDistError as e:
        if str(e).startswith("Curator "):
            raise
        raise zkdist.ZkDistError(f"Curator {v}: {e}") from None     # mvn missing, say for what


def classpath(version, fetch_missing=True):
    """The javac/java -cp of the Curator participant's library (fetched on
    first use unless fetch_missing is false)."""
    v = normalize(version)
    if v == DEBIAN:
        if not os.path.exists("/usr/share/java/curator-recipes.jar"):
            raise zkdist.ZkDistError("Debian's Curator is not installed "
                                     "(apt-get install libcurator-recipes-java; ./dev test installs it)")
        return DEBIAN_CLASSPATH
    if not is_cached(v):
        if not fetch_missing:
            raise zkdist.ZkDistError(f"Curator {v} is not in {_dir(v)} "
                                     f"(python3 tests/bed/curatordist.py fetch {v})")
        fetch(v)
    lib = os.path.join(_dir(v), "lib")
    with open(os.path.join(_dir(v), "complete")) as f:
        return ":".join(os.path.join(lib, n) for n in f.read().split())


def main(argv=None):
    ap = argparse.ArgumentParser(prog="curatordist.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fetch", help="fetch and cache Curator releases (default: versions)")
    p.add_argument("versions", nargs="*")
    p = sub.add_parser("classpath")
    p.add_argument("version")
    sub.add_parser("versions")
    a = ap.parse_args(argv)
    try:
        if a.command == "versions":
            print("\n".join(versions()))
        elif a.command == "classpath":
            print(classpath(a.version))
        elif a.command == "fetch":
            rc = 0
            for v in a.versions or versions():
                try:
                    cached = is_cached(v)
                    where = fetch(v)
                    print(f"Curator {normalize(v)}: {where}{' (cached)' if cached else ''}", flush=True)
                except zkdist.ZkDistError as e:
                    print(f"curatordist: {e}", file=sys.stderr, flush=True)
                    rc = 1
            return rc
        return 0
    except zkdist.ZkDistError as e:
        print(f"curatordist: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

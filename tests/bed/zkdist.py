#!/usr/bin/python3
"""Which ZooKeeper server the test bed runs: Debian's package, or the jars
of a release from Maven Central, fetched once and cached (stdlib only).

    from bed import zkdist
    zkdist.default_version()      # $ZKELECT_ZK_VERSION, else "debian"
    zkdist.normalize("3.9")       # "3.9.5": a line names its newest release here
    zkdist.classpath("3.9.5")     # fetches on first use; ZkDistError if it cannot
    zkdist.MATRIX                 # every version `./dev test --zk-matrix` runs

Command line (`./dev test` fetches what it will run before the tests start):

    zkdist.py fetch [VERSION...]  # default: the versions of the matrix
    zkdist.py classpath VERSION
    zkdist.py matrix              # the matrix, one version a line
    zkdist.py newest              # the newest release (3.9's)

A fetched release lives in $ZKELECT_ZK_CACHE/<version>/lib (default
$XDG_CACHE_HOME/zkelect/zookeeper, else ~/.cache/zkelect/zookeeper), never in
the source tree. It is the runtime dependencies of
org.apache.zookeeper:zookeeper as Maven resolves them (zookeeper-jute,
netty, slf4j-api, commons-io, audience-annotations, ...), copied by `mvn
dependency:copy-dependencies` from a throwaway pom in a temporary
directory, plus what the server needs that the pom only names as
"provided" (3.6 on: metrics-core, snappy-java; at the versions of the
release's parent pom), plus slf4j-simple at the version of the resolved
slf4j-api (the servers log to their server.log, which the bed reads;
logback, which 3.8 names, is left out). Netty's tcnative
(prebuilt BoringSSL for five platforms) is left out: the bed's TLS servers
use the JDK's provider. A fetch is serialised by a lock file, so
concurrent test processes fetch once.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

__all__ = ["ZkDistError", "DEBIAN", "LINES", "MATRIX", "NEWEST", "default_version", "also_versions",
           "normalize", "classpath", "fetch", "is_cached", "line_of", "cache_root", "maven_fetch"]

DEBIAN = "debian"
# Debian's package (bookworm): /usr/share/java/zookeeper.jar is 3.8.0.
DEBIAN_RELEASE = "3.8.0"
DEBIAN_CLASSPATH = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
# Debian's zookeeper.jar names only part of what its Netty server needs.
DEBIAN_TLS_CLASSPATH = ":/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar" \
    ":/usr/share/java/netty-transport-native-unix-common.jar"

# The newest release of each line that Maven Central served here with all
# its dependencies (tried 2026-11: 3.8.7's parent pom is not served, so
# 3.8.7 cannot be resolved; 3.9.6 is not served at all).
LINES = {
    "3.5": "3.5.10",
    "3.6": "3.6.4",
    "3.7": "3.7.2",
    "3.8": "3.8.6",
    "3.9": "3.9.5",
}
NEWEST = LINES["3.9"]
# `./dev test --zk-matrix`: Debian's 3.8.0 first, then newest first.
MATRIX = [DEBIAN, LINES["3.9"], LINES["3.8"], LINES["3.7"], LINES["3.6"], LINES["3.5"]]

ENV_VERSION = "ZKELECT_ZK_VERSION"
FETCH_TIMEOUT = float(os.environ.get("ZKELECT_ZK_FETCH_TIMEOUT", "600"))
_RELEASE = re.compile(r"^3\.\d+\.\d+$")
_FAILED = {}        # (cache root, version) -> the error of this process' fetch of it


class ZkDistError(RuntimeError):
    pass


def cache_dir(env_var, name):
    """$env_var if set, else ~/.cache/zkelect/<name> (or under $XDG_CACHE_HOME)."""
    d = os.environ.get(env_var)
    if d:
        return os.path.abspath(d)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "zkelect", name)


def cache_root():
    return cache_dir("ZKELECT_ZK_CACHE", "zookeeper")


def default_version():
    """The version a test run uses when nothing else is asked:
    $ZKELECT_ZK_VERSION, else Debian's package."""
    return normalize(os.environ.get(ENV_VERSION) or DEBIAN)


def also_versions():
    """The versions that tests marked zk_versions run against besides the
    run's (tests/conftest.py): $ZKELECT_ZK_ALSO (comma-separated; "" for
    none), else the newest when the run's version is Debian's."""
    run = default_version()
    env = os.environ.get("ZKELECT_ZK_ALSO")
    if env is None:
        also = [NEWEST] if run == DEBIAN else []
    else:
        also = [normalize(v) for v in env.split(",") if v.strip()]
    return [v for v in dict.fromkeys(also) if v != run]


def normalize(version):
    """"debian", or a release "3.X.Y"; a line "3.X" names its newest release
    in LINES; None or "" is the default version."""
    if version is None or str(version).strip() == "":
        return default_version()
    v = str(version).strip()
    if v.lower() == DEBIAN:
        return DEBIAN
    if v in LINES:
        return LINES[v]
    if not _RELEASE.match(v):
        raise ZkDistError(f"ZooKeeper version {v!r}: expected 'debian', a line such as 3.9, "
                          f"or a release such as 3.9.5")
    return v


def line_of(version):
    """(major, minor) of the server that `version` runs."""
    v = normalize(version)
    rel = DEBIAN_RELEASE if v == DEBIAN else v
    major, minor, _ = rel.split(".")
    return int(major), int(minor)


def _dir(version):
    return os.path.join(cache_root(), version)


def _jars(version):
    return sorted(glob.glob(os.path.join(_dir(version), "lib", "*.jar")))


def is_cached(version):
    v = normalize(version)
    return v == DEBIAN or os.path.exists(os.path.join(_dir(v), "complete"))


def classpath(version, tls=False, fetch_missing=True):
    """The java -cp of `version`'s QuorumPeerMain (fetched on first use)."""
    v = normalize(version)
    if v == DEBIAN:
        if not os.path.exists("/usr/share/java/zookeeper.jar"):
            raise ZkDistError("Debian's ZooKeeper is not installed (apt-get install zookeeper; "
                              "./dev build installs it)")
        return DEBIAN_CLASSPATH + (DEBIAN_TLS_CLASSPATH if tls else "")
    if not is_cached(v):
        if not fetch_missing:
            raise ZkDistError(f"ZooKeeper {v} is not in {_dir(v)} (python3 tests/bed/zkdist.py fetch {v})")
        fetch(v)
    return ":".join(_jars(v))


@contextlib.contextmanager
def _lock(root, version):
    os.makedirs(root, exist_ok=True)
    fd = os.open(os.path.join(root, f".{version}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# Left out of every Maven fetch here: native TLS for Netty, and logging
# back-ends other than slf4j-simple (added by maven_fetch).
MAVEN_EXCLUSIONS = """      <exclusions>
        <exclusion><groupId>io.netty</groupId><artifactId>netty-tcnative-boringssl-static</artifactId></exclusion>
        <exclusion><groupId>io.netty</groupId><artifactId>netty-tcnative-classes</artifactId></exclusion>
        <exclusion><groupId>ch.qos.logback</groupId><artifactId>*</artifactId></exclusion>
        <exclusion><groupId>log4j</groupId><artifactId>*</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>
      </exclusions>
"""

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>zkelect.bed</groupId>
  <artifactId>zookeeper-server-{version}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>org.apache.zookeeper</groupId>
        <artifactId>parent</artifactId>
        <version>{version}</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>org.apache.zookeeper</groupId>
      <artifactId>zookeeper</artifactId>
      <version>{version}</version>
{exclusions}    </dependency>{extra}
  </dependencies>
</project>
"""

# What ZooKeeper's own pom declares "provided" (its release tarball ships
# them in lib/) and QuorumPeerMain loads: from 3.6 on, the metrics of
# DefaultMetricsProvider and snappy for SnapStream; at the versions the
# release was built with (its parent pom, imported above).
_PROVIDED_36 = """
    <dependency>
      <groupId>io.dropwizard.metrics</groupId>
      <artifactId>metrics-core</artifactId>
    </dependency>
    <dependency>
      <groupId>org.xerial.snappy</groupId>
      <artifactId>snappy-java</artifactId>
    </dependency>"""

_SLF4J_SIMPLE = """
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-simple</artifactId>
      <version>{version}</version>
    </dependency>"""


def _mvn(work, log, timeout):
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ZkDistError("mvn not found: install Maven (apt-get install maven; ./dev test does)")
    cmd = [mvn, "-B", "-ntp", "dependency:copy-dependencies", "-DincludeScope=runtime",
           "-DoutputDirectory=lib"]
    with open(log, "ab") as f:
        f.write(("$ " + " ".join(cmd) + "\n").encode())
        f.flush()
        try:
            r = subprocess.run(cmd, cwd=work, stdin=subprocess.DEVNULL, stdout=f,
                               stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"mvn did not finish within {timeout:.0f} s"
    if r.returncode != 0:
        with open(log, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
        errs = [ln for ln in lines if ln.startswith("[ERROR]") and ln.strip() != "[ERROR]"]
        return "\n".join(errs[:3]) or f"mvn exited {r.returncode}"
    return None


def fetch(version, timeout=FETCH_TIMEOUT):
    """Fetch `version`'s server jars into the cache unless they are there;
    returns the lib directory. ZkDistError (with Maven's reason) when it
    cannot be had."""
    v = normalize(version)
    if v == DEBIAN:
        return "/usr/share/java"
    provided = _PROVIDED_36 if line_of(v) >= (3, 6) else ""
    return maven_fetch(f"ZooKeeper {v}", cache_root(), v,
                       lambda extra: _POM.format(version=v, extra=provided + extra, exclusions=MAVEN_EXCLUSIONS),
                       f"zookeeper-{v}.jar", timeout)


def maven_fetch(what, root, key, pom, expect, timeout=FETCH_TIMEOUT):
    """The runtime dependencies of the pom `pom(extra)` makes (extra: more
    <dependency> elements), plus slf4j-simple at the version of the
    slf4j-api they resolve to, copied by Maven into root/key/lib unless a
    complete copy is there; returns that lib directory. `expect` is the
    file name of a jar that must be among them. Serialised by a lock file
    in root; tried once per process. ZkDistError naming `what` and Maven's
    reason when it cannot be had (the whole Maven log is kept beside)."""
    if (root, key) in _FAILED:      # one try per process, not one per test
        raise ZkDistError(_FAILED[root, key])
    dest = os.path.join(root, key)
    done = os.path.join(dest, "complete")
    with _lock(root, key):
        if os.path.exists(done):
            return os.path.join(dest, "lib")
        work = tempfile.mkdtemp(prefix=f".fetch-{key}-", dir=root)
        log = os.path.join(work, "mvn.log")
        try:
            with open(os.path.join(work, "pom.xml"), "w") as f:
                f.write(pom(""))
            err = _mvn(work, log, timeout)
            if err is None:
                api = glob.glob(os.path.join(work, "lib", "slf4j-api-*.jar"))
                if len(api) != 1:
                    err = f"expected one slf4j-api jar among its dependencies, found {len(api)}"
                else:
                    sv = os.path.basename(api[0])[len("slf4j-api-"):-len(".jar")]
                    with open(os.path.join(work, "pom.xml"), "w") as f:
                        f.write(pom(_SLF4J_SIMPLE.format(version=sv)))
                    err = _mvn(work, log, timeout)
            if err is None and not os.path.exists(os.path.join(work, "lib", expect)):
                err = f"{expect} is not among what Maven copied"
            if err is not None:
                keep = os.path.join(root, f"{key}.fetch-failed.log")
                shutil.copyfile(log, keep)
                _FAILED[root, key] = (f"{what} could not be fetched from Maven Central:\n{err}\n"
                                      f"(whole Maven log: {keep})")
                raise ZkDistError(_FAILED[root, key])
            shutil.rmtree(dest, ignore_errors=True)
            os.makedirs(dest)
            os.replace(os.path.join(work, "lib"), os.path.join(dest, "lib"))
            shutil.copyfile(log, os.path.join(dest, "fetch.log"))
            jars = sorted(glob.glob(os.path.join(dest, "lib", "*.jar")))
            with open(done, "w") as f:
                f.write("\n".join(os.path.basename(j) for j in jars) + "\n")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(root, f"{key}.fetch-failed.log"))
            return os.path.join(dest, "lib")
        finally:
            shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="zkdist.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fetch", help="fetch and cache server versions (default: the matrix)")
    p.add_argument("versions", nargs="*")
    p.add_argument("--keep-going", action="store_true",
                   help="fetch the others when one cannot be had; exit 1 at the end")
    p = sub.add_parser("classpath")
    p.add_argument("version")
    sub.add_parser("matrix")
    sub.add_parser("newest")
    a = ap.parse_args(argv)
    try:
        if a.command == "matrix":
            print("\n".join(MATRIX))
        elif a.command == "newest":
            print(NEWEST)
        elif a.command == "classpath":
            print(classpath(a.version))
        elif a.command == "fetch":
            rc = 0
            for v in a.versions or MATRIX:
                try:
                    cached = is_cached(v)
                    where = fetch(v)
                    print(f"ZooKeeper {normalize(v)}: {where}{' (cached)' if cached else ''}", flush=True)
                except ZkDistError as e:
                    if not a.keep_going:
                        raise
                    print(f"zkdist: {e}", file=sys.stderr, flush=True)
                    rc = 1
            return rc
        return 0
    except ZkDistError as e:
        print(f"zkdist: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

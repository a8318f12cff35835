"""The ZooKeeper C client a default build bundles (-Dzookeeper=bundled,
zkclient/): inside libzkelect.so.1, hidden. A program that also links the
system's libzookeeper-mt and uses it itself gets that library's functions,
and libzkelect keeps using its own copy: both sessions work side by side."""

import re
import subprocess
from pathlib import Path

import pytest

from bed.sh import ok as _ok, run as _run

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def test_libzkelect_exports_nothing_of_zookeepers_client(build_dir):
    lib = build_dir / "capi" / "libzkelect.so.1"
    dyn = _ok(_run(["nm", "-D", "--defined-only", str(lib)], timeout=60), "nm -D").stdout
    leaked = [l for l in dyn.splitlines() if re.search(r"\b(zoo_|zookeeper_|deallocate_|"
                                                       r"serialize_|deserialize_|hashtable)", l)]
    assert not leaked, leaked


def test_a_program_with_the_system_client_and_libzkelect_uses_both(build_dir, zk, tmp_path,
                                                                    test_env, zk_path):
    if not Path("/usr/include/zookeeper/zookeeper.h").exists():
        pytest.fail("needs libzookeeper-mt-dev (./dev installs it)", pytrace=False)
    exe = tmp_path / "both"
    _ok(_run(["cc", "-std=gnu99", "-o", str(exe), str(HERE / "both_clients.c"),
              "-I", str(REPO / "capi"), "-I", str(build_dir / "capi"),
              "-L", str(build_dir / "capi"), "-lzkelect", "-lzookeeper_mt"], timeout=120),
        "cc both_clients.c -lzkelect -lzookeeper_mt")
    r = _run([str(exe), zk.connect_string, zk_path], env=test_env, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    m = re.search(r"zookeeper_init in (\S+)", r.stdout)
    assert m and "libzookeeper_mt.so" in m.group(1), r.stdout
    assert "leading=1 children rc=0 n=1" in r.stdout, r.stdout
    # libzkelect itself: the bundled client needs no system one (a build
    # with -Dzookeeper=system links it, and then the two are one).
    if not (build_dir / "zkclient" / "libzkclient.a").exists():
        return
    ldd = _ok(_run(["ldd", str(build_dir / "capi" / "libzkelect.so.1")], timeout=60), "ldd").stdout
    assert "libzookeeper_mt" not in ldd, ldd

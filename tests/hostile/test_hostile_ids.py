"""Ids and node names written by another client (kazoo) are untrusted data:
libzkelect hands them over as stored (ids cut at their first NUL, nothing
else changed), in the right order, without crashing, through every C API
path that returns them: zkelect_client_participants, zkelect_leader_id, the
FOLLOWING event of a candidacy and an observer's LEADER_CHANGED event. The
reader runs from the plain and the ASan+UBSan builds."""

import subprocess
import uuid

import pytest

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")

# (data stored in the node, what a C reader gets: the bytes up to a NUL)
HOSTILE_IDS = [
    b"evil\nLEADER fake token=1",
    b"\x1b[31mred\x1b[0m\r",
    b"\xff\xfe not UTF-8 \xc0\xaf",
    b"before\x00after",
    b"",
    b"L" * 2000,                      # longer than ZKELECT_ID_MAX
    "\u00e9\u2028\u202eline-sep".encode(),
]
# Names ZooKeeper accepts but that are no candidate of ours: ignored.
NOT_CANDIDATES = ["latch-", "evil\u2028name", "_c_x-latch-99999999999", "_c_x-latch-12a4567890",
                  "zz-latch--"]


def _flavors(build_dir):
    out = [build_dir]
    asan = build_dir.parent / "build-asan"
    if (asan / "build.ninja").is_file():
        out.append(asan)
    return out


def _dehex(s):
    return b"" if s == "-" else bytes.fromhex(s)


def test_hostile_ids_and_names_read_back_as_stored(zk, zk_path, build_dir, test_env):
    from kazoo.client import KazooClient
    kz = KazooClient(hosts=zk.connect_string, timeout=10)
    kz.start(timeout=15)
    try:
        kz.ensure_path(zk_path)
        names = []
        for seq, data in enumerate(HOSTILE_IDS, start=1):
            # Curator-style protected names from other clients, one with a
            # right-to-left override in its "uuid" part.
            tag = str(uuid.uuid4()) if seq != 7 else "\u202e" + str(uuid.uuid4())
            name = f"_c_{tag}-latch-{seq:010d}"
            kz.create(f"{zk_path}/{name}", data)
            names.append(name)
        for n in NOT_CANDIDATES:
            kz.create(f"{zk_path}/{n}", b"not a candidate\n")

        expect_ids = [d.split(b"\0")[0] for d in HOSTILE_IDS]
        expect_nodes = [n.encode() for n in names]
        for build in _flavors(build_dir):
            exe = build / "tests" / "hostile" / "read-ids"
            if not exe.is_file():
                pytest.fail(f"{exe} is missing: ninja -C {build}", pytrace=False)
            env = dict(test_env)
            env["LD_LIBRARY_PATH"] = str(build / "capi")
            env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1"
            env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
            r = subprocess.run([str(exe), zk.connect_string, zk_path], env=env,
                               capture_output=True, text=True, timeout=120)
            out = r.stdout + r.stderr
            assert r.returncode == 0, f"{build.name}: exit {r.returncode}\n{out[-4000:]}"
            assert not [m for m in SANITIZER_MARKERS if m in out], out[-4000:]
            recs = [l.split(" ") for l in r.stdout.splitlines()]
            parts = [(_dehex(x[1]), _dehex(x[2])) for x in recs if x[0] == "P"]
            assert [p[0] for p in parts] == expect_ids, build.name
            assert [p[1] for p in parts] == expect_nodes, build.name
            leader = [x for x in recs if x[0] == "L"]
            assert leader and _dehex(leader[0][1]) == expect_ids[0], (build.name, leader)
            follow = [x for x in recs if x[0] == "F"]
            assert follow, f"{build.name}: no FOLLOWING event:\n{out[-2000:]}"
            assert (_dehex(follow[0][1]), _dehex(follow[0][2])) == (expect_ids[-1], expect_nodes[-1])
            obs = [x for x in recs if x[0] == "O"]
            assert obs and (_dehex(obs[0][1]), _dehex(obs[0][2])) == (expect_ids[0], expect_nodes[0])
    finally:
        kz.delete(zk_path, recursive=True)
        kz.stop()
        kz.close()

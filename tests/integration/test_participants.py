"""Whole participant processes against the shared ensemble: the server's own
view of the watches, crash failover with SIGKILL, and one election shared by
Curator's LeaderLatch (Debian's 5.4 and the newest from Maven Central,
bed/curatordist.py) and libzkelect (`zkelect candidate`)."""

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bed import curatordist, zkdist
from procs import Kazoo, curator_candidate, zkelect_candidate

CURATOR_SRC = str(Path(__file__).resolve().parents[2] / "bench" / "participants" / "curator"
                  / "CuratorParticipant.java")


def pytest_generate_tests(metafunc):
    # The interop test runs Debian's Curator against the run's server and
    # each "also" server (as @pytest.mark.zk_versions would), and each other
    # Curator (bed/curatordist.py: the newest Maven Central serves) against
    # the run's server only: one run more per Curator, not one per server.
    if "curator" not in metafunc.fixturenames:
        return
    servers = [zkdist.default_version()] + zkdist.also_versions()
    pairs = [(servers[0], c) for c in curatordist.versions()] \
        + [(z, curatordist.DEBIAN) for z in servers[1:]]
    metafunc.parametrize(("zk_version", "curator"), pairs, indirect=["zk_version"],
                         ids=[f"zk-{z}-curator-{c}" for z, c in pairs])


def _join_in_order(procs, ids, timeout=20):
    """Join one at a time, so the queue order is the order of ids."""
    for p, pid in zip(procs, ids):
        m = p.mark()
        p.send("join")
        p.wait_event(("LEADER", "FOLLOWER"), pid, timeout, since=m)


def _watches(zk):
    """{session: set(paths)} of data watches on election nodes over every
    server. Each client also watches /zookeeper/config (zk.hosts.follow): one
    watch a session, on the ensemble's membership, which changes only when an
    operator reconfigures it; not counted here."""
    out = {}
    for i in range(zk.n):
        for s, paths in zk.wchc(i).items():
            out.setdefault(s, set()).update(p for p in paths if p != "/zookeeper/config")
    return out


def _wait_watches(zk, pred, timeout=5.0):
    """The first watch table pred accepts, polled with a deadline (the server
    sets a watch when it answers the read, a moment after the event line)."""
    deadline = time.monotonic() + timeout
    w = _watches(zk)
    while not pred(w) and time.monotonic() < deadline:
        time.sleep(0.02)
        w = _watches(zk)
    return w


@pytest.mark.zk_versions
def test_watches_one_per_follower_and_one_wakeup_per_failover(zk, zk_path, zkelect_bin, test_env):
    n = 5
    # Child watches are only counted (mntr), not listed: compare with what
    # the ensemble held before our participants came (other tests' sessions
    # are closed by now, but do not assume it).
    child_before = zk.watch_summary()["child"]
    procs = [zkelect_candidate(zkelect_bin, test_env, zk.connect_string, zk_path, i)
             for i in range(1, n + 1)]
    kz = Kazoo(zk.connect_string)
    try:
        for p, i in zip(procs, range(1, n + 1)):
            p.wait_event(("CONNECTED",), str(i), 30)
        _join_in_order(procs, [str(i) for i in range(1, n + 1)])
        q = kz.queue(zk_path)
        assert [d for _, d, _ in q] == ["1", "2", "3", "4", "5"]

        # Each follower watches its predecessor and, from the third on, the
        # node before that (whose deletion tells it that it moved up). The
        # heir and the leader also watch the election path's data, where a
        # transfer request is written (1.2: the leader's for a transfer
        # asked from outside); nobody further back does.
        def ahead(q, k):
            return {f"{zk_path}/{q[j][0]}" for j in range(max(0, k - 2), k)}

        def marker(k):
            return {zk_path} if k <= 1 else set()

        def allowed(q, k):
            own = f"{zk_path}/{q[k][0]}"
            return ahead(q, k) | {own} | ({zk_path} if k <= 1 else set())

        # A leader that went to the back keeps its one-shot watch on the
        # path's data until the next write there wakes it (once; it is not
        # set again).
        former = set()

        def expected_ok(w, q):
            for k, (node, _, sess) in enumerate(q):
                mine = w.get(sess, set())
                stale = {zk_path} if sess in former else set()
                if not ahead(q, k) | marker(k) <= mine <= allowed(q, k) | stale:
                    return False
            return True

        w = _wait_watches(zk, lambda w: expected_ok(w, q))
        sessions = {s for _, _, s in q}
        for k, (node, pid, sess) in enumerate(q):
            mine = w.get(sess, set())
            own = f"{zk_path}/{node}"
            assert (zk_path in mine) == (k <= 1), \
                f"participant {pid} (place {k}): the election path's watch {mine}"
            if k:
                pred = f"{zk_path}/{q[k - 1][0]}"
                assert pred in mine, f"follower {pid} does not watch its predecessor: {mine}"
                assert ahead(q, k) <= mine, f"follower {pid} does not watch the two ahead: {mine}"
                assert mine <= allowed(q, k), f"follower {pid} watches more: {mine}"
            else:
                assert mine <= {own, zk_path}, f"leader {pid} watches {mine}"
        watchers_of = {}
        for s, paths in w.items():
            for p in paths:
                if p.startswith(zk_path + "/") and s in sessions:
                    watchers_of.setdefault(p, set()).add(s)
        # No child watch anywhere (wchc cannot show them; mntr counts them).
        summary = zk.watch_summary()
        assert summary["child"] == child_before, \
            f"child watches appeared: {summary}, {child_before} before"
        print(f"\nwatches before failover: {sorted((p.rsplit('-', 1)[1], len(s)) for p, s in watchers_of.items())}"
              f"; summary {summary}")

        assert max(len(s) for s in watchers_of.values()) <= 3, watchers_of

        # One failover: the leader resigns. Exactly one other participant
        # reacts (the heir becomes LEADER), nobody else prints a thing but
        # the resigned one; only the heir's watch and the third's watch on
        # the leader were consumed (the third is heir now, silently).
        marks = [p.mark() for p in procs]
        former.add(q[0][2])
        procs[0].send("resign 1")
        procs[0].wait_event(("RESIGNED",), "1", 10, since=marks[0])
        procs[1].wait_event(("LEADER",), "2", 10, since=marks[1])
        procs[0].wait_event(("FOLLOWER",), "1", 10, since=marks[0])
        q2 = kz.queue(zk_path)
        assert [d for _, d, _ in q2] == ["2", "3", "4", "5", "1"]
        w2 = _wait_watches(zk, lambda w: expected_ok(w, q2))
        for p, m in zip(procs[2:], marks[2:]):
            assert p.events(since=m) == [], f"{p.name} woke up: {p.events(since=m)}"
        assert [e[1] for e in procs[1].events(since=marks[1])] == ["LEADER"]
        gone = f"{zk_path}/{q[0][0]}"
        for k in range(2, 5):   # followers 3, 4, 5 keep the watches they had
            sess = q[k][2]
            # (3, heir now, added the election path's: read with the
            # keepalive it sends anyway, woken by nothing else.)
            assert w2.get(sess, set()) == (w.get(sess, set()) - {gone}) | marker(k - 1), \
                f"participant {q[k][1]} changed its watches: {w.get(sess)} -> {w2.get(sess)}"
        assert expected_ok(w2, q2), f"watch table after failover: {w2}"
        assert zk.watch_summary()["child"] == child_before
    finally:
        kz.close()
        for p in procs:
            p.close()


def test_sigkill_leader_replaced_within_session_timeout(zk, zk_path, zkelect_bin, test_env):
    n = 4
    procs = [zkelect_candidate(zkelect_bin, test_env, zk.connect_string, zk_path, i)
             for i in range(1, n + 1)]
    kz = Kazoo(zk.connect_string)
    results = []
    try:
        timeouts = [int(p.info(str(i), "negotiated_session_timeout_ms"))
                    for p, i in zip(procs, range(1, n + 1))]
        _join_in_order(procs, [str(i) for i in range(1, n + 1)])
        for k in range(n - 1):
            leader, heir = procs[k], procs[k + 1]
            limit_ms = timeouts[k] + 1500
            marks = [p.mark() for p in procs]
            t_kill = time.time_ns()
            leader.kill()
            t_elected = heir.wait_event(("LEADER",), str(k + 2), (limit_ms + 3000) / 1000,
                                        since=marks[k + 1])
            ms = (t_elected - t_kill) / 1e6
            results.append(ms)
            assert ms <= limit_ms, \
                f"crash failover took {ms:.0f} ms > session timeout {timeouts[k]} + 1500 ms"
            # The ghost is gone, the heir leads in queue order, and the
            # followers behind it never woke.
            q = kz.queue(zk_path)
            assert [d for _, d, _ in q] == [str(i) for i in range(k + 2, n + 1)]
            for p, m in zip(procs[k + 2:], marks[k + 2:]):
                assert p.events(since=m) == [], f"{p.name} reacted: {p.events(since=m)}"
        print(f"\nSIGKILL failover (session timeout {timeouts[0]} ms): "
              + ", ".join(f"{x:.0f} ms" for x in results))
    finally:
        kz.close()
        for p in procs:
            p.close()


@pytest.fixture(scope="module")
def _curator_builds():
    return {}


@pytest.fixture
def curator_build(curator, _curator_builds, tmp_path_factory):
    """(classes dir, class path) of the Curator participant built against
    `curator`: Debian's jars, or a release's from the cache (fetched by
    ./dev test before pytest; here only when missing). Built once per
    Curator per module."""
    if curator in _curator_builds:
        return _curator_builds[curator]
    if not (shutil.which("javac") and shutil.which("java")):
        pytest.fail("javac/java missing (apt-get install default-jdk-headless)", pytrace=False)
    try:
        cp = curatordist.classpath(curator)
    except zkdist.ZkDistError as e:
        pytest.fail(str(e), pytrace=False)
    out = tmp_path_factory.mktemp(f"curator-{curator}")
    # C1 only: javac's own run is short, and it halves its ~4 s here.
    r = subprocess.run(["javac", "-J-XX:TieredStopAtLevel=1", "-Xlint:-options", "--release", "17",
                        "-d", str(out), "-cp", cp, CURATOR_SRC], capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, f"building the Curator participant against {cp} failed:\n{r.stdout}{r.stderr}"
    _curator_builds[curator] = (out, cp)
    return out, cp


def _check_library(cur, curator):
    """The participant runs the Curator asked for and nothing of the other:
    its first line names the jars LeaderLatch and ZooKeeper's client were
    loaded from, and their releases."""
    got = {k: cur.info("-", k, 30) for k in ("curator", "curator_jar", "zookeeper", "zookeeper_jar")}
    if curator == curatordist.DEBIAN:
        assert got["curator"] == curatordist.DEBIAN_RELEASE, got
        assert got["curator_jar"].startswith("/usr/share/java/"), got
        assert got["zookeeper_jar"].startswith("/usr/share/java/"), got
    else:
        lib = curatordist.fetch(curator)
        assert got["curator"] == curator, got
        for k in ("curator_jar", "zookeeper_jar"):
            assert Path(got[k]).parent == Path(lib), got
        assert "/usr/share/java" not in curatordist.classpath(curator), "Debian's jars on the path"
    return got


def test_curator_and_zkelect_share_one_election(zk, zk_path, zkelect_bin, test_env, curator,
                                                curator_build):
    hosts = zk.connect_string
    # ids 1 and 4 on libzkelect, 2 and 3 on Curator, 5 on libzkelect.
    # T = 6 s: the hand-offs here are resigns, which T does not pace. At
    # 2 s a loaded machine once showed one LEADER line more than terms,
    # most likely a lease (about 0.9 s) that lapsed and was regained, which
    # this test forbids.
    T = 6000
    z1 = zkelect_candidate(zkelect_bin, test_env, hosts, zk_path, 1, session_ms=T)
    classes, cp = curator_build
    cur = curator_candidate(classes, test_env, hosts, zk_path, 2, count=2, classpath=cp,
                            session_ms=T)
    z45 = zkelect_candidate(zkelect_bin, test_env, hosts, zk_path, 4, count=2, session_ms=T)
    procs = [z1, cur, z45]
    owner = {"1": z1, "2": cur, "3": cur, "4": z45, "5": z45}
    kz = Kazoo(hosts)
    try:
        lib = _check_library(cur, curator)
        for pid, p in owner.items():
            p.wait_event(("CONNECTED",), pid, 60)
        m = {p: p.mark() for p in procs}
        for p in procs:
            p.send("join")
            for pid, o in owner.items():
                if o is p:
                    p.wait_event(("LEADER", "FOLLOWER"), pid, 30, since=m[p])

        def state():
            """Latest event kind per id, from every process's log."""
            last = {}
            for p in procs:
                for ns, kind, pid, *_ in p.events():
                    if kind in ("LEADER", "FOLLOWER", "RESIGNED", "LOST"):
                        last.setdefault(pid, (0, None))
                        if ns >= last[pid][0]:
                            last[pid] = (ns, kind)
            return {k: v[1] for k, v in last.items()}

        q = kz.queue(zk_path)
        assert sorted(d for _, d, _ in q) == ["1", "2", "3", "4", "5"], q
        deadline = time.monotonic() + 10
        while [k for k, v in state().items() if v == "LEADER"] != [q[0][1]]:
            assert time.monotonic() < deadline, f"leader is not {q[0][1]}: {state()}"
            time.sleep(0.02)
        handoffs = []
        for rnd in range(6):
            order = [d for _, d, _ in q]
            leader, heir = order[0], order[1]
            lp, hp = owner[leader], owner[heir]
            ml, mh = lp.mark(), hp.mark()
            lp.send(f"resign {leader}")
            t_res = lp.wait_event(("RESIGNED",), leader, 10, since=ml)
            t_new = hp.wait_event(("LEADER",), heir, 10, since=mh)
            assert t_new >= t_res, f"{heir} led before {leader} resigned"
            handoffs.append(((t_new - t_res) / 1e6, leader, heir))
            # The resigned one re-enrolls at the back.
            deadline = time.monotonic() + 10
            while True:
                q = kz.queue(zk_path)
                if [d for _, d, _ in q] == order[1:] + [leader]:
                    break
                assert time.monotonic() < deadline, \
                    f"round {rnd}: queue {[d for _, d, _ in q]}, expected {order[1:] + [leader]}"
                time.sleep(0.02)
            leaders = [k for k, v in state().items() if v == "LEADER"]
            assert leaders == [heir], f"round {rnd}: leaders {leaders}, expected [{heir}]"
            for _, d, _ in q:
                assert d in owner
        # Nobody else ever printed LEADER out of turn: count LEADER lines.
        total = sum(1 for p in procs for e in p.events() if e[1] == "LEADER")
        assert total == 1 + len(handoffs), f"{total} LEADER events for {1 + len(handoffs)} terms"
        lost = [e for p in procs for e in p.events() if e[1] == "LOST"]
        assert not lost, lost
        impl = {pid: ("curator" if o is cur else "zkelect") for pid, o in owner.items()}
        print(f"\nCurator {lib['curator']} (ZooKeeper client {lib['zookeeper']}, {lib['curator_jar']}); "
              "hand-offs (ms, from, to): " + ", ".join(
            f"{ms:.1f} {a}({impl[a]})->{b}({impl[b]})" for ms, a, b in handoffs))
    finally:
        kz.close()
        for p in procs:
            p.close()

"""zkelect transfer --path P --to ID: a transfer asked from outside the
election (zkelect_client_transfer), with the exit statuses of docs/zkelect.1."""

import subprocess
import uuid

from bed import zkc


def _cli(zkelect_bin, test_env, zk, *args):
    return subprocess.run([str(zkelect_bin), "transfer", "--connect", zk.connect_string, *args],
                          env=test_env, capture_output=True, text=True, timeout=60)


def test_transfer_from_the_command_line(api, handles, zk, kz, zkelect_bin, test_env):
    lib = api.lib
    path = f"/t/xcli-{uuid.uuid4().hex[:8]}"
    es = []
    for pid in ("a", "b"):
        c = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=4000)
        e = zkc.new_election(api, handles, c, path, pid)
        assert lib.zkelect_volunteer(e) == 0
        api.wait_event(e, {"ELECTED", "FOLLOWING"}, 10)
        es.append(e)
    r = _cli(zkelect_bin, test_env, zk, "--path", path, "--to", "nobody")
    assert r.returncode == 1 and r.stderr.count("ZKELECT_ENOCANDIDATE") == 1, r
    assert lib.zkelect_is_leader(es[0]) == 1
    for bad in (["--path", path], ["--path", path, "--to", "b", "--timeout", "0"],
                ["--path", path, "--to", ""]):
        r = _cli(zkelect_bin, test_env, zk, *bad)
        assert r.returncode == 2, (bad, r)
    r = _cli(zkelect_bin, test_env, zk, "--path", path, "--to", "b", "--timeout", "5000")
    assert (r.returncode, r.stdout) == (0, "transferred: b\n"), r
    api.wait_event(es[1], {"ELECTED"}, 10)
    assert lib.zkelect_is_leader(es[0]) == 0
    r = _cli(zkelect_bin, test_env, zk, "--path", f"{path}-empty", "--to", "b")
    assert r.returncode == 1 and r.stderr.count("ZKELECT_ENOLEADER") == 1, r


def test_run_priority_shows_in_status_and_observe(zk, kz, zkelect_bin, test_env):
    import json
    import time
    path = f"/t/xprio-{uuid.uuid4().hex[:8]}"
    p = subprocess.Popen([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path", path,
                          "--id", "r", "--priority", "7", "--quiet", "--", "sleep", "30"],
                         env=test_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        doc = None
        for _ in range(100):
            r = subprocess.run([str(zkelect_bin), "status", "--connect", zk.connect_string,
                                "--path", path, "--json"], env=test_env, capture_output=True,
                               text=True, timeout=30)
            doc = json.loads(r.stdout) if r.returncode == 0 else None
            if doc and doc["count"] == 1:
                break
            time.sleep(0.1)
        assert doc and [(q["id"], q["priority"]) for q in doc["participants"]] == [("r", 7)], doc
        r = subprocess.run([str(zkelect_bin), "observe", "--connect", zk.connect_string,
                            "--path", path, "--json", "--count", "1"], env=test_env,
                           capture_output=True, text=True, timeout=30)
        line = json.loads(r.stdout)
        assert (line["leader"], line["priority"]) == ("r", 7), r
    finally:
        p.terminate()
        p.wait(30)
    r = subprocess.run([str(zkelect_bin), "run", "--connect", zk.connect_string, "--path", path,
                        "--priority", "256", "--", "true"], env=test_env, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "--priority" in r.stderr, r

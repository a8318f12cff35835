"""Requests per election when one session joins many elections (issue 35).

Every election of a per-shard service lives on a path of its own under a
parent they share. Joining one costs: the create of its path (once per
session and path), the candidate's create, the listing, the read that
watches its own node, and, once it leads, the read that watches the path's
data for transfers asked from outside: five. The parent they share is asked
for once per session: a create that ZooKeeper refuses (the node exists) is
still a write through the quorum, and sent once per election it was one
more quorum write for each of them.

Counted by the library's own counter (zk_requests) in the bench's program
(bench/scale.c, one process on the public header): a count, not a timing.
"""

import json
import os
import subprocess

import pytest

E = 200
PER_ELECTION = 5
SHARED = 10  # the ancestors asked for once, and the session's pings meanwhile


def test_a_shared_parent_is_asked_for_once_per_session(build_dir, fresh_ensemble):
    prog = build_dir / "bench" / "zkelect-bench-scale"
    if not prog.exists():
        pytest.fail(f"{prog} not built (bench/ is built unless b_sanitize is set)")
    ens = fresh_ensemble(n=1)
    env = dict(os.environ, LD_LIBRARY_PATH=str(build_dir / "capi"))
    r = subprocess.run([str(prog), "--connect", f"127.0.0.1:{ens.client_port(0)}",
                        "--candidacies", str(E), "--sessions", "1", "--own-paths", "1",
                        "--teardown", "resign-first", "--timeout-ms", "60000"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(r.stdout)
    assert d["correct"] and d["is_leader_count_at_end"] == E, d
    sent = d["converge_requests"]
    print(f"\n{E} elections on one session, each on its own path: {sent} requests "
          f"({sent / E:.2f} an election)")
    assert sent <= PER_ELECTION * E + SHARED, (
        f"{sent} requests to join {E} elections: more than {PER_ELECTION} an election "
        f"(+{SHARED}); is the shared parent asked for by every election?")

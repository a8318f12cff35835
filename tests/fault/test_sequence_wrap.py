"""Issue 3 item 3 against a real server: order across the 2^31 wrap of the
sequence counter.

A real parent's counter cannot be driven to 2^31 in a test (2^31 creates),
so Curator-style nodes carrying the numbers around the wrap are made by hand
(persistent, data = an id), beside real candidates whose numbers ZooKeeper
assigns (small: 4, 5). By serial-number arithmetic (docs/semantics.md) the
order is
    4, 5, 2147483646, 2147483647, -2147483648, -2147483647
(every pair lies less than 2^31 creates apart, so the order is well defined:
the wrapped names are the NEWEST), where numeric order would put
-2147483648 first and make a hand-made node the leader. Checked through
zkelect_client_participants (`zkelect status --json`) and through the
decisions of `zkelect candidate` processes (who leads, whom each follows,
who takes over on a resign).
"""

import json
import subprocess
import uuid

import pytest

from bed.faultutil import report

pytestmark = [pytest.mark.fault]

T = 4000
HAND = [("w1", 2147483646), ("w2", 2147483647), ("w3", -2147483648), ("w4", -2147483647)]


def status(zkelect_bin, hosts, path, env):
    r = subprocess.run([str(zkelect_bin), "status", "--connect", hosts, "--path", path, "--json"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.zk_versions
def test_wrapped_names_are_the_newest(zk, zk_path, spawn, kz, zkelect_bin, test_env):
    kz.ensure_path(zk_path)
    for pid, seq in HAND:
        kz.create(f"{zk_path}/_c_{uuid.uuid4()}-latch-{seq:010d}", pid.encode())
    a = spawn(zk.connect_string, zk_path, 1, T)
    a.wait_event("CONNECTED", "1", 15)
    a.send("join")
    # the real candidate is the oldest: it leads, hand-made names or not
    a.wait_event("LEADER", "1", 15)
    b = spawn(zk.connect_string, zk_path, 2, T)
    b.wait_event("CONNECTED", "2", 15)
    b.send("join")
    fol = b.wait_line(lambda w: w[:3] == ["EVENT", "FOLLOWER", "2"], 15, 0, "FOLLOWER 2")
    st = status(zkelect_bin, zk.connect_string, zk_path, test_env)
    order = [p["id"] for p in st["participants"]]
    nodes = [p["node"] for p in st["participants"]]
    seqs = [int(n.rsplit("latch-", 1)[1]) for n in nodes]
    # hand over along the queue: 1 resigns, 2 (its heir) leads
    m = b.mark()
    a.send("resign 1")
    b.wait_event("LEADER", "2", 10, since=m)
    st2 = status(zkelect_bin, zk.connect_string, zk_path, test_env)
    order2 = [p["id"] for p in st2["participants"]]
    report("sequence_wrap_real_server", real_seqs=seqs[:2], order=order, seqs=seqs,
           order_after_resign=order2, follower_pred=fol[1][4])
    assert order == ["1", "2", "w1", "w2", "w3", "w4"], list(zip(order, seqs))
    assert seqs[2:] == [s for _, s in HAND]
    assert 0 <= seqs[0] < seqs[1] < 100, "ZooKeeper numbered the real candidates unexpectedly"
    assert fol[1][4] == "pred=1"
    assert st["leader"]["id"] == "1"
    # 1 volunteered again (a larger, still small, number): it queues before
    # the wrapped names, which stay the newest
    assert order2[0] == "2" and order2[-4:] == ["w1", "w2", "w3", "w4"], order2
    assert a.quit() == 0 and b.quit() == 0


@pytest.mark.zk_versions
def test_minus_one_comes_before_zero(zk, zk_path, spawn, kz, zkelect_bin, test_env):
    """The wrap from -1 to 0 (4294967295 -> 0 as unsigned): hand-made names
    -2 and -1 are OLDER than the small numbers ZooKeeper gives the real
    candidates, so the real first candidate follows -1 instead of leading.
    Unsigned order would put -1 last and make the real candidate the leader;
    with the 2^31 case above this pins serial-number order down."""
    kz.ensure_path(zk_path)
    hand = [("m2", -2), ("m1", -1)]
    for pid, seq in hand:
        kz.create(f"{zk_path}/_c_{uuid.uuid4()}-latch-{seq:010d}", pid.encode())
    a = spawn(zk.connect_string, zk_path, 1, T)
    a.wait_event("CONNECTED", "1", 15)
    a.send("join")
    fol = a.wait_line(lambda w: w[:3] == ["EVENT", "FOLLOWER", "1"] or w[:3] == ["EVENT", "LEADER", "1"],
                      15, 0, "FOLLOWER or LEADER of 1")
    st = status(zkelect_bin, zk.connect_string, zk_path, test_env)
    order = [p["id"] for p in st["participants"]]
    report("sequence_wrap_minus_one", order=order, first_event=fol[1][:5])
    assert fol[1][1] == "FOLLOWER" and fol[1][4] == "pred=m1", fol[1]
    assert order == ["m2", "m1", "1"], order
    # once the hand-made names are gone, the real candidate leads
    for name in kz.get_children(zk_path):
        if kz.get(f"{zk_path}/{name}")[0].decode() in ("m1", "m2"):
            kz.delete(f"{zk_path}/{name}")
    a.wait_event("LEADER", "1", 10)
    assert a.quit() == 0

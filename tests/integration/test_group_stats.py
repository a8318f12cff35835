"""A balanced group seen from outside (issue 56): zkelect_client_group_stats
(through tests/bed/zkc.py), `zkelect status --group` (through
tests/bed/toolutil.py), a balanced client's own stats ("balance") and its
metrics, against the shared ensemble: two clients of one group show as two
members with the counts each says of itself; member nodes someone else
wrote show as invalid and count in no total; bad input gets clear errors."""

import json
import subprocess
import sys

import pytest

from bed import zkc
from bed.toolutil import status_group

E = 4           # elections, each held by a candidacy of both clients
SESSION_MS = 4000
EINVAL = -1     # ZKELECT_EINVAL (gen/vocabulary.toml)


def _session_hex(api, client):
    return hex(api.lib.zkelect_client_session_id(client) & (2**64 - 1))


def _balanced_pair(api, handles, zk, group, prefix):
    """Two clients of group, each with a volunteered candidacy on E paths."""
    clients = []
    for who in ("a", "b"):
        c = zkc.connected_client(api, handles, zk.connect_string, SESSION_MS,
                                 balance_group=group)
        for i in range(E):
            e = zkc.new_election(api, handles, c, f"{prefix}-{i}", f"{who}{i}")
            assert api.lib.zkelect_volunteer(e) == 0
        clients.append(c)
    return clients


def _settled(api, clients, group):
    """The group's document once it shows every client as a valid member
    whose counts are the ones its own stats give (and E leaderships, split
    evenly); None before."""
    doc, err, code = api.group_stats(clients[0], group)
    assert doc is not None, (err, code)
    own = {}
    for c in clients:
        bal = api.stats(c, client=True).get("balance")
        assert bal is not None and bal["group"] == group, bal
        own[_session_hex(api, c)] = (bal["leading"], bal["in_line"])
    seen = {m["session"]: (m["leading"], m["in_line"]) for m in doc["members"] if m["valid"]}
    if seen != own or doc["leading"] != E or sorted(v[0] for v in own.values()) != [E // 2] * 2:
        return None
    return doc, own


def test_group_stats_show_each_member_with_its_counts(zk, zk_path, api, handles, zkelect_bin,
                                                      test_env):
    group = zk_path + "/group"
    clients = _balanced_pair(api, handles, zk, group, zk_path + "/e")
    doc, own = zkc.until(lambda: _settled(api, clients, group), "the group settled", 30)
    assert doc["group"] == group and doc["unread"] == 0
    nodes = [m["node"] for m in doc["members"]]
    assert len(nodes) == 2 and nodes == sorted(nodes)
    assert all(n.startswith("zkelect-member-") for n in nodes)
    assert all(m["valid"] and m["in_line"] == E for m in doc["members"])

    # The client's own stats: the balance object, its moves the counter.
    for c in clients:
        bal = api.stats(c, client=True)["balance"]
        assert bal["moves"] == api.counter_named(c, "balance_moves")

    # Its metrics: the gauges, labelled with the group.
    st = json.dumps(api.stats(clients[0], client=True))
    r = subprocess.run([str(zkelect_bin), "__metrics-render"], input=st, text=True,
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    mine = own[_session_hex(api, clients[0])]
    assert f'zkelect_balance_leading{{group="{group}"}} {mine[0]}\n' in r.stdout, r.stdout
    assert f'zkelect_balance_in_line{{group="{group}"}} {mine[1]}\n' in r.stdout, r.stdout

    # `zkelect status --group`: the same, as JSON and as text.
    r = status_group(zkelect_bin, test_env, zk.connect_string, group, "--json")
    assert r.returncode == 0, r.stderr
    tool = json.loads(r.stdout)
    assert [(m["node"], m["session"], m["leading"], m["in_line"]) for m in tool["members"]] == \
        [(m["node"], m["session"], m["leading"], m["in_line"]) for m in doc["members"]]
    assert tool["leading"] == E
    r = status_group(zkelect_bin, test_env, zk.connect_string, group)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{group}: 2 members", lines
    rows = [l.split() for l in lines if l.startswith("zkelect-member-")]
    assert [(x[0], x[1], int(x[2]), int(x[3])) for x in rows] == \
        [(m["node"], m["session"], m["leading"], m["in_line"]) for m in doc["members"]]
    assert f"total leading: {E}" in lines, lines


def test_member_nodes_others_wrote_show_invalid(zk, zk_path, api, handles, kz, zkelect_bin,
                                                 test_env):
    group = zk_path + "/group"
    # Nodes named as members, written by another client: garbage data, and
    # well-formed counts no session holds (a persistent node); a child that
    # is no member at all.
    kz.create(group + "/zkelect-member-0000000099", b"\xff\xfe garbage\n", makepath=True)
    kz.create(group + "/zkelect-member-0000000098", b"zkelect-balance 1 7 7")
    kz.create(group + "/not-a-member", b"zkelect-balance 1 5 5")
    c = zkc.connected_client(api, handles, zk.connect_string, SESSION_MS, balance_group=group)
    es = [zkc.new_election(api, handles, c, f"{zk_path}/e-{i}", f"a{i}") for i in range(2)]
    for e in es:
        assert api.lib.zkelect_volunteer(e) == 0
    zkc.until(lambda: all(api.lib.zkelect_is_leader(e) == 1 for e in es), "both lead", 20)

    def shown():
        doc, err, code = api.group_stats(c, group)
        assert doc is not None, (err, code)
        valid = [m for m in doc["members"] if m["valid"]]
        return doc if len(valid) == 1 and valid[0]["leading"] == 2 else None
    doc = zkc.until(shown, "the client's member shows its two leaderships", 20)
    by_node = {m["node"]: m for m in doc["members"]}
    assert "not-a-member" not in by_node
    for bad in ("zkelect-member-0000000098", "zkelect-member-0000000099"):
        assert by_node[bad] == {"node": bad, "session": "0x0", "valid": False}
    assert [m["node"] for m in doc["members"]] == sorted(by_node)
    assert doc["leading"] == 2   # the invalid ones count in no total
    # Nothing broke: the client still leads both, and says so itself.
    assert all(api.lib.zkelect_is_leader(e) == 1 for e in es)
    assert api.stats(c, client=True)["balance"]["leading"] == 2

    r = status_group(zkelect_bin, test_env, zk.connect_string, group)
    assert r.returncode == 0, r.stderr
    invalid = [l for l in r.stdout.splitlines() if " invalid " in l]
    assert [l.split()[0] for l in invalid] == ["zkelect-member-0000000098",
                                               "zkelect-member-0000000099"], r.stdout
    assert "total leading: 2" in r.stdout.splitlines()


def test_a_member_node_deleted_from_outside_is_made_again(zk, zk_path, api, handles, kz):
    """An operator's delete of a member node: the client makes a new one
    with its counts, and the group sees it again (before, it led its share
    unseen until its next session)."""
    group = zk_path + "/group"
    clients = _balanced_pair(api, handles, zk, group, zk_path + "/e")
    doc, _ = zkc.until(lambda: _settled(api, clients, group), "the group settled", 30)
    gone = doc["members"][0]["node"]
    kz.delete(group + "/" + gone)
    doc, own = zkc.until(lambda: (lambda d: d if d and gone not in
                                  [m["node"] for m in d[0]["members"]] else None)(
                                      _settled(api, clients, group)),
                         "the deleted member made again", 20)
    assert len(doc["members"]) == 2 and all(m["valid"] for m in doc["members"])


def test_bad_input_gets_clear_errors(zk, zk_path, api, handles, zkelect_bin, test_env):
    c = zkc.connected_client(api, handles, zk.connect_string, SESSION_MS)
    doc, err, code = api.group_stats(None, "/g")
    assert doc is None and code == EINVAL and "client is NULL" in err
    doc, err, code = api.group_stats(c, None)
    assert doc is None and code == EINVAL and "path is NULL" in err
    for bad, why in [("relative", "absolute"), ("/g/", "end with '/'"), ("/a//b", "'//'"),
                     ("/zookeeper/g", "/zookeeper"), ("", "empty")]:
        doc, err, code = api.group_stats(c, bad)
        assert doc is None and code == EINVAL and why in err, (bad, err, code)
    # A group nobody made: no members, not an error (and nothing is made).
    doc, err, code = api.group_stats(c, zk_path + "/nobody")
    assert doc == {"group": zk_path + "/nobody", "members": [], "leading": 0, "unread": 0}, err

    hosts = zk.connect_string
    r = status_group(zkelect_bin, test_env, hosts, "relative")
    assert r.returncode == 2 and "bad group path 'relative'" in r.stderr, r.stderr
    r = status_group(zkelect_bin, test_env, hosts, "/zookeeper/g")
    assert r.returncode == 2 and "/zookeeper" in r.stderr, r.stderr
    r = status_group(zkelect_bin, test_env, hosts, "/g", "--path", "/p")
    assert r.returncode == 2 and "one of --path or --group" in r.stderr, r.stderr
    r = status_group(zkelect_bin, test_env, hosts, None)
    assert r.returncode == 2 and "one of --path or --group" in r.stderr, r.stderr
    r = status_group(zkelect_bin, test_env, hosts, zk_path + "/nobody")
    assert r.returncode == 0 and r.stdout.startswith(f"{zk_path}/nobody: 0 members\n"), r.stdout


def test_a_query_of_a_group_with_large_member_nodes_holds_little(zk, zk_path, kz, zkelect_bin,
                                                                 test_env):
    """A group path anyone can write to cannot make a query hold what was
    written: member nodes' data longer than a member's (64 bytes) is not
    kept, and at most 64 reads are in flight. 96 member-named nodes of
    256 KiB each (24 MiB): `zkelect status --group` shows them invalid and
    its peak memory grows by less than half of that over an empty group's.
    It grew by 27 MiB when every read was sent at once and kept whole.
    ru_maxrss of children is the largest of any child so far: each run is
    the only child of a runner process of its own."""
    group = zk_path + "/big"
    empty = zk_path + "/empty"
    kz.create(empty, b"", makepath=True)
    blob = b"zkelect-balance 1 1 1" + b" " * (256 * 1024)
    for i in range(96):
        kz.create(f"{group}/zkelect-member-{i:010d}", blob, makepath=True)
    argv = [str(zkelect_bin), "status", "--connect", zk.connect_string, "--group"]
    runner = [sys.executable, "-c", RUN_AND_PEAK]
    base = subprocess.run(runner + argv + [empty], env=test_env, capture_output=True, text=True,
                          timeout=60)
    big = subprocess.run(runner + argv + [group], env=test_env, capture_output=True, text=True,
                         timeout=60)
    assert base.returncode == 0 and big.returncode == 0, (base.stderr, big.stderr)
    base_kib, big_kib = int(base.stdout.split()[-1]), int(big.stdout.split()[-1])
    lines = big.stdout.splitlines()
    assert sum(" invalid " in l for l in lines) == 96, big.stdout[:2000]
    grew = big_kib - base_kib
    print(f"\npeak of zkelect status --group: {base_kib} KiB empty, {big_kib} KiB with 24 MiB "
          f"of member data (+{grew} KiB)")
    assert grew < 12 * 1024, f"the query's peak grew by {grew} KiB for 24 MiB written"


# Runs argv, prints its output, then the child's peak resident KiB.
RUN_AND_PEAK = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=60)
sys.stdout.write(p.stdout)
sys.stderr.write(p.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(p.returncode)
"""

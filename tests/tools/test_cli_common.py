"""What every subcommand of the zkelect tool shares: the option parser,
`--set` and credentials, one exit code per failure, and output that untrusted
ids and node names cannot break (one record, one line; valid JSON)."""

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from bed.toolutil import Candidates, Proc, parse_event
from bed.zkbed import free_port

SESSION_MS = 2000
SUBS = ["run", "status", "observe", "candidate", "transfer", "fenced"]


def argv(zkelect_bin, sub, hosts, path, *extra):
    if sub == "fenced":   # no election path: a leader's node and token
        return [str(zkelect_bin), sub, "--connect", hosts, "--node", path + "/n", "--fencing-token", "1",
                *extra, "set", path, "x"]
    a = [str(zkelect_bin), sub, "--connect", hosts, "--path", path, *extra]
    if sub == "candidate":
        a += ["--first-id", "1", "--count", "1"]
    if sub == "transfer":
        a += ["--to", "x"]
    if sub == "run":
        a += ["--", "true"]
    return a


@pytest.mark.parametrize("sub", SUBS)
@pytest.mark.parametrize("failure,code", [
    ("unreachable", 3),
    ("bad-set", 2),
    ("missing-auth-file", 2),
    ("bad-auth-env", 2),
])
def test_one_exit_code_per_failure(zk, zkelect_bin, test_env, tmp_path, sub, failure, code):
    env = dict(test_env)
    env.pop("ZKELECT_CONNECT", None)
    hosts, extra = zk.connect_string, []
    if failure == "unreachable":
        hosts, extra = f"127.0.0.1:{free_port()}", ["--connect-timeout-ms", "1000"]
    elif failure == "bad-set":
        extra = ["--set", "leadership=sometimes"]
    elif failure == "missing-auth-file":
        extra = ["--auth-file", str(tmp_path / "nope")]
    elif failure == "bad-auth-env":
        env["ZKELECT_AUTH"] = "no-colon-here"
    r = subprocess.run(argv(zkelect_bin, sub, hosts, "/x", *extra), env=env,
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == code, (sub, failure, r.returncode, r.stderr)
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"zkelect {sub}: "), r.stderr
    if code == 2:
        # The error stays on screen: the synopsis and where the rest is, not
        # the whole --help page after it.
        assert "options:" not in r.stderr and len(r.stderr.splitlines()) <= 10, r.stderr
        assert f"Try 'zkelect {sub} --help'" in r.stderr, r.stderr


def test_connect_failure_worded_once(zkelect_bin, test_env):
    """A failed connection reads the same in every subcommand."""
    hosts = f"127.0.0.1:{free_port()}"
    lines = set()
    for sub in SUBS:
        r = subprocess.run(argv(zkelect_bin, sub, hosts, "/x", "--connect-timeout-ms", "800"),
                           env=test_env, capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 3, r.stderr
        lines.add(r.stderr.splitlines()[0].split(": ", 1)[1])
    assert lines == {f"cannot connect to ZooKeeper at {hosts} within 800 ms"}, lines


def test_observe_ends_when_its_reader_goes_away(zk, zk_path, zkelect_bin, test_env):
    """`zkelect observe | grep -m1 ...`: once the reader closed the pipe,
    observe ends (exit 0) without waiting for another leader change."""
    p = subprocess.Popen([str(zkelect_bin), "observe", "--connect", zk.connect_string,
                          "--path", zk_path], env=test_env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        line = p.stdout.readline()
        assert line.rstrip().endswith(b"NONE"), line
        p.stdout.close()
        assert p.wait(10) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def latch(kz, path, data):
    """A Curator LeaderLatch node made by another client, with any data."""
    return kz.create(f"{path}/_c_{uuid.uuid4()}-latch-", data, ephemeral=True, sequence=True,
                     makepath=True).rsplit("/", 1)[1]


HOSTILE = [b"", b"evil\nLEADER fake token=1", b"\xff\xfe not utf-8", b"tab\there \"q\" \\"]


def test_empty_and_hostile_ids_stay_one_line_and_valid_json(zk, zk_path, zkelect_bin, test_env,
                                                            kz):
    nodes = [latch(kz, zk_path, d) for d in HOSTILE]
    base = [str(zkelect_bin), "--connect", zk.connect_string, "--path", zk_path]

    r = subprocess.run([base[0], "status", *base[1:]], env=test_env, capture_output=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    lines = out.splitlines()
    # path line, leader line, blank, header, one line per candidate, blank,
    # the hosts in use
    assert len(lines) == 6 + len(HOSTILE), out
    assert lines[-1].startswith("hosts in use: ")
    assert 'leader: ""  token' in out
    assert not any(l.startswith("LEADER") for l in lines), out
    assert "evil\\x0aLEADER\\x20fake\\x20token=1" in out
    assert "\\xff\\xfe\\x20not\\x20utf-8" in out
    assert "tab\\x09here\\x20\\x22q\\x22\\x20\\\\" in out

    r = subprocess.run([base[0], "status", *base[1:], "--json"], env=test_env,
                       capture_output=True, timeout=30)
    doc = json.loads(r.stdout)
    assert doc["leader"]["id"] == "" and doc["leader"]["node"] == nodes[0]
    assert [p["id"] for p in doc["participants"]] == [
        "", "evil\nLEADER fake token=1", "\ufffd\ufffd not utf-8", "tab\there \"q\" \\"]

    # observe: the leader has an empty id, which is not "no leader".
    r = subprocess.run([base[0], "observe", *base[1:], "--count", "1"], env=test_env,
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert len(out.splitlines()) == 1 and ' LEADER "" token=' in out, out
    r = subprocess.run([base[0], "observe", *base[1:], "--count", "1", "--json"], env=test_env,
                       capture_output=True, timeout=30)
    doc = json.loads(r.stdout)
    assert doc["leader"] == "" and doc["node"] == nodes[0]

    # The forged line's node leads next: still one line, escaped.
    kz.delete(f"{zk_path}/{nodes[0]}")
    r = subprocess.run([base[0], "observe", *base[1:], "--count", "1"], env=test_env,
                       capture_output=True, timeout=30)
    out = r.stdout.decode()
    assert len(out.splitlines()) == 1 and "LEADER evil\\x0aLEADER\\x20fake" in out, out


def test_status_and_observe_read_a_creator_only_election_with_credentials(
        zk, zk_path, zkelect_bin, test_env, tmp_path):
    """election.acl=creator: only the same identity may read the election.
    Credentials come from a file, the environment or --set, never needing
    the command line."""
    secret = "digest:alice:s3cret"
    c = Candidates(zkelect_bin, dict(test_env, ZKELECT_AUTH=secret), zk.connect_string,
                   zk_path, ["1"], SESSION_MS, extra=("--set", "election.acl=creator"))
    try:
        c.wait(lambda p, l: l and (parse_event(l) or ("",))[0] == "CONNECTED", 30, "connected")
        c.procs["1"].send("join")
        c.wait(lambda p, l: l and (parse_event(l) or ("",))[0] == "LEADER", 30, "leader")
        # The candidate's command line holds no credentials.
        with open(f"/proc/{c.procs['1'].pid}/cmdline", "rb") as f:
            assert b"s3cret" not in f.read()

        def status(env, *extra):
            return subprocess.run([str(zkelect_bin), "status", "--connect", zk.connect_string,
                                   "--path", zk_path, "--json", *extra], env=env,
                                  capture_output=True, text=True, timeout=30)

        env = dict(test_env)
        env.pop("ZKELECT_AUTH", None)
        assert status(env).returncode == 5  # not allowed to read: permission denied
        auth = tmp_path / "auth"
        auth.write_text(secret + "\n")
        for r in (status(env, "--auth-file", str(auth)),
                  status(dict(env, ZKELECT_AUTH=secret)),
                  status(env, "--set", f"zk.auth={secret}")):
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout)["leader"]["id"] == "1"
        r = subprocess.run([str(zkelect_bin), "observe", "--connect", zk.connect_string,
                            "--path", zk_path, "--count", "1", "--auth-file", str(auth)],
                           env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and " LEADER 1 token=" in r.stdout, (r.stdout, r.stderr)
    finally:
        c.close()


def test_candidate_protocol_lines_escape_a_hostile_predecessor(zk, zk_path, zkelect_bin,
                                                               test_env, kz):
    """A predecessor's id read from ZooKeeper cannot forge a protocol line."""
    latch(kz, zk_path, b"evil\nEVENT LEADER 9 1 token=1")
    c = Candidates(zkelect_bin, test_env, zk.connect_string, zk_path, ["1"], SESSION_MS)
    try:
        c.wait(lambda p, l: l and (parse_event(l) or ("",))[0] == "CONNECTED", 30, "connected")
        c.procs["1"].send("join")
        line = c.wait(lambda p, l: l and (parse_event(l) or ("",))[0] in ("FOLLOWER", "LEADER")
                      and l, 30, "enrolled")
        assert line.startswith("EVENT FOLLOWER 1 "), line
        assert parse_event(line)[3]["pred"] == "evil\\x0aEVENT\\x20LEADER\\x209\\x201\\x20token=1"
        assert c.procs["1"].quit(15) == 0
        with c.procs["1"].cv:
            seen = [ln.words for ln in c.procs["1"].lines]
        assert not any(w[:3] == ["EVENT", "LEADER", "9"] for w in seen), seen
    finally:
        c.close()


@pytest.mark.parametrize("sub", SUBS)
@pytest.mark.parametrize("bad", ["-xh", "-x", "--nope", "--path"])
def test_bad_option_is_named(zkelect_bin, test_env, sub, bad):
    """The message names the argument at fault, also inside a cluster of
    short options (it named the subcommand for -xh)."""
    r = subprocess.run([str(zkelect_bin), sub, bad], env=test_env, capture_output=True,
                       text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[0] == f"zkelect {sub}: unknown option or missing value: {bad}"


def test_run_takes_no_option_value_for_the_separator(zkelect_bin, test_env):
    """`--id -- CMD`: the "--" is the id's value, so CMD was not marked as the
    command; it used to run as one (with the id "--")."""
    r = subprocess.run([str(zkelect_bin), "run", "--connect", "127.0.0.1:1", "--path", "/e",
                        "--id", "--", "true"], env=test_env, capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[0] == "zkelect run: the command must follow '--'"


def test_man_page_names_the_version_built(zkelect_bin):
    """The man page's header names the release it documents: the project's
    version in meson.build, which `zkelect --version` reports too."""
    import re
    repo = Path(__file__).resolve().parents[2]
    version = re.search(r"version\s*:\s*'([^']+)'", (repo / "meson.build").read_text()).group(1)
    th = next(l for l in (repo / "docs" / "zkelect.1").read_text().splitlines()
              if l.startswith(".TH "))
    assert f'"libzkelect {version}"' in th, (th, version)
    r = subprocess.run([str(zkelect_bin), "--version"], capture_output=True, text=True, timeout=10)
    assert r.stdout.strip() == f"zkelect {version} (libzkelect {version})", r.stdout

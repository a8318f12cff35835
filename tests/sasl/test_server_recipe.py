"""docs/security.md's server set-up on Debian 12, run as written: the
systemd unit's ExecStart line (the only place Debian 12's zookeeper package
lets the JAAS file and the Netty jars be named), with the paths it names
moved into a temporary folder, starts a server that requires SASL; zkelect
elects over it with the doc's three keys, and what the doc's failure table
says of a wrong password and of an unknown user is what this server does."""

import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import saslbed
from bed import examples
from bed.zkbed import free_port
from tls import tlsbed

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "security.md"
PASSWORD = "Recipe-pw-1"


def _unit():
    mine = "tested by tests/sasl/" + Path(__file__).name
    found = [b for b in examples.blocks(DOC) if any(m.startswith(mine) for m in b.marks)]
    assert len(found) == 1, f"{DOC.name}: {len(found)} blocks marked '{mine}'"
    return found[0].text


def _exec_start():
    m = re.search(r"^ExecStart=(.*)$", _unit(), re.M)
    assert m, _unit()
    return shlex.split(m.group(1))


@pytest.fixture(scope="module")
def recipe_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("recipe")
    port = free_port()
    (d / "data").mkdir()
    (d / "log").mkdir()
    cfg = d / "zoo.cfg"
    cfg.write_text(f"tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={d / 'data'}\n"
                   f"clientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                   + "".join(f"{k}={v}\n" for k, v in saslbed.ENFORCE.items()))
    jaas = saslbed.digest_jaas(str(d), {"alice": PASSWORD})[0].split("=", 1)[1]
    moved = {"/etc/zookeeper/jaas.conf": jaas, "/etc/zookeeper/conf/zoo.cfg": str(cfg),
             "/var/log/zookeeper": str(d / "log")}
    argv = []
    for a in _exec_start():
        for old, new in moved.items():
            a = a.replace(old, new)
        argv.append(a)
    for jar in argv[argv.index("-cp") + 1].split(":"):
        assert os.path.exists(jar), f"the unit's class path names {jar}, which Debian 12 lacks"
    assert argv[-1] == str(cfg) and jaas in " ".join(argv), argv
    log = open(d / "server.out", "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"srvr")  # the one four-letter word allowed by default
                    if s.recv(9) == b"Zookeeper":
                        break
            except OSError:
                pass
            assert proc.poll() is None, (d / "server.out").read_text()[-3000:]
            assert time.monotonic() < deadline, (d / "server.out").read_text()[-3000:]
            time.sleep(0.2)
        yield f"127.0.0.1:{port}", d
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(20)
        log.close()


def _keys(d, user, password):
    pw = saslbed.password_file(str(d), f"pw-{user}-{len(password)}", password)
    return ["--set", "zk.sasl.mechanism=DIGEST-MD5", "--set", f"zk.sasl.user={user}",
            "--set", f"zk.sasl.password.file={pw}"]


def _candidate(zkelect_bin, test_env, hosts, keys):
    return subprocess.run([str(zkelect_bin), "candidate", "--connect", hosts, "--path",
                           f"/recipe/e-{os.getpid()}", "--first-id", "1", "--count", "1",
                           "--session-timeout-ms", "4000", "--connect-timeout-ms", "8000",
                           *keys], env=test_env, capture_output=True, text=True, timeout=60,
                          input="join\n")


def test_the_unit_runs_a_server_that_elects_over_sasl(recipe_server, zkelect_bin, test_env):
    hosts, d = recipe_server
    tlsbed.elect_three_and_hand_over(zkelect_bin, test_env, hosts, f"/recipe/e-{os.getpid()}",
                                     4000, _keys(d, "alice", PASSWORD), "with SASL")
    r = subprocess.run([str(zkelect_bin), "status", "--connect", hosts, "--path", "/recipe/x",
                        "--connect-timeout-ms", "8000"], env=test_env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 5 and "requires SASL" in r.stderr, (r.returncode, r.stderr)


def test_what_the_failure_table_says_of_wrong_and_unknown_users(recipe_server, zkelect_bin,
                                                                 test_env):
    hosts, d = recipe_server
    r = _candidate(zkelect_bin, test_env, hosts, _keys(d, "alice", "Wr0ng-" + PASSWORD))
    assert r.returncode == 5 and "refused SASL authentication" in r.stderr, r.stderr
    # After alice authenticated (the election above, and this candidate):
    r = _candidate(zkelect_bin, test_env, hosts, _keys(d, "alice", PASSWORD))
    assert r.returncode == 0, r.stderr
    row = next(l for l in DOC.read_text().splitlines()
               if l.startswith("| a user the servers do not know"))
    other = _candidate(zkelect_bin, test_env, hosts, _keys(d, "bob", "Other-" + PASSWORD))
    assert other.returncode == 5 and "refused SASL authentication" in other.stderr, other.stderr
    assert "refused as a wrong password" in row, row
    # With alice's password, 3.8.0 lets bob in, as the row says.
    unknown = subprocess.run([str(zkelect_bin), "status", "--connect", hosts, "--path", "/recipe/x",
                              "--connect-timeout-ms", "8000", *_keys(d, "bob", PASSWORD)],
                             env=test_env, capture_output=True, text=True, timeout=60)
    if unknown.returncode == 0:
        assert "does let it in" in row, (row, unknown.stdout)
    else:
        assert unknown.returncode == 5 and "does let it in" not in row, (row, unknown.stderr)

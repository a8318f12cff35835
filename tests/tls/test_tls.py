"""TLS to ZooKeeper with Debian's client, which has no TLS of its own: the
servers listen only on a secureClientPort (Netty; keystore and truststore
made with keytool here), and candidates reach them through a local stunnel4
client tunnel. An election and a failover run over it; the plain client
port is closed, so nothing reaches ZooKeeper without TLS."""

import os
import re
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import tlsbed
from bed.toolutil import Candidates, parse_event, set_tls_ca
from bed.zkbed import Ensemble

HERE = Path(__file__).resolve().parent

SESSION_MS = 2000


@pytest.fixture(scope="module")
def tls_bed():
    d = tempfile.mkdtemp(prefix="zkelect-tls-")
    keys = tlsbed.make_keys(d)
    ens = Ensemble(n=3, tick_ms=200, tls=keys, plain_port=False)
    tun = None
    try:
        ens.start()
        tun = tlsbed.Tunnel(d, [ens.secure_port(i) for i in range(3)], keys["cafile"]).start()
        yield ens, tun, keys
    finally:
        if tun:
            tun.stop()
        ens.stop()
        subprocess.run(["rm", "-rf", d], check=False)


def _plain_handshake(port, timeout=5.0):
    """A ZooKeeper ConnectRequest in the clear; the reply or the failure."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.settimeout(timeout)
        body = struct.pack(">iqiqi16s?", 0, 0, 10000, 0, 16, b"\0" * 16, False)
        s.sendall(struct.pack(">i", len(body)) + body)
        try:
            got = s.recv(64)
        except (ConnectionResetError, socket.timeout) as e:
            return f"failed: {e!r}"
        return got


def test_plain_client_port_is_closed(tls_bed):
    ens, tun, keys = tls_bed
    for i in range(3):
        with open(os.path.join(os.path.dirname(ens.log_path(i)), "zoo.cfg")) as f:
            cfg = f.read()
        assert "\nclientPort=" not in cfg and "secureClientPort=" in cfg, cfg
        # The server's own view (asked over TLS): no plain port bound.
        conf = ens.four(i, "conf")
        assert f"secureClientPort={ens.secure_port(i)}" in conf, conf
        assert "clientPort=0" in conf or "\nclientPort=" not in conf, conf
        # A client speaking plain ZooKeeper to the only port gets no session.
        got = _plain_handshake(ens.secure_port(i))
        assert not (isinstance(got, bytes) and len(got) >= 16 and
                    struct.unpack(">iiq", got[:16])[2] != 0), got


def test_libzkelect_without_tunnel_does_not_connect(tls_bed, zkelect_bin, test_env):
    ens, tun, keys = tls_bed
    r = subprocess.run([str(zkelect_bin), "candidate", "--connect", ens.secure_connect_string,
                        "--path", "/tls/never", "--first-id", "1", "--count", "1",
                        "--session-timeout-ms", "2000", "--connect-timeout-ms", "2000"],
                       env=test_env, capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert "EVENT CONNECTED" not in r.stdout


def _client_has_tls(build_dir):
    """Whether this build's ZooKeeper client speaks TLS, told from the
    outside: libzkelect linked to a system libzookeeper-mt that has no
    zookeeper_init_ssl has none; the bundled client (no libzookeeper-mt
    linked) has it."""
    lib = str(build_dir / "capi" / "libzkelect.so.1")
    ldd = subprocess.run(["ldd", lib], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"libzookeeper_mt\.so\S* => (\S+)", ldd)
    if not m:
        return True
    syms = subprocess.run(["nm", "-D", "--defined-only", m.group(1)], capture_output=True,
                          text=True, timeout=60).stdout
    return " zookeeper_init_ssl" in syms


def test_tls_keys_follow_the_client_enotsup_naming_the_tunnel_without_tls(build_dir):
    rc, msg = set_tls_ca(build_dir / "capi" / "libzkelect.so.1")
    if _client_has_tls(build_dir):
        assert rc == 0, msg
        return
    assert rc == -9, rc  # ZKELECT_ENOTSUP
    assert "zk.tls.ca" in msg and "stunnel" in msg and "docs/tls.md" in msg, msg


def test_election_and_failover_over_tls_tunnel(tls_bed, zkelect_bin, test_env):
    ens, tun, keys = tls_bed
    path = f"/tls/election-{os.getpid()}"
    c = Candidates(zkelect_bin, test_env, tun.connect_string, path, ["1", "2", "3"], SESSION_MS)
    try:
        first, first_token = tlsbed.elect_three(c, "through the tunnel")

        # Failover 1: the leader's process dies; ZooKeeper expires its
        # session and a follower takes over, all through TLS.
        c.procs[first].kill()
        ev = c.wait(lambda p, l: p != first and l and (parse_event(l) or ("",))[0] == "LEADER"
                    and parse_event(l), 20, "a new leader after SIGKILL of the first")
        second = ev[1]
        assert second != first
        assert int(ev[3]["token"], 0) > first_token

        # Failover 2: the ZooKeeper server the new leader may be talking to
        # goes away; the client moves to another tunnel port and the
        # election keeps exactly one leader.
        victim = ens.leader_index()
        ens.kill_server(victim)
        try:
            c.procs[second].send(f"resign {second}")
            ev = c.wait(lambda p, l: p not in (first, second) and l and
                        (parse_event(l) or ("",))[0] == "LEADER" and parse_event(l), 30,
                        "the third candidate leads after a resign with one server down")
            assert int(ev[3]["token"], 0) > first_token
        finally:
            ens.start_server(victim)
    finally:
        c.close()

"""Native TLS: candidates talk TLS to ZooKeeper themselves (zk.tls.*), with
the C client a default build bundles (-Dzookeeper=bundled: OpenSSL and Cyrus
SASL; docs/tls.md). Three servers with only a secureClientPort, their
certificate and the client's signed by a test CA; once with client
certificates not asked for (ssl.clientAuth=none), once required (need).

A build against Debian's client (-Dzookeeper=system) has no TLS: these tests
fail there on purpose, at the first zk.tls key (ZKELECT_ENOTSUP)."""

import os
import re
import subprocess
import tempfile
import time

import pytest

import tlsbed
from bed.toolutil import Candidates, parse_event, set_tls_ca
from bed.zkbed import Ensemble

SESSION_MS = 4000


@pytest.fixture(scope="module", params=["none", "need"])
def native_bed(request):
    d = tempfile.mkdtemp(prefix="zkelect-ntls-")
    keys = tlsbed.make_ca_keys(d, client_auth=request.param)
    ens = Ensemble(n=3, tick_ms=200, tls=keys, plain_port=False)
    try:
        ens.start()
        yield ens, keys
    finally:
        ens.stop()
        subprocess.run(["rm", "-rf", d], check=False)


def tls_set(ca, cert, key):
    return ["--set", f"zk.tls.ca={ca}", "--set", f"zk.tls.cert={cert}", "--set", f"zk.tls.key={key}"]


def test_this_build_has_native_tls(build_dir):
    rc, msg = set_tls_ca(build_dir / "capi" / "libzkelect.so.1")
    assert rc == 0, (f"zk.tls.ca refused ({rc}: {msg}): this build's ZooKeeper "
                     "client has no TLS; native TLS needs -Dzookeeper=bundled (or auto)")


def test_election_and_failover_over_native_tls(native_bed, zkelect_bin, test_env):
    ens, keys = native_bed
    path = f"/ntls/election-{keys['client_auth']}-{os.getpid()}"
    extra = tls_set(keys["cafile"], keys["client_cert"], keys["client_key"])
    # The leader resigns: a follower takes over on the same TLS sessions.
    tlsbed.elect_three_and_hand_over(zkelect_bin, test_env, ens.secure_connect_string, path,
                                     SESSION_MS, extra, "over TLS")
    # The servers saw TLS clients (Netty's secure port) and nothing else.
    for i in range(3):
        with open(os.path.join(os.path.dirname(ens.log_path(i)), "zoo.cfg")) as f:
            assert "\nclientPort=" not in f.read()


@pytest.mark.parametrize("creds", ["cert", "ca-only"])
def test_the_crash_guard_closes_a_killed_leaders_session_over_tls(native_bed, zkelect_bin,
                                                                  test_env, creds):
    """The crash guard connects as the client did (its CA, certificate and
    key: the servers require client certificates in one bed; its CA alone
    where they do not): a SIGKILLed leader's session is closed at once
    over TLS, and the next candidate leads long before the session
    timeout. While the guard connected in plain TCP only, it was off for
    TLS clients and this took T."""
    ens, keys = native_bed
    if creds == "ca-only" and keys["client_auth"] == "need":
        # Servers that require a client certificate refuse a CA-only client
        # before it has a session: nothing for the guard to close (./dev
        # test allows no skip; test_ca_only_client says more of the refusal).
        r, _took = _candidate(zkelect_bin, test_env, ens, ["--set", f"zk.tls.ca={keys['cafile']}"])
        assert r.returncode == 5 and "EVENT CONNECTED" not in r.stdout, (r.returncode, r.stderr)
        return
    path = f"/ntls/crash-{keys['client_auth']}-{creds}-{os.getpid()}"
    extra = (tls_set(keys["cafile"], keys["client_cert"], keys["client_key"]) if creds == "cert"
             else ["--set", f"zk.tls.ca={keys['cafile']}"])
    c = Candidates(zkelect_bin, test_env, ens.secure_connect_string, path, ["1", "2", "3"],
                   SESSION_MS, extra)
    try:
        first, first_token = tlsbed.elect_three(c, "over TLS")
        assert not [e for e in c.log if e[0] == "WARNING"], c.log
        killed_ns = time.time_ns()
        c.procs[first].proc.kill()
        ev = c.wait(lambda p, l: p != first and l and (parse_event(l) or ("",))[0] == "LEADER"
                    and parse_event(l), 20, "a new leader after the leader's SIGKILL")
        took_ms = (int(ev[2]) - killed_ns) / 1e6
        print(f"\n{keys['client_auth']}: next leader {took_ms:.0f} ms after the SIGKILL "
              f"(T = {SESSION_MS} ms)")
        assert int(ev[3]["token"], 0) > first_token
        assert took_ms < SESSION_MS / 4, took_ms
    finally:
        c.close()


def _candidate(zkelect_bin, test_env, ens, extra, connect_ms=8000):
    t0 = time.monotonic()
    r = subprocess.run([str(zkelect_bin), "candidate", "--connect", ens.secure_connect_string,
                        "--path", "/ntls/never", "--first-id", "1", "--count", "1",
                        "--session-timeout-ms", str(SESSION_MS),
                        "--connect-timeout-ms", str(connect_ms), *extra],
                       env=test_env, capture_output=True, text=True, timeout=60, input="join\n")
    return r, time.monotonic() - t0


def _handshakes_refused(ens, before):
    """How many TLS handshakes the servers logged as failed since `before`
    (their log lengths)."""
    n = 0
    for i in range(3):
        with open(ens.log_path(i), errors="replace") as f:
            f.seek(before[i])
            # One line per refused handshake, whichever side refused.
            n += len(re.findall(r"Caused by: javax.net.ssl.SSLHandshakeException", f.read()))
    return n


def _log_sizes(ens):
    return [os.path.getsize(ens.log_path(i)) for i in range(3)]


def test_untrusted_server_certificate_fails_with_eauth_and_no_storm(native_bed, zkelect_bin,
                                                                    test_env):
    ens, keys = native_bed
    before = _log_sizes(ens)
    r, took = _candidate(zkelect_bin, test_env, ens,
                         tls_set(keys["other_ca"], keys["client_cert"], keys["client_key"]))
    # Exit 5 (denied), not 3 (no connection within the timeout), and early.
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "EVENT CONNECTED" not in r.stdout
    assert "ZKELECT_EAUTH" in r.stderr and "certificate" in r.stderr, r.stderr
    assert keys["other_ca"] in r.stderr and "zk.tls.ca" in r.stderr, r.stderr
    assert took < 5, took
    time.sleep(0.5)  # the servers' logs
    # One probe per server at most: libzookeeper never got to retry.
    assert _handshakes_refused(ens, before) <= 3, _handshakes_refused(ens, before)


def test_client_certificate_the_servers_do_not_trust(native_bed, zkelect_bin, test_env):
    ens, keys = native_bed
    r, took = _candidate(zkelect_bin, test_env, ens,
                         tls_set(keys["cafile"], keys["rogue_cert"], keys["rogue_key"]))
    if keys["client_auth"] == "none":
        # Not asked for, not checked: the session is granted.
        assert "EVENT CONNECTED" in r.stdout, (r.returncode, r.stdout, r.stderr)
        return
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "EVENT CONNECTED" not in r.stdout
    assert "ZKELECT_EAUTH" in r.stderr and "client certificate" in r.stderr, r.stderr
    assert took < 5, took


def test_unreadable_key_file_is_a_usage_error(zkelect_bin, test_env, tmp_path):
    # The files are read before any server is asked: no ensemble needed.
    bad = tmp_path / "not-a-key.pem"
    bad.write_text("not a key\n")
    here = tmp_path / "ca.pem"
    here.write_text("")
    t0 = time.monotonic()
    r = subprocess.run([str(zkelect_bin), "candidate", "--connect", "127.0.0.1:1",
                        "--path", "/ntls/never", "--first-id", "1", "--count", "1",
                        *tls_set(str(here), str(bad), str(bad))],
                       env=test_env, capture_output=True, text=True, timeout=60, input="")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "zk.tls.ca" in r.stderr and str(here) in r.stderr, r.stderr
    assert time.monotonic() - t0 < 5


def test_ca_only_client(native_bed, zkelect_bin, test_env):
    """zk.tls.ca alone: TLS that checks the servers and presents no client
    certificate (the bundled client's patch, zkclient/patches/). Servers
    that do not ask for one (ssl.clientAuth=none) elect with it, as kazoo
    and ZooKeeper's Java client connect; servers that require one refuse
    it at once with a message that says to set zk.tls.cert and
    zk.tls.key, not after a connect timeout."""
    ens, keys = native_bed
    ca_only = ["--set", f"zk.tls.ca={keys['cafile']}"]
    if keys["client_auth"] == "none":
        path = f"/ntls/ca-only-{os.getpid()}"
        tlsbed.elect_three_and_hand_over(zkelect_bin, test_env, ens.secure_connect_string, path,
                                         SESSION_MS, ca_only, "over TLS with only a CA")
        return
    r, took = _candidate(zkelect_bin, test_env, ens, ca_only)
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "EVENT CONNECTED" not in r.stdout
    assert "ZKELECT_EAUTH" in r.stderr and "client certificate" in r.stderr, r.stderr
    assert "zk.tls.cert" in r.stderr and "zk.tls.key" in r.stderr, r.stderr
    assert took < 5, took


def test_a_plain_client_at_a_tls_port_is_told_so(native_bed, zkelect_bin, test_env):
    """A client without zk.tls.* pointed at a TLS-only port gets no session
    (the server closes a plain handshake without a word): at its connect
    timeout it is told that the port answers in TLS, and what to set, not
    only that it timed out. A plain port that is merely unreachable says
    nothing of TLS."""
    ens, _keys = native_bed
    r = subprocess.run([str(zkelect_bin), "status", "--connect", ens.secure_connect_string,
                        "--path", "/x", "--connect-timeout-ms", "1500"], env=test_env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, (r.returncode, r.stderr)
    first = ens.secure_connect_string.split(",")[0]
    assert f"{first} answers in TLS" in r.stderr and "zk.tls.ca" in r.stderr, r.stderr
    from bed.zkbed import free_port
    r = subprocess.run([str(zkelect_bin), "status", "--connect", f"127.0.0.1:{free_port()}",
                        "--path", "/x", "--connect-timeout-ms", "800"], env=test_env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "TLS" not in r.stderr, r.stderr

"""SASL to ZooKeeper (zk.sasl.*) against real servers that require it
(enforce.auth.schemes=sasl): DIGEST-MD5 from a JAAS file, on the plain port
and over TLS (a TLS-only server), and the ways it fails: a wrong password,
no SASL at all against a server that requires it. Kerberos (GSSAPI) is in
test_kerberos.py. docs/security.md describes both set-ups.

A build against Debian's client (-Dzookeeper=system) has no SASL: these
tests fail there on purpose, at the first zk.sasl key (ZKELECT_ENOTSUP)."""

import ctypes
import os
import subprocess
import tempfile
import time

import pytest

import saslbed
from bed.toolutil import Candidates
from bed.zkbed import Ensemble
from tls import tlsbed

SESSION_MS = 4000
PASSWORD = "s3cret-Digest-pw"


@pytest.fixture(scope="module")
def secrets_dir():
    d = tempfile.mkdtemp(prefix="zkelect-sasl-")
    yield d
    subprocess.run(["rm", "-rf", d], check=False)


def _bed(secrets_dir, **kw):
    flags = saslbed.digest_jaas(secrets_dir, {"alice": PASSWORD, "bob": PASSWORD + "-bob"})
    return Ensemble(n=1, tick_ms=200, extra_cfg=saslbed.ENFORCE, jvm_flags=flags, **kw)


@pytest.fixture(scope="module")
def digest_bed(secrets_dir):
    ens = _bed(secrets_dir)
    try:
        ens.start()
        yield ens
    finally:
        ens.stop()


@pytest.fixture(scope="module")
def tls_digest_bed(secrets_dir):
    keys = tlsbed.make_ca_keys(secrets_dir)
    ens = _bed(secrets_dir, tls=keys, plain_port=False)
    try:
        ens.start()
        yield ens, keys
    finally:
        ens.stop()


def sasl_set(secrets_dir, user="alice", password=PASSWORD):
    pw = saslbed.password_file(secrets_dir, f"pw-{user}-{len(password)}", password)
    return ["--set", "zk.sasl.mechanism=DIGEST-MD5", "--set", f"zk.sasl.user={user}",
            "--set", f"zk.sasl.password.file={pw}"]


def tls_set(keys):
    return ["--set", f"zk.tls.ca={keys['cafile']}", "--set", f"zk.tls.cert={keys['client_cert']}",
            "--set", f"zk.tls.key={keys['client_key']}"]


def _candidate(zkelect_bin, test_env, hosts, extra, stdin="join\n", path="/sasl/never",
               timeout=60):
    t0 = time.monotonic()
    r = subprocess.run([str(zkelect_bin), "candidate", "--connect", hosts, "--path", path,
                        "--first-id", "1", "--count", "1", "--session-timeout-ms", str(SESSION_MS),
                        "--connect-timeout-ms", "8000", *extra],
                       env=test_env, capture_output=True, text=True, timeout=timeout, input=stdin)
    return r, time.monotonic() - t0


def test_this_build_has_sasl(build_dir):
    lib = ctypes.CDLL(str(build_dir / "capi" / "libzkelect.so.1"))
    lib.zkelect_conf_new.restype = ctypes.c_void_p
    lib.zkelect_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.c_char_p, ctypes.c_size_t]
    lib.zkelect_conf_destroy.argtypes = [ctypes.c_void_p]
    conf = lib.zkelect_conf_new()
    try:
        err = ctypes.create_string_buffer(512)
        rc = lib.zkelect_conf_set(conf, b"zk.sasl.mechanism", b"DIGEST-MD5", err, 512)
    finally:
        lib.zkelect_conf_destroy(conf)
    assert rc == 0, (f"zk.sasl.mechanism refused ({rc}: {err.value!r}): this build's ZooKeeper "
                     "client has no SASL; it needs -Dzookeeper=bundled (or auto)")


def test_election_and_failover_over_digest_md5(digest_bed, secrets_dir, zkelect_bin, test_env):
    before = saslbed.log_sizes(digest_bed)
    tlsbed.elect_three_and_hand_over(zkelect_bin, test_env, digest_bed.connect_string,
                                     f"/sasl/election-{os.getpid()}", SESSION_MS,
                                     sasl_set(secrets_dir), "with SASL")
    # Every session authenticated: the server closed none for want of SASL.
    assert saslbed.refusals(digest_bed, before) == 0


def _kazoo(hosts, user, password):
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=hosts, timeout=10, sasl_options={
        "mechanism": "DIGEST-MD5", "username": user, "password": password})
    zk.start(timeout=10)
    return zk


def test_creator_acl_is_the_sasl_identity(digest_bed, secrets_dir, zkelect_bin, test_env):
    from kazoo.exceptions import NoAuthError
    path = f"/sasl/acl-{os.getpid()}"
    c = Candidates(zkelect_bin, test_env, digest_bed.connect_string, path, ["1"], SESSION_MS,
                   sasl_set(secrets_dir) + ["--set", "election.acl=creator"])
    clients = []
    try:
        c.send_all("join")
        c.wait(lambda p, l: l is not None and l.startswith("EVENT LEADER"), 20, "a leader")
        alice = _kazoo(digest_bed.connect_string, "alice", PASSWORD)
        clients.append(alice)
        (node,) = alice.get_children(path)
        for p in (path, f"{path}/{node}"):
            acls, _ = alice.get_acls(p)
            assert [(a.id.scheme, a.id.id) for a in acls] == [("sasl", "alice")], (p, acls)
        # Another SASL user of the same server may not even list them.
        bob = _kazoo(digest_bed.connect_string, "bob", PASSWORD + "-bob")
        clients.append(bob)
        with pytest.raises(NoAuthError):
            bob.get_children(path)
    finally:
        c.close()
        for zk in clients:
            zk.stop()
            zk.close()


def test_wrong_password_exits_5_and_prints_no_secret(digest_bed, secrets_dir, zkelect_bin,
                                                     test_env):
    wrong = "Wr0ng-" + PASSWORD
    before = saslbed.log_sizes(digest_bed)
    r, took = _candidate(zkelect_bin, test_env, digest_bed.connect_string,
                         sasl_set(secrets_dir, password=wrong) + ["--verbose"])
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "EVENT CONNECTED" not in r.stdout
    assert "ZKELECT_EAUTH" in r.stderr and "refused SASL authentication" in r.stderr, r.stderr
    assert "DIGEST-MD5" in r.stderr and "alice" in r.stderr, r.stderr
    assert saslbed.refusals(digest_bed, before) == 1
    # Not in what the command printed, even with the ZooKeeper client's log on.
    assert wrong not in r.stdout + r.stderr and PASSWORD not in r.stdout + r.stderr
    assert took < 5, took
    # Nor in what config shows.
    c = subprocess.run([str(zkelect_bin), "config", "--connect", digest_bed.connect_string,
                        *sasl_set(secrets_dir, password=wrong)],
                       env=test_env, capture_output=True, text=True, timeout=30)
    assert c.returncode == 0, c.stderr
    assert "zk.sasl.password.file" in c.stdout and wrong not in c.stdout + c.stderr


def test_no_sasl_against_a_server_that_requires_it(digest_bed, zkelect_bin, test_env):
    before = saslbed.log_sizes(digest_bed)
    t0 = time.monotonic()
    r = subprocess.run([str(zkelect_bin), "run", "--connect", digest_bed.connect_string,
                        "--path", f"/sasl/run-{os.getpid()}", "--session-timeout-ms",
                        str(SESSION_MS), "--", "sleep", "30"],
                       env=test_env, capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "requires SASL" in r.stderr and "zk.sasl.mechanism" in r.stderr, r.stderr
    assert took < 5, took
    s = subprocess.run([str(zkelect_bin), "status", "--connect", digest_bed.connect_string,
                        "--path", "/sasl/x"],
                       env=test_env, capture_output=True, text=True, timeout=60)
    assert s.returncode == 5, (s.returncode, s.stdout, s.stderr)
    assert "ZKELECT_EAUTH" in s.stderr and "requires SASL" in s.stderr, s.stderr
    time.sleep(0.3)  # the server's log
    # No storm: a handful of refused sessions (each client's, and at most
    # one probe of its own each), not one every 65 ms.
    assert saslbed.refusals(digest_bed, before) <= 6, saslbed.refusals(digest_bed, before)


def test_unknown_mechanism_and_unreadable_password_file(zkelect_bin, test_env, secrets_dir):
    # Known before any server is asked: no ensemble needed.
    r, took = _candidate(zkelect_bin, test_env, "127.0.0.1:1",
                         ["--set", "zk.sasl.mechanism=NO-SUCH-MECH"], stdin="")
    assert r.returncode != 0 and "NO-SUCH-MECH" in r.stderr, (r.returncode, r.stderr)
    assert "libsasl2-modules" in r.stderr, r.stderr
    missing = os.path.join(secrets_dir, "missing-password")
    r, took = _candidate(zkelect_bin, test_env, "127.0.0.1:1",
                         ["--set", "zk.sasl.mechanism=DIGEST-MD5", "--set", "zk.sasl.user=alice",
                          "--set", f"zk.sasl.password.file={missing}"], stdin="")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "zk.sasl.password.file" in r.stderr and missing in r.stderr, r.stderr
    assert took < 5


def test_tls_and_sasl_together(tls_digest_bed, secrets_dir, zkelect_bin, test_env):
    """The issue's case: `zkelect run` with zk.tls.* and zk.sasl.* leads over
    a TLS-only server that requires SASL; without SASL it is refused."""
    ens, keys = tls_digest_bed
    hosts = ens.secure_connect_string
    before = saslbed.log_sizes(ens)
    path = f"/sasl/tls-run-{os.getpid()}"
    r = subprocess.run([str(zkelect_bin), "run", "--connect", hosts, "--path", path,
                        "--session-timeout-ms", str(SESSION_MS), *tls_set(keys),
                        *sasl_set(secrets_dir), "--", "sh", "-c", "echo LEADING-NOW"],
                       env=test_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert "LEADING-NOW" in r.stdout, (r.stdout, r.stderr)
    assert saslbed.refusals(ens, before) == 0
    # Without zk.sasl.*: refused with the cause, over TLS too.
    before = saslbed.log_sizes(ens)
    t0 = time.monotonic()
    r = subprocess.run([str(zkelect_bin), "run", "--connect", hosts, "--path", path,
                        "--session-timeout-ms", str(SESSION_MS), *tls_set(keys),
                        "--", "sleep", "30"],
                       env=test_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "requires SASL" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 5
    time.sleep(0.3)  # the server's log
    assert saslbed.refusals(ens, before) <= 3, saslbed.refusals(ens, before)


def test_the_crash_guard_runs_with_sasl(digest_bed, secrets_dir, zkelect_bin, test_env):
    """The guard authenticates as its owner did (test_sasl_guard.py hands
    over through it): with zk.sasl.* no WARNING says it is off, and
    crash.guard=on is taken."""
    r, _ = _candidate(zkelect_bin, test_env, digest_bed.connect_string, sasl_set(secrets_dir),
                      stdin="")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert "crash guard" not in r.stdout, r.stdout
    r, _ = _candidate(zkelect_bin, test_env, digest_bed.connect_string,
                      sasl_set(secrets_dir) + ["--set", "crash.guard=on"], stdin="")
    assert r.returncode == 0 and "crash.guard" not in r.stderr, (r.returncode, r.stderr)

"""The strictest ensemble of issue 36, as production ensembles under Kafka or
HBase are set up: three servers with only a secureClientPort (Netty),
client certificates required (ssl.clientAuth=need), and SASL required of
every client (enforce.auth.schemes=sasl), DIGEST-MD5 through a JAAS file
(saslbed.secure_ensemble). One ensemble for the module: starting three TLS
servers is most of its cost.

On it: the bed is what it claims (no plain port; a client without SASL or
with a certificate the servers do not trust is refused, exit 5); and the
server logged no refusal of the clients that had everything.

A build against Debian's client (-Dzookeeper=system) has neither TLS nor
SASL: these tests fail there on purpose, at the first zk.tls key."""

import os
import subprocess
import tempfile
import time

import pytest

import saslbed

SESSION_MS = 4000
REFUSED_RUNS = 6


@pytest.fixture(scope="module")
def secure_bed():
    """(ensemble, keys): the running ensemble and the client's settings
    ({conf key: value}: zk.tls.*, zk.sasl.*)."""
    d = tempfile.mkdtemp(prefix="zkelect-secure-")
    ens, keys = saslbed.secure_ensemble(d)
    try:
        ens.start()
        yield ens, keys
    finally:
        ens.stop()
        subprocess.run(["rm", "-rf", d], check=False)


def _status(zkelect_bin, test_env, hosts, keys):
    t0 = time.monotonic()
    r = subprocess.run([str(zkelect_bin), "status", "--connect", hosts, "--path", "/secure/x",
                        "--connect-timeout-ms", "8000", *saslbed.as_set_args(keys)],
                       env=test_env, capture_output=True, text=True, timeout=60)
    return r, time.monotonic() - t0


def test_the_bed_takes_tls_with_a_client_certificate_and_sasl_only(secure_bed, zkelect_bin,
                                                                     test_env):
    ens, keys = secure_bed
    for i in range(ens.n):
        with open(os.path.join(os.path.dirname(ens.log_path(i)), "zoo.cfg")) as f:
            cfg = f.read()
        assert "\nclientPort=" not in cfg and "\nsecureClientPort=" in cfg
        assert "\nssl.clientAuth=need\n" in cfg and "\nenforce.auth.schemes=sasl\n" in cfg
    hosts = ens.secure_connect_string
    before = saslbed.log_sizes(ens)
    r, _ = _status(zkelect_bin, test_env, hosts, keys)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert saslbed.refusals(ens, before) == 0
    # Without SASL: refused for it. Each time: the server closes the TLS
    # connection while the client's I/O thread may still write to it, and a
    # SIGPIPE from OpenSSL's write(2) killed about every other such `status`
    # (exit -13) until the library blocked it (cxx/no_sigpipe.h).
    tls_only = {k: v for k, v in keys.items() if k.startswith("zk.tls.")}
    for _ in range(REFUSED_RUNS):
        r, took = _status(zkelect_bin, test_env, hosts, tls_only)
        assert r.returncode == 5 and "requires SASL" in r.stderr, (r.returncode, r.stderr)
        assert took < 5, took
    # A client certificate of a CA the servers do not trust: refused at the
    # handshake, before SASL.
    d = os.path.dirname(keys["zk.tls.cert"])
    rogue = dict(keys, **{"zk.tls.cert": os.path.join(d, "rogue.pem"),
                          "zk.tls.key": os.path.join(d, "rogue.key")})
    r, took = _status(zkelect_bin, test_env, hosts, rogue)
    assert r.returncode == 5 and "client certificate" in r.stderr, (r.returncode, r.stderr)
    assert took < 5, took

"""The strictest ensemble of issue 36, as production ensembles under Kafka or
HBase are set up: three servers with only a secureClientPort (Netty),
client certificates required (ssl.clientAuth=need), and SASL required of
every client (enforce.auth.schemes=sasl), DIGEST-MD5 through a JAAS file
(saslbed.secure_ensemble). One ensemble for the module: starting three TLS
servers is most of its cost.

On it: the bed is what it claims (no plain port; a client without SASL or
with a certificate the servers do not trust is refused, exit 5); one
election of a candidate of every language (bed/crosslang.py's programs,
given zk.tls.* and zk.sasl.* as keys) and the CLI, each elected in turn;
and the servers logged no refusal of the clients that had everything.

A build against Debian's client (-Dzookeeper=system) has neither TLS nor
SASL: these tests fail there on purpose, at the first zk.tls key."""

import os
import re
import subprocess
import tempfile
import time

import pytest

import saslbed
from bed import crosslang
from bed.participant import Participant, candidate_argv

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


def test_every_language_and_the_cli_lead_in_turn(secure_bed, crosslang_built, zkelect_bin,
                                                 test_env, tmp_path):
    """Go, Java, Lua, Rust, C and Python candidates (crosslang.ORDER) and a
    `zkelect candidate` join one election in that order; each leader
    resigns (the CLI's quits) and the next in line leads, with a greater
    fencing token, while the others answer is_leader 0."""
    ens, keys = secure_bed
    hosts = ens.secure_connect_string
    path = f"/secure/crosslang-{os.getpid()}"
    progs = crosslang_built(test_env)
    before = saslbed.log_sizes(ens)
    cands, cli = [], None
    try:
        crosslang.start_all(progs, test_env, hosts, path, tmp_path, cands,
                            [f"{k}={v}" for k, v in keys.items()])
        # One at a time, so the queue order is ORDER (a WARNING may come
        # first: the crash guard is off with SASL).
        for i, c in enumerate(cands):
            assert c.cmd("join") == "OK", c.name
            c.events_until("ELECTED" if i == 0 else "FOLLOWING")
        cli = Participant(candidate_argv(zkelect_bin, hosts, path, 7, 1, SESSION_MS,
                                         saslbed.as_set_args(keys)),
                          test_env, name="zkelect candidate", stderr="pipe")
        cli.wait_event("CONNECTED", "7", 30)
        cli.send("join")
        cli.wait_event("FOLLOWER", "7", 20)
        led, last_token = [], 0
        for i, leader in enumerate(cands):
            reply = leader.cmd("await 20000", timeout=60)
            m = re.fullmatch(r"LEADER (\d+)", reply)
            assert m, f"{leader.name} did not lead in its turn over TLS + SASL: {reply!r}"
            assert int(m.group(1)) > last_token, (leader.name, m.group(1), last_token)
            last_token = int(m.group(1))
            for c in cands[i + 1:]:
                assert c.cmd("leader?") == "IS 0", f"{c.name} while {leader.name} leads"
            assert cli.status("7")[2] == 0
            led.append(leader.name)
            assert leader.cmd("resign") == "OK", leader.name
        ev = cli.wait_for_event("LEADER", "7", 20)
        assert int(ev.kv["token"], 0) > last_token, (ev.kv, last_token)
        led.append("cli")
        assert cli.quit() == 0
        cli = None
        crosslang.quit_all(cands)
    finally:
        for c in cands:
            c.quit()
        if cli:
            cli.close()
    assert led == crosslang.ORDER + ["cli"], led
    time.sleep(0.3)  # the servers' logs
    # Every session of the seven authenticated: none closed for want of SASL.
    assert saslbed.refusals(ens, before) == 0

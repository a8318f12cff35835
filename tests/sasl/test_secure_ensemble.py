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
Then the fault suite's core over TLS + SASL (tests/fault has each over plain
TCP): a leader stopped (SIGSTOP) past its session answers is_leader 0 first
when it resumes, and the next leads only after it stopped; a leader cut off
(fault proxies in front of the TLS ports, forwarding the bytes they cannot
read) past its session gives up before the next leads and rejoins on a new
session, authenticated again; the server of the leader is killed: the leader
moves, its lease holds, and a hand-over still works.

Not here: a lost create (a create whose reply is dropped). The fault proxy
finds the reply to drop by reading ZooKeeper's framing, which TLS hides
from it; docs/security.md says so.

A build against Debian's client (-Dzookeeper=system) has neither TLS nor
SASL: these tests fail there on purpose, at the first zk.tls key."""

import json
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

import saslbed
from bed import crosslang
from bed.faultproxy import ProxiedEnsemble
from bed.participant import Participant, candidate_argv
# The fault suite's helpers, shared through bed: the Sampler of is_leader,
# the safety checks, the paused_leader driver.
from bed.candidates import Candidate, Sampler
from bed.faultutil import PausedLeader, check_safety, lease_ms, ms, report, wait_for

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
    # (exit -13) until the library blocked it (cxx/probe/no_sigpipe.h).
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
        # One at a time, so the queue order is ORDER.
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


def test_a_certificate_for_another_name_is_refused(secure_bed, zkelect_bin, test_env):
    """The servers' certificate names 127.0.0.1 only (subjectAltName
    IP:127.0.0.1). Reached as `localhost`, the name does not match: the
    client must not take it (ZooKeeper's Java client would not), exit 5
    naming the mismatch; by the address it names, it is taken, and by the
    name with zk.tls.hostname.verify=false too. libzookeeper 3.8 checks no
    name, so before the library's own check this connected."""
    ens, keys = secure_bed
    port = ens.secure_port(0)
    r, took = _status(zkelect_bin, test_env, f"localhost:{port}", keys)
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "ZKELECT_EAUTH" in r.stderr, r.stderr
    assert f"localhost:{port}" in r.stderr and "not for the name localhost" in r.stderr, r.stderr
    assert "hostname mismatch" in r.stderr and "zk.tls.hostname.verify" in r.stderr, r.stderr
    assert took < 5, took
    r, _ = _status(zkelect_bin, test_env, f"127.0.0.1:{port}", keys)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    # The check turned off, as ZooKeeper's Java client can
    # (zookeeper.ssl.hostnameVerification=false): the chain alone, accepted.
    r, _ = _status(zkelect_bin, test_env, f"localhost:{port}",
                   dict(keys, **{"zk.tls.hostname.verify": "false"}))
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)


# ------------------------------------------------- the fault suite's core


def _spawn(zkelect_bin, test_env, tmp_path, keys, hosts, path, pid, T):
    return Candidate(zkelect_bin, hosts, path, pid, T, test_env, log_dir=str(tmp_path),
                     extra_args=saslbed.as_set_args(keys))


def _follower(c, pid):
    c.wait_event("CONNECTED", pid, 15)
    c.send("join")
    c.wait_event("FOLLOWER", pid, 15)


def _leader(c, pid):
    c.wait_event("CONNECTED", pid, 15)
    c.send("join")
    c.wait_event("LEADER", pid, 15)


def test_a_stopped_leader_answers_0_first_and_the_next_leads_after(
        secure_bed, zkelect_bin, test_env, paused_leader_bin, tmp_path):
    """SIGSTOP of the leader's process past its session (T = 2 s): the
    follower leads only after the stop, and the first is_leader the leader
    asks after SIGCONT answers 0 (the lease's clock, no word from the
    server needed); it is DEPOSED(lease_ended), its session EXPIRED, and it
    follows again on a new session, TLS and SASL again."""
    ens, keys = secure_bed
    T = 2000
    hosts = ens.secure_connect_string
    path = f"/secure/paused-{os.getpid()}"
    p = PausedLeader(paused_leader_bin, hosts, path, "1", T, test_env,
                     extra=[f"{k}={v}" for k, v in keys.items()])
    b = None
    try:
        ready = p.wait(lambda w: w[0] == "READY", 15, "READY")
        session0 = ready[1].split("=", 1)[1]
        p.wait_event("ELECTED", 15)
        p.wait(lambda w: w[:2] == ["FLIP", "1"], 5, "is_leader 1 in the loop")
        b = _spawn(zkelect_bin, test_env, tmp_path, keys, hosts, path, 2, T)
        _follower(b, "2")
        sampler = Sampler([(b, "2")]).start()
        try:
            sampler.wait_count("2", 0, 3, 5)
            m = p.mark()
            t_stop = time.time_ns()
            os.kill(p.proc.pid, signal.SIGSTOP)
            try:
                elected_ns = b.wait_event("LEADER", "2", 3 * T / 1000 + 10)
            finally:
                t_cont = time.time_ns()
                os.kill(p.proc.pid, signal.SIGCONT)
            after = p.wait(lambda w: w[0] == "AFTER", 5, "the first call after the pause",
                           since=m)
            dep = p.wait_event("DEPOSED", 5, since=m)
            p.wait_event("EXPIRED", 10, since=m)
            fol = p.wait_event("FOLLOWING", 15, since=m)
            sampler.wait_count("2", 1, 3, 5)
        finally:
            sampler.stop()
    finally:
        p.close()
        if b:
            b.close()
    report("secure_stopped_leader", session_timeout_ms=T, stopped_ms=ms(t_stop, t_cont),
           stop_to_next_LEADER_ms=ms(t_stop, elected_ns), first_is_leader_after=after[1],
           resume_to_FOLLOWING_ms=ms(t_cont, int(fol[2])))
    assert after[1] == "0", "the resumed leader answered 1 on its first is_leader call"
    assert dep[3] == "reason=lease_ended", dep
    assert fol[4].split("=", 1)[1] != session0, "rejoined on the old session"
    assert not [w for w in p.all("FLIP") if w[1] == "1" and int(w[2]) > t_stop]
    first_b = sampler.first("2", 1)
    assert first_b is not None and first_b[0] > t_stop
    assert not sampler.errors, sampler.errors[:3]


def test_a_leader_cut_off_past_its_session_gives_up_first(secure_bed, zkelect_bin, test_env,
                                                           tmp_path):
    """Every byte between the leader and the ensemble dropped (proxies in
    front of the TLS ports) for longer than its session: it answers 0 and
    says LOST before the follower leads; healed, it finds its session
    expired and follows on a new one."""
    ens, keys = secure_bed
    T = 2000
    path = f"/secure/cut-{os.getpid()}"
    proxies = ProxiedEnsemble([ens.secure_port(i) for i in range(ens.n)])
    a = b = None
    try:
        a = _spawn(zkelect_bin, test_env, tmp_path, keys, proxies.connect_string, path, 1, T)
        _leader(a, "1")
        b = _spawn(zkelect_bin, test_env, tmp_path, keys, ens.secure_connect_string, path, 2, T)
        _follower(b, "2")
        sampler = Sampler([(a, "1"), (b, "2")]).start()
        try:
            sampler.wait_count("1", 1, 5, 5)
            t0 = time.time_ns()
            proxies.blackhole()
            lost_ns = a.wait_event("LOST", "1", T / 1000 + 3)
            elected_ns = b.wait_event("LEADER", "2", 3 * T / 1000 + 10)
            m = a.mark()
            t_heal = time.time_ns()
            proxies.heal()
            rejoin_ns = a.wait_event("FOLLOWER", "1", 15, since=m)
            sampler.wait_count("1", 0, 3, 5)
        finally:
            sampler.stop()
        report("secure_leader_cut_off_past_session", session_timeout_ms=T,
               blackhole_to_LOST_ms=ms(t0, lost_ns), blackhole_to_next_LEADER_ms=ms(t0, elected_ns),
               heal_to_FOLLOWER_ms=ms(t_heal, rejoin_ns))
        assert lost_ns < elected_ns, "the old leader still claimed when the next was elected"
        first0 = sampler.first("1", 0, after_ns=t0)
        assert first0 is not None and first0[0] < elected_ns
        assert sampler.first("2", 1)[0] >= lost_ns
        check_safety(sampler, [a, b])
        assert a.quit() == 0 and b.quit() == 0
    finally:
        for c in (a, b):
            if c:
                c.close()
                c.kill()
        proxies.close()


def _participants(zkelect_bin, test_env, ens, keys, path):
    r = subprocess.run([str(zkelect_bin), "status", "--connect", ens.secure_connect_string,
                        "--path", path, "--json", *saslbed.as_set_args(keys)],
                       env=test_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [p["id"] for p in json.loads(r.stdout)["participants"]]


def test_a_create_whose_reply_is_lost_leaves_one_node(secure_bed, zkelect_bin, test_env,
                                                      tmp_path):
    """A create that lands while its reply is lost (every byte from the
    servers dropped, the connection reset after: the proxy cannot read TLS,
    so it loses all replies rather than the create's alone): the candidacy
    finds its node again by its id on the same session and holds one node,
    not two, and leads on it when its turn comes."""
    ens, keys = secure_bed
    T = 4000
    path = f"/secure/lostcreate-{os.getpid()}"
    proxies = ProxiedEnsemble([ens.secure_port(i) for i in range(ens.n)])
    a = b = None
    try:
        b = _spawn(zkelect_bin, test_env, tmp_path, keys, ens.secure_connect_string, path, 2, T)
        _leader(b, "2")
        a = _spawn(zkelect_bin, test_env, tmp_path, keys, proxies.connect_string, path, 1, T)
        a.wait_event("CONNECTED", "1", 15)
        proxies.deaf()
        m = a.mark()
        a.send("join")
        # The create landed (the servers list it); its reply went nowhere.
        wait_for(lambda: _participants(zkelect_bin, test_env, ens, keys, path) == ["2", "1"],
                 10, "a's node listed while its reply is lost")
        proxies.heal()  # resets the connection that lost bytes
        a.wait_event("FOLLOWER", "1", 3 * T / 1000, since=m)
        assert _participants(zkelect_bin, test_env, ens, keys, path) == ["2", "1"]
        b.send("resign 2")
        a.wait_event("LEADER", "1", 15, since=m)
        assert _participants(zkelect_bin, test_env, ens, keys, path)[0] == "1"
        assert "1" not in _participants(zkelect_bin, test_env, ens, keys, path)[1:]
        assert a.quit() == 0 and b.quit() == 0
    finally:
        for c in (a, b):
            if c:
                c.close()
                c.kill()
        proxies.close()


def _server_with_a_session(ens, indexes):
    """The one server of `indexes` that holds a client session (`cons`
    lists it with its sid), else None."""
    on = []
    for i in indexes:
        try:
            if "sid=0x" in ens.four(i, "cons"):
                on.append(i)
        except OSError:
            continue
    return on[0] if len(on) == 1 else None


def test_the_leaders_server_killed_lease_holds(secure_bed, zkelect_bin, test_env, tmp_path):
    """The leader reaches only the quorum's followers, the follower only the
    quorum's leader. The server the leader is on is killed: the leader moves
    to the other, TLS and SASL again, within its lease, and never answers 0;
    then it resigns and the follower leads. Last in the module: the killed
    server stays down."""
    ens, keys = secure_bed
    T = 4000
    path = f"/secure/kill-{os.getpid()}"
    ql = ens.leader_index()
    followers = [i for i in range(ens.n) if i != ql]
    a_hosts = ",".join(f"127.0.0.1:{ens.secure_port(i)}" for i in followers)
    a = _spawn(zkelect_bin, test_env, tmp_path, keys, a_hosts, path, 1, T)
    b = None
    try:
        a.wait_event("CONNECTED", "1", 15)
        a.send("join")
        token0 = a.wait_for_event("LEADER", "1", 15).kv["token"]
        b = _spawn(zkelect_bin, test_env, tmp_path, keys, f"127.0.0.1:{ens.secure_port(ql)}",
                   path, 2, T)
        _follower(b, "2")
        sampler = Sampler([(a, "1"), (b, "2")]).start()
        try:
            sampler.wait_count("1", 1, 5, 5)
            s1 = wait_for(lambda: _server_with_a_session(ens, followers), 10,
                          "the leader's server")
            m = a.mark()
            t_kill = time.time_ns()
            ens.kill_server(s1)
            rec_ns, _ = a.wait_info("1", "RECONNECTED", lease_ms(T) / 1000, since=m)
            sampler.wait_count("1", 1, sampler.count("1", 1) + 5, 5)
            assert sampler.count("1", 0) == 0, "the leader answered 0 while its lease ran"
            assert not a.events("LOST"), a.tail()
            assert a.events("LEADER", "1")[-1].kv["token"] == token0
            t_res = time.time_ns()
            a.send("resign 1")
            handover_ns = b.wait_event("LEADER", "2", 10)
            sampler.wait_count("2", 1, 3, 5)
        finally:
            sampler.stop()
        report("secure_leaders_server_killed", session_timeout_ms=T, lease_ms=lease_ms(T),
               killed=s1, kill_to_RECONNECTED_ms=ms(t_kill, rec_ns),
               resign_to_handover_ms=ms(t_res, handover_ns))
        check_safety(sampler, [a, b])
        assert a.quit() == 0 and b.quit() == 0
    finally:
        for c in (a, b):
            if c:
                c.close()
                c.kill()

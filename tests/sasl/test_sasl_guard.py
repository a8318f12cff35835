"""The crash guard on ensembles that require SASL (issue 51, item 7).

A server with enforce.auth.schemes=sasl answers an unauthenticated
connection's closeSession with -124 and drops it (checked first, on the
real server): a guard without credentials cannot close a dead owner's
session, and the next leader waits for the session timeout. The guard
authenticates as its owner did (the SASL record of the guard's protocol):
a leader's process SIGKILLed, the follower in another process leads far
below T = 6 s (bound 1 s; the time is printed: the issue asks 200 ms), on a DIGEST-MD5 server and on the strictest bed (three
TLS-only servers, client certificates and SASL required). With
crash.guard=off the same SIGKILL hands over only after T, which is what
every SASL user had before (the library kept the guard off with zk.sasl.*).

A build against Debian's client (-Dzookeeper=system) has no SASL: these
tests fail there on purpose (test_sasl.py says so)."""

import os
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest

import saslbed
from bed import guardsvc, zkbed
from bed.guardprocs import guards_of
from bed.participant import Participant, candidate_argv
from bed.zkbed import Ensemble

T_MS = 6000
# As tests/guard/test_crash_guard.py: the drain delay (100 ms) and a margin
# for a loaded machine, far below T, so that a hand-over after T fails. The
# issue's 200 ms is the figure printed (and ./dev bench's crash row): here
# 27-151 ms over DIGEST-MD5, 224-492 ms over TLS + DIGEST-MD5 with the
# machine's 2 cores at a load of 25 (TLS alone: 167-251 ms then).
BOUND_MS = 1000
PASSWORD = "s3cret-Guard-pw"


@pytest.fixture(scope="module")
def secrets_dir():
    d = tempfile.mkdtemp(prefix="zkelect-sasl-guard-")
    yield d
    subprocess.run(["rm", "-rf", d], check=False)


@pytest.fixture(scope="module")
def digest_bed(secrets_dir):
    """(connect string, client keys): one server on a plain port that
    requires DIGEST-MD5."""
    flags = saslbed.digest_jaas(secrets_dir, {"alice": PASSWORD})
    ens = Ensemble(n=1, tick_ms=200, extra_cfg=saslbed.ENFORCE, jvm_flags=flags)
    keys = {"zk.sasl.mechanism": "DIGEST-MD5", "zk.sasl.user": "alice",
            "zk.sasl.password.file": saslbed.password_file(secrets_dir, "pw-alice", PASSWORD)}
    try:
        ens.start()
        yield ens, ens.connect_string, keys
    finally:
        ens.stop()


@pytest.fixture(scope="module")
def secure_bed():
    """(connect string, client keys): three TLS-only servers requiring a
    client certificate and SASL (DIGEST-MD5)."""
    d = tempfile.mkdtemp(prefix="zkelect-secure-guard-")
    ens, keys = saslbed.secure_ensemble(d)
    try:
        ens.start()
        yield ens, ens.secure_connect_string, keys
    finally:
        ens.stop()
        subprocess.run(["rm", "-rf", d], check=False)


@pytest.fixture(params=["digest", "tls+digest"])
def bed(request):
    return request.getfixturevalue("digest_bed" if request.param == "digest" else "secure_bed")


@pytest.fixture
def pair(zkelect_bin, test_env):
    """pair(hosts, keys, path, leader_keys=None): the leader's process (id 1,
    leading) and the follower's (id 2, following), each its own client."""
    made = []

    def make(hosts, keys, path, leader_keys=None):
        lead = Participant(candidate_argv(zkelect_bin, hosts, path, 1, 1, T_MS,
                                          saslbed.as_set_args(leader_keys or keys)),
                           test_env, "leader", stderr="pipe")
        made.append(lead)
        m = lead.mark()
        lead.send("join")
        lead.wait_event(("LEADER",), "1", 30, since=m)
        fol = Participant(candidate_argv(zkelect_bin, hosts, path, 2, 1, T_MS,
                                         saslbed.as_set_args(keys)),
                          test_env, "follower", stderr="pipe")
        made.append(fol)
        m = fol.mark()
        fol.send("join")
        fol.wait_event(("FOLLOWER",), "2", 30, since=m)
        return lead, fol

    yield make
    for p in made:
        p.kill()
        p.close()


def _guarded(p, pid, want="1", timeout=5):
    """Waits until the participant's client says crash_guarded=want (its
    session reaches the guard's pipe just after the connect)."""
    deadline = time.monotonic() + timeout
    while True:
        m = p.mark()
        p.send(f"status {pid}")
        got = p.info(pid, "crash_guarded", 10, since=m)
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert got == want, f"participant {pid}: crash_guarded={got}"


def _handover_ms(lead, fol, timeout_s):
    m = fol.mark()
    t0 = time.time_ns()
    lead.proc.send_signal(signal.SIGKILL)
    try:
        t = fol.wait_event(("LEADER",), "2", timeout_s, since=m)
    except AssertionError:
        return None
    return (t - t0) / 1e6


def test_the_server_refuses_an_unauthenticated_close(digest_bed):
    """Why the guard must authenticate: the real server answers a
    closeSession without SASL with -124 (ZSESSIONCLOSEDREQUIRESASLAUTH)."""
    _, hosts, _ = digest_bed
    port = int(hosts.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.settimeout(5)
        zkbed._send_frame(s, struct.pack(">iqiqi16s?", 0, 0, T_MS, 0, 16, b"\0" * 16, False))
        zkbed._recv_frame(s)
        zkbed._send_frame(s, struct.pack(">ii", 2, -11))  # closeSession
        assert struct.unpack(">iqi", zkbed._recv_frame(s)[:16])[2] == zkbed.SASL_REQUIRED


def test_a_killed_leader_hands_over_at_once_over_sasl(bed, pair, zk_path):
    _, hosts, keys = bed
    lead, fol = pair(hosts, keys, zk_path)
    _guarded(lead, "1")
    ms = _handover_ms(lead, fol, 3)
    assert ms is not None, f"no handover within 3 s of SIGKILL over SASL (T = {T_MS} ms)"
    print(f"\nSIGKILL over SASL: handover {ms:.0f} ms (T = {T_MS} ms)")
    assert ms <= BOUND_MS, f"handover {ms:.0f} ms after SIGKILL over SASL (bound {BOUND_MS} ms)"


def test_a_killed_leader_hands_over_at_once_through_the_service_over_sasl(
        bed, pair, zk_path, tmp_path):
    """The guard service (zkelect-guard --serve, crash.guard.socket) takes
    the SASL record, and over TLS the TLS one, from its peer as a private
    guard takes them from its pipe, and closes the dead leader's session
    with them: a hand-over far below T, by the service (the leader started
    no guard of its own)."""
    _, hosts, keys = bed
    guard_bin = os.environ["ZKELECT_GUARD"]
    with guardsvc.services(guard_bin, tmp_path) as service:
        svc = service()
        lead, fol = pair(hosts, keys, zk_path,
                         leader_keys=dict(keys, **{"crash.guard.socket": svc.path}))
        _guarded(lead, "1")
        assert svc.workers(), "the service has no worker for the leader"
        assert guards_of(guard_bin, lead.proc.pid) == [], "a private guard too"
        ms = _handover_ms(lead, fol, 3)
        assert ms is not None, (f"no handover within 3 s of SIGKILL through the service "
                                f"(T = {T_MS} ms): {svc.log.read_text()[-2000:]}")
        print(f"\nSIGKILL through the service over SASL: handover {ms:.0f} ms (T = {T_MS} ms)")
        assert ms <= BOUND_MS, f"handover {ms:.0f} ms through the service (bound {BOUND_MS} ms)"


def test_crash_guard_off_keeps_the_session_timeout_over_sasl(digest_bed, pair, zk_path):
    """What every SASL user had before: no guard, no hand-over for T."""
    _, hosts, keys = digest_bed
    lead, fol = pair(hosts, keys, zk_path, leader_keys=dict(keys, **{"crash.guard": "off"}))
    _guarded(lead, "1", "0")
    ms = _handover_ms(lead, fol, 1.5)
    assert ms is None, f"handover {ms:.0f} ms after SIGKILL with crash.guard=off"

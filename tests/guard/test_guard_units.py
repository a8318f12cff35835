"""What ships to run the guard service: the systemd socket and service
units (guard/zkelect-guard.socket, guard/zkelect-guard.service.in, as the
build configures it) and the Kubernetes example
(docs/kubernetes/guard-sidecar.yaml).

The units pass `systemd-analyze verify`; the service started the way its
socket unit starts it (a listening socket passed on fd 3, LISTEN_FDS, here
by systemd-socket-activate) guards a candidate that names the socket, and
hands over within 1 s of its SIGKILL (tens of ms at idle); the example is valid YAML whose
sidecar listens where the app looks, in the directory they share.
"""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from bed.participant import Participant, candidate_argv

REPO = Path(__file__).resolve().parents[2]
T_MS = 6000
BOUND_MS = 1000     # as test_guard_service.py's: tens of ms at idle


def _units(build_dir, tmp_path):
    """The two units in tmp_path, the service's ExecStart on the build's
    guard (verify checks that the program is there)."""
    service = (build_dir / "guard" / "zkelect-guard.service").read_text()
    exec_line = next(l for l in service.splitlines() if l.startswith("ExecStart="))
    guard = exec_line.split("=", 1)[1].split()[0]
    assert guard.endswith("/zkelect/zkelect-guard"), exec_line
    service = service.replace(guard, str(build_dir / "guard" / "zkelect-guard"))
    (tmp_path / "zkelect-guard.service").write_text(service)
    shutil.copy(REPO / "guard" / "zkelect-guard.socket", tmp_path)
    return tmp_path / "zkelect-guard.socket", tmp_path / "zkelect-guard.service"


def test_the_systemd_units_verify(build_dir, tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.fail("systemd-analyze is missing (Debian's systemd package)")
    sock, svc = _units(build_dir, tmp_path)
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(sock), str(svc)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not r.stderr.strip() and not r.stdout.strip(), (r.stdout, r.stderr)
    text = sock.read_text()
    assert "ListenStream=/run/zkelect/guard.sock" in text
    assert "--serve" in svc.read_text()


def test_the_service_started_as_its_socket_unit_starts_it_guards(build_dir, zk, zk_path,
                                                                 zkelect_bin, test_env, tmp_path):
    if not shutil.which("systemd-socket-activate"):
        pytest.fail("systemd-socket-activate is missing (Debian's systemd package)")
    path = str(tmp_path / "guard.sock")
    svc = subprocess.Popen(["systemd-socket-activate", "-l", path,
                            str(build_dir / "guard" / "zkelect-guard"), "--serve"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    made = []
    try:
        deadline = time.monotonic() + 5
        while not os.path.exists(path):
            assert svc.poll() is None and time.monotonic() < deadline, "no socket"
            time.sleep(0.01)
        lead = Participant(candidate_argv(zkelect_bin, zk.connect_string, zk_path, 1, 1, T_MS,
                                          ["--set", f"crash.guard.socket={path}"]),
                           test_env, "leader", stderr="pipe")
        made.append(lead)
        m = lead.mark()
        lead.send("join")
        lead.wait_event(("LEADER",), "1", 20, since=m)
        fol = Participant(candidate_argv(zkelect_bin, zk.connect_string, zk_path, 2, 1, T_MS),
                          test_env, "follower", stderr="pipe")
        made.append(fol)
        m = fol.mark()
        fol.send("join")
        fol.wait_event(("FOLLOWER",), "2", 20, since=m)
        deadline = time.monotonic() + 10
        while True:
            m = lead.mark()
            lead.send("status 1")
            if lead.info("1", "crash_guarded", 10, since=m) == "1":
                break
            assert time.monotonic() < deadline, "never crash_guarded"
            time.sleep(0.05)
        # No WARNING: the service took it (no private guard instead).
        assert not [ln for ln in lead.lines if ln.words[:3] == ["INFO", "1", "WARNING"]]
        m = fol.mark()
        t0 = time.time_ns()
        lead.proc.send_signal(signal.SIGKILL)
        t = fol.wait_event(("LEADER",), "2", 5, since=m)
        ms = (t - t0) / 1e6
        assert ms <= BOUND_MS, f"handover {ms:.0f} ms (T = {T_MS} ms)"
    finally:
        for p in made:
            p.kill()
            p.close()
        with open(f"/proc/{svc.pid}/task/{svc.pid}/children") as f:
            workers = [int(w) for w in f.read().split()]
        svc.terminate()
        svc.wait(10)
        for w in workers:
            try:
                os.kill(w, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_the_kubernetes_example_is_valid_and_its_containers_meet_at_the_socket():
    docs = list(yaml.safe_load_all((REPO / "docs" / "kubernetes" / "guard-sidecar.yaml").read_text()))
    assert len(docs) == 1 and docs[0]["kind"] == "Deployment"
    pod = docs[0]["spec"]["template"]["spec"]
    assert not pod.get("shareProcessNamespace"), "the socket carries the evidence: not needed"
    guard = next(c for c in pod["initContainers"] if c["name"] == "zkelect-guard")
    assert guard["restartPolicy"] == "Always"
    cmd = guard["command"]
    assert "--serve" in cmd
    sock = cmd[cmd.index("--socket") + 1]
    app = pod["containers"][0]
    assert f"crash.guard.socket={sock}" in app["command"]
    volumes = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    for c in (guard, app):
        mounts = [m for m in c["volumeMounts"] if m["name"] in volumes]
        assert any(sock.startswith(m["mountPath"].rstrip("/") + "/") for m in mounts), c["name"]

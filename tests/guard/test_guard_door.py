"""zkelect-guard is no door into its owner's sessions (issue 51, "never a
door"), tried from outside: the guard started as the guard's start
protocol says by an owner of uid 65534, probed by a sibling process of the
same uid and by root. No ZooKeeper is needed: the guard connects to
nothing while its owner lives.

- A process of the same user can open neither the guard's pipe through
  /proc/GUARD/fd/3 (before: it could, and inject DEL or garbage, or read the
  next ADD's password) nor /proc/GUARD/environ: the guard is not dumpable
  (its /proc files are root's), has no_new_privs, no core, the working
  directory / and an empty environment; a root owner's guard has no
  capability.
- A password the guard was given and then told to forget (ADD, DEL) is in
  none of its memory (before: the hex stayed in the read buffer).
- The guard takes 10,000 sessions (before: it exited at the 1,025th) and
  looks up no host name while its owner lives (strace: no /etc/hosts, no
  socket; before: a lookup per ADD, in the read loop).
- An owner that drops root makes its root guard exit at its next record,
  closing nothing (it is not to stay more privileged than its owner).
- A hello of another protocol version, or none, is refused at the start,
  with its own exit status.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from bed.guardprocs import guards_of

NOBODY = 65534
# Python for the processes of uid 65534: the system's (the tests' own may
# live under /root, which that uid cannot enter).
SYS_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
SID = 0x1234567890ABCDEF
PASSWD = bytes.fromhex("5ec2e7a1b2c3d4e5f60718293a4b5c6d")

# The owner: the pipe with the hello and the records given on its command
# line, the guard spawned with an environment of its own; it prints the
# start's verdict, then sends each line of its stdin as a record ("!setuid":
# it becomes uid 65534 instead; "!sync": it prints "synced", everything
# before is in the pipe) until its stdin closes.
OWNER = r"""
import json, os, sys
guard, hello, records = sys.argv[1], sys.argv[2], sys.argv[3:]
r, w = os.pipe()
os.write(w, (hello + "\n").encode())
pid = os.posix_spawn(guard, [guard, str(os.getpid())], {"HOST_SECRET": "do-not-keep"},
                     file_actions=[(os.POSIX_SPAWN_DUP2, r, 3)])
os.close(r)
_, st = os.waitpid(pid, 0)
status = os.waitstatus_to_exitcode(st)
def send(rec):
    if rec == "!sync":
        print("synced", flush=True)
    elif rec == "!setuid":
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
    else:
        os.write(w, (rec + "\n").encode())
if status == 0:
    for rec in records:
        send(rec)
print(json.dumps({"pid": os.getpid(), "status": status}), flush=True)
for line in sys.stdin:
    send(line.rstrip("\n"))
"""

HELLO = "HELLO zkelect-guard 3"
ADD = f"ADD {SID:016x} {PASSWD.hex()} 6000 127.0.0.1:1"
DEL = f"DEL {SID:016x}"
# SASL: mechanism, then service, host, user, password and the Kerberos
# environment (ccache, client keytab, krb5.conf), each hex or "-".
SASL_PASSWORD = b"Sasl-Pw-In-The-Guard-7f3e"
SASL = (f"SASL {SID:016x} DIGEST-MD5 {b'zookeeper'.hex()} {b'zk-sasl-md5'.hex()} "
        f"{b'alice'.hex()} {SASL_PASSWORD.hex()} - - -")


@pytest.fixture(scope="module")
def guard_bin(build_dir):
    return str(build_dir / "guard" / "zkelect-guard")


def _as_nobody():
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)


@pytest.fixture
def owner(guard_bin):
    made = []

    def make(hello=HELLO, records=(), nobody=False):
        p = subprocess.Popen([SYS_PYTHON if nobody else sys.executable, "-c", OWNER, guard_bin, hello, *records],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             preexec_fn=_as_nobody if nobody else None)
        made.append(p)
        r, _, _ = select.select([p.stdout], [], [], 10)
        assert r, "the owner said nothing"
        info = json.loads(p.stdout.readline())
        info["guard"] = None
        info["proc"] = p
        info["guard_bin"] = guard_bin
        if info["status"] == 0:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not info["guard"]:
                g = guards_of(guard_bin, info["pid"])
                info["guard"] = g[0] if g else None
                time.sleep(0.01)
            assert info["guard"], "no guard process"
            made.append(info["guard"])
        return info
    yield make
    # The guards first, by pid: an owner's death would set them closing.
    for m in made:
        if isinstance(m, int):
            try:
                os.kill(m, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for m in made:
        if not isinstance(m, int):
            m.kill()
            m.wait(10)


PROBE = r"""
import json, os, sys
g = sys.argv[1]
out = {}
for what, flags in (("fd/3", os.O_WRONLY), ("fd/3r", os.O_RDONLY), ("environ", os.O_RDONLY)):
    path = f"/proc/{g}/" + what.rstrip("r")
    try:
        os.close(os.open(path, flags))
        out[what] = "opened"
    except OSError as e:
        out[what] = os.strerror(e.errno)
print(json.dumps(out))
"""


def test_a_process_of_the_same_user_cannot_reach_into_the_guard(owner):
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the owner and the probe as uid 65534")
    info = owner(records=[ADD], nobody=True)
    g = info["guard"]
    with open(f"/proc/{g}/status") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines())
    assert status["Uid"].split()[0] == str(NOBODY), status["Uid"]
    probe = subprocess.run([SYS_PYTHON, "-c", PROBE, str(g)], capture_output=True, text=True,
                           preexec_fn=_as_nobody, timeout=30)
    got = json.loads(probe.stdout)
    denied = os.strerror(13)  # EACCES
    assert got == {"fd/3": denied, "fd/3r": denied, "environ": denied}, got
    # Not dumpable: the kernel gives its /proc files to root.
    assert os.stat(f"/proc/{g}/environ").st_uid == 0
    assert os.stat(f"/proc/{g}/fd").st_uid == 0
    assert status["NoNewPrivs"].strip() == "1", status["NoNewPrivs"]
    with open(f"/proc/{g}/limits") as f:
        core = [line for line in f if line.startswith("Max core file size")][0].split()
    assert core[4:6] == ["0", "0"], core
    assert os.readlink(f"/proc/{g}/cwd") == "/"
    with open(f"/proc/{g}/environ", "rb") as f:
        assert f.read().strip(b"\0") == b"", "the guard kept its starter's environment"


def _memory(pid):
    """Every readable private mapping of pid, as bytes (root only)."""
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if "r" not in parts[1] or "w" not in parts[1] or hi - lo > 1 << 30:
                continue
            try:
                mem.seek(lo)
                chunks.append(mem.read(hi - lo))
            except OSError:
                pass
    return b"".join(chunks)


def test_a_withdrawn_password_is_in_none_of_the_guards_memory(owner):
    if os.geteuid() != 0:
        pytest.skip("needs root, to read the guard's memory")
    info = owner(records=[ADD, SASL, DEL])
    g = info["guard"]
    # The records are read: the guard idles in poll() again.
    time.sleep(0.5)
    os.kill(g, signal.SIGSTOP)
    try:
        mem = _memory(g)
    finally:
        os.kill(g, signal.SIGCONT)
    assert len(mem) > 0
    assert PASSWD.hex().encode() not in mem, "the password's hex is still in the guard's memory"
    assert PASSWD not in mem, "the password is still in the guard's memory"
    assert SASL_PASSWORD.hex().encode() not in mem, "the SASL password's hex is still there"
    assert SASL_PASSWORD not in mem, "the SASL password is still in the guard's memory"


def test_a_sasl_record_is_taken_and_a_malformed_one_is_refused(owner, guard_bin):
    """A well-formed SASL record keeps the guard running; one with a field
    that is neither hex nor "-" (or missing) is a protocol error, on which
    the guard exits without closing anything."""
    info = owner(records=[ADD, SASL])
    g = info["guard"]
    time.sleep(0.3)
    assert g in guards_of(guard_bin, info["pid"]), "a well-formed SASL record stopped the guard"
    info["proc"].stdin.write(SASL.rsplit(" ", 1)[0] + " zz\n")
    info["proc"].stdin.flush()
    deadline = time.monotonic() + 5
    while g in guards_of(guard_bin, info["pid"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert g not in guards_of(guard_bin, info["pid"]), "a malformed SASL record was taken"


@pytest.mark.parametrize("hello,status", [("HELLO zkelect-guard 2", 5), ("HELLO zkelect-guard 4", 5),
                                          ("ADD 0000000000000001", 4), ("", 4)],
                         ids=["older", "newer", "no-hello", "empty"])
def test_a_hello_of_another_version_is_refused_at_the_start(owner, hello, status):
    info = owner(hello=hello)
    assert info["status"] == status, info


def test_a_root_guard_exits_once_its_owner_dropped_root(owner, guard_bin):
    if os.geteuid() != 0:
        pytest.skip("needs root, to drop it")
    info = owner(records=[ADD])
    g = info["guard"]
    assert g in guards_of(guard_bin, info["pid"])
    info["proc"].stdin.write(f"!setuid\n{DEL}\n")
    info["proc"].stdin.flush()
    deadline = time.monotonic() + 5
    while g in guards_of(guard_bin, info["pid"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert g not in guards_of(guard_bin, info["pid"]), "the root guard stayed"


def test_the_guard_takes_10000_sessions(owner, guard_bin):
    # Past the old table of 1,024, whose 1,025th ADD made the guard exit
    # (and its owner's library start it again, and again).
    info = owner(records=[ADD])
    g = info["guard"]
    lines = "".join(f"ADD {i:016x} {PASSWD.hex()} 6000 127.0.0.1:1\n" for i in range(1, 10001))
    lines += "".join(f"DEL {i:016x}\n" for i in range(1, 5001))
    info["proc"].stdin.write(lines + "!sync\n")
    info["proc"].stdin.flush()
    r, _, _ = select.select([info["proc"].stdout], [], [], 30)
    assert r and info["proc"].stdout.readline().strip() == "synced", "the owner could not write them"
    # All in the pipe; the guard reads them in milliseconds.
    time.sleep(0.5)
    assert g in guards_of(guard_bin, info["pid"]), "the guard exited past 1,024 sessions"


def test_the_guard_looks_up_no_name_while_its_owner_lives(owner, tmp_path):
    # A name lookup in the read loop would hold the guard (and, before
    # issue 51, its owner's writes to it) for as long as DNS takes. Watched
    # with strace: reading an ADD with a host name and an SRV with an
    # address opens nothing (no /etc/hosts, resolv.conf or nsswitch.conf)
    # and makes no socket.
    if os.geteuid() != 0 or not os.access("/usr/bin/strace", os.X_OK):
        pytest.skip("needs root and strace, to trace the guard")
    info = owner(records=[ADD])
    g = info["guard"]
    out = tmp_path / "trace"
    tracer = subprocess.Popen(["/usr/bin/strace", "-f", "-qq", "-s", "4096", "-e", "trace=%file,%network,read",
                               "-o", str(out), "-p", str(g)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # strace attaches in far less than this; what it missed, the check
        # below that it saw the records' read() would show.
        time.sleep(1.0)
        sid = f"{SID + 1:016x}"
        info["proc"].stdin.write(f"ADD {sid} {PASSWD.hex()} 6000 zk1.example.invalid:2181,"
                                 f"zk2.example.invalid:2181/chroot\n"
                                 f"SRV {sid} 127.0.0.1:2181,[::1]:2181\n!sync\n")
        info["proc"].stdin.flush()
        r, _, _ = select.select([info["proc"].stdout], [], [], 10)
        assert r and info["proc"].stdout.readline().strip() == "synced"
        time.sleep(0.5)
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(10)
    trace = out.read_text()
    assert "zk1.example.invalid" in trace, f"strace did not see the records read: {trace}"
    assert g in guards_of(info["guard_bin"], info["pid"]), "the guard exited on the records"
    for needle in ("/etc/hosts", "resolv.conf", "nsswitch", "socket("):
        assert needle not in trace, f"the guard's read loop did {needle}: {trace}"


def test_a_guard_of_a_root_owner_has_no_capability(owner):
    if os.geteuid() != 0:
        pytest.skip("needs root, for capabilities to drop")
    info = owner(records=[ADD])
    with open(f"/proc/{info['guard']}/status") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines())
    for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[field], 16) == 0, f"{field} {status[field].strip()}"

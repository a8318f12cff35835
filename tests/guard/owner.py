#!/usr/bin/python3
"""An owner of ZooKeeper sessions for tests/guard/test_guard.py: what a
program using libzkelect will be once the library starts the guard.

    owner.py GUARD HOSTS PATH [--sessions N] [--timeout-ms T] [--guard-hosts H]
             [--guard-hosts-of I H]... [--hello LINE] [-- GUARD ARGS...]

Opens N kazoo sessions (timeout T, default 10 s; to HOSTS, while the guard
is told H when given, or for session I the H of --guard-hosts-of I H: a
fault proxy in front of the same server, say), each with an ephemeral
node PATH/s<i>, starts the guard as the guard's start protocol says (the
read end of an O_CLOEXEC pipe on fd 3 with the hello line in it, LINE or
this release's, its own pid as argument, the child it started reaped at
once) and hands it every session (ADD). It also holds
an inheritable file descriptor of its own (a temporary file), which the
guard must not keep. Then prints one JSON line:

    {"pid", "pgid", "guard_start_status", "pipe_ino", "extra_fd_ino",
     "sessions": [[sid, password hex, node path], ...]}

and obeys lines on stdin, each answered by one line ("ok ..."):

    del I        withdraw session I from the guard (DEL)
    wait I PID   session I waits for process PID once the owner is dead (WAIT)
    raw TEXT     send TEXT as a record, as it is (a malformed one, say)
    fill PORT    connect to 127.0.0.1:PORT and write until the kernel takes
                 no more: the receiver (which does not read) has not
                 acknowledged all of it when the owner dies
    close-pipe   close the pipe's write end (the owner lets go, alive)
    ping         answers "ok <kazoo states>"
    exit         stop the kazoo clients (closing the sessions) and exit 0
"""

import json
import os
import resource
import socket
import sys
import tempfile

from kazoo.client import KazooClient


def main():
    args = sys.argv[1:]
    guard_args = []
    if "--" in args:
        k = args.index("--")
        args, guard_args = args[:k], args[k + 1:]
    guard, hosts, path = args[0], args[1], args[2]
    n, timeout_ms = 1, 10000
    guard_hosts = None
    guard_hosts_of = {}
    hello = "HELLO zkelect-guard 3"
    rest = args[3:]
    while rest:
        if rest[0] == "--sessions":
            n = int(rest[1])
        elif rest[0] == "--timeout-ms":
            timeout_ms = int(rest[1])
        elif rest[0] == "--guard-hosts":
            guard_hosts = rest[1]
        elif rest[0] == "--hello":
            hello = rest[1]
        elif rest[0] == "--guard-hosts-of":
            guard_hosts_of[int(rest[1])] = rest[2]
            rest = rest[1:]
        else:
            raise SystemExit(f"owner.py: unknown argument {rest[0]}")
        rest = rest[2:]
    # SIGSEGV and SIGABRT of this process dump no core.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    clients, sessions = [], []
    for i in range(n):
        c = KazooClient(hosts=hosts, timeout=timeout_ms / 1000.0)
        c.start(timeout=10)
        node = f"{path}/s{i}"
        c.create(node, b"", ephemeral=True, makepath=True)
        sid, pw = c.client_id
        clients.append(c)
        sessions.append([sid, pw.hex(), node])

    # A descriptor of the host's that a careless helper would keep.
    extra = tempfile.TemporaryFile()
    os.set_inheritable(extra.fileno(), True)

    r, w = os.pipe()            # both O_CLOEXEC (not inheritable)
    # The hello line first: the guard reads it before it says it runs.
    os.write(w, (hello + "\n").encode())
    pid = os.posix_spawn(guard, [guard, *guard_args, str(os.getpid())], os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, r, 3)])
    os.close(r)
    _, status = os.waitpid(pid, 0)
    start_status = os.waitstatus_to_exitcode(status)

    def send(line):
        os.write(w, line.encode() + b"\n")

    for i, (sid, pw, _) in enumerate(sessions):
        send(f"ADD {sid:016x} {pw} {timeout_ms} {guard_hosts_of.get(i) or guard_hosts or hosts}")

    print(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0),
                      "guard_start_status": start_status,
                      "pipe_ino": os.fstat(w).st_ino,
                      "extra_fd_ino": os.fstat(extra.fileno()).st_ino,
                      "sessions": sessions}), flush=True)

    held = []
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "del":
            send(f"DEL {sessions[int(cmd[1])][0]:016x}")
            print("ok del", flush=True)
        elif cmd[0] == "wait":
            send(f"WAIT {sessions[int(cmd[1])][0]:016x} {cmd[2]}")
            print("ok wait", flush=True)
        elif cmd[0] == "raw":
            send(line[len("raw "):].rstrip("\n"))
            print("ok raw", flush=True)
        elif cmd[0] == "fill":
            s = socket.create_connection(("127.0.0.1", int(cmd[1])), timeout=5)
            s.setblocking(False)
            sent = 0
            for _ in range(100000):
                try:
                    sent += s.send(b"x" * 65536)
                except BlockingIOError:
                    break
            held.append(s)
            print(f"ok filled {sent}", flush=True)
        elif cmd[0] == "close-pipe":
            os.close(w)
            print("ok closed", flush=True)
        elif cmd[0] == "ping":
            print("ok " + ",".join(c.state for c in clients), flush=True)
        elif cmd[0] == "exit":
            for c in clients:
                c.stop()
                c.close()
            print("ok bye", flush=True)
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

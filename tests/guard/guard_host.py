#!/usr/bin/python3
"""A host process of the library for tests/guard/test_guard_host.py: a
program with many clients, each of which the library puts in the
process's one crash guard.

    guard_host.py LIBZKELECT HOSTS

Obeys lines on stdin, each answered by one JSON line on stdout:

    clients N   makes N more clients (connected; session timeout 6 s)
                {"made": N, "ms": how long it took}
    stats       {"clients", "guarded": how many say crash_guarded,
                 "warnings": their crash_guard_warnings summed}
    waits N     N calls of zkelect_client_crash_guard_wait(first client,
                this process): {"ms"}
    fork        fork() on a thread of its own; the child exits at once:
                {"ms": until fork() returned in the parent}
    steal INODE FILE   puts FILE (opened for writing) at the number of its
                descriptor of pipe INODE, as a host that closes every
                descriptor and opens its log would: {"fd"}
    fdino N     {"ino": the inode descriptor N refers to, or null}
    setuid U    becomes user U (all three ids, no groups) as a server
                does once it has started: {"uid": U}
    exit        destroys the clients and exits
"""

import ctypes as C
import json
import os
import sys
import threading
import time


def main():
    lib = C.CDLL(sys.argv[1])
    P, I, S = C.c_void_p, C.c_int, C.c_char_p
    for name, res, args in [
        ("zkelect_conf_new", P, []), ("zkelect_conf_set", I, [P, S, S, S, C.c_size_t]),
        ("zkelect_conf_destroy", None, [P]), ("zkelect_client_new", P, [P, S, C.c_size_t]),
        ("zkelect_client_destroy", I, [P]), ("zkelect_client_await_connected", I, [P, I]),
        ("zkelect_client_stats", P, [P, S, C.c_size_t]), ("zkelect_stats_json", S, [P]),
        ("zkelect_stats_destroy", None, [P]), ("zkelect_client_crash_guard_wait", I, [P, I]),
    ]:
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    hosts = sys.argv[2].encode()
    clients = []
    err = C.create_string_buffer(512)

    def new_client():
        conf = lib.zkelect_conf_new()
        for k, v in ((b"zk.hosts", hosts), (b"zk.session.timeout.ms", b"6000")):
            assert lib.zkelect_conf_set(conf, k, v, err, 512) == 0, err.value
        c = lib.zkelect_client_new(conf, err, 512)
        lib.zkelect_conf_destroy(conf)
        assert c, err.value
        assert lib.zkelect_client_await_connected(c, 30000) == 0
        return c

    def stats(c):
        h = lib.zkelect_client_stats(c, err, 512)
        s = json.loads(lib.zkelect_stats_json(h))
        lib.zkelect_stats_destroy(h)
        return s

    def say(d):
        print(json.dumps(d), flush=True)

    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        t0 = time.monotonic()
        if cmd[0] == "clients":
            for _ in range(int(cmd[1])):
                clients.append(new_client())
            say({"made": int(cmd[1]), "ms": (time.monotonic() - t0) * 1000})
        elif cmd[0] == "stats":
            all_ = [stats(c) for c in clients]
            say({"clients": len(all_), "guarded": sum(1 for s in all_ if s["crash_guarded"]),
                 "warnings": sum(s["counters"]["crash_guard_warnings"] for s in all_)})
        elif cmd[0] == "waits":
            for _ in range(int(cmd[1])):
                assert lib.zkelect_client_crash_guard_wait(clients[0], os.getpid()) == 0
            say({"ms": (time.monotonic() - t0) * 1000})
        elif cmd[0] == "fork":
            got = {}

            def forker():
                pid = os.fork()
                if pid == 0:
                    os._exit(0)
                got["ms"] = (time.monotonic() - t0) * 1000
                os.waitpid(pid, 0)
            t = threading.Thread(target=forker)
            t.start()
            t.join()
            say(got)
        elif cmd[0] == "steal":
            want = f"pipe:[{cmd[1]}]"
            fd = next(int(n) for n in os.listdir("/proc/self/fd")
                      if os.readlink(f"/proc/self/fd/{n}") == want)
            f = os.open(cmd[2], os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            os.dup2(f, fd)
            os.close(f)
            say({"fd": fd})
        elif cmd[0] == "fdino":
            try:
                say({"ino": os.fstat(int(cmd[1])).st_ino})
            except OSError:
                say({"ino": None})
        elif cmd[0] == "setuid":
            u = int(cmd[1])
            os.setgroups([])
            os.setresgid(u, u, u)
            os.setresuid(u, u, u)
            say({"uid": os.getuid()})
        elif cmd[0] == "exit":
            for c in clients:
                lib.zkelect_client_destroy(c)
            say({"bye": True})
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

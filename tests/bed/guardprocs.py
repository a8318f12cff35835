"""The zkelect-guard processes of an owner, found in /proc (the tests of the
guard program and of the library's guard share it)."""

import os


def guards_of(guard_bin, owner_pid):
    """Pids of the live (not zombie) zkelect-guard processes started for
    owner_pid: their argv[0] is guard_bin and their last argument the
    owner's pid."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")[:-1]
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        if st[st.rindex(")") + 2] in "ZX":
            continue
        if argv and argv[0] == guard_bin.encode() and argv[-1] == str(owner_pid).encode():
            found.append(int(d))
    return found

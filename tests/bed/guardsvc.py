"""The crash guard as a service (zkelect-guard --serve) for tests that
reach it through crash.guard.socket: tests/guard/test_guard_service.py and
tests/sasl/test_sasl_guard.py."""

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path


def children(pid):
    """The pids of pid's children (from /proc)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


class Service:
    """zkelect-guard --serve at DIR/guard.sock, its log in DIR/service.log."""

    def __init__(self, guard_bin, directory, *args):
        self.path = str(directory / "guard.sock")
        self.log = directory / "service.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([guard_bin, "--serve", "--socket", self.path, "--debug",
                                          *args],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=log)
        deadline = time.monotonic() + 5
        while not os.path.exists(self.path):
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "the service made no socket in 5 s"
            time.sleep(0.01)

    def workers(self):
        return children(self.proc.pid)

    def stop(self):
        workers = self.workers()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        # Its workers outlive it by design (they guard their owners); the
        # test's are ended here, by pid.
        for w in workers:
            try:
                os.kill(w, signal.SIGKILL)
            except ProcessLookupError:
                pass


@contextlib.contextmanager
def services(guard_bin, tmp_path):
    """make(*args): a service in a directory of its own that every user may
    enter (pytest's are its user's only): the socket's mode decides. Every
    service made is stopped at the end."""
    made = []

    def make(*args):
        d = Path(tempfile.mkdtemp(prefix="guardsvc-", dir=tmp_path))
        for p in (d, *d.parents):
            if p == Path("/tmp") or p == Path("/"):
                break
            os.chmod(p, os.stat(p).st_mode | 0o711)
        s = Service(guard_bin, d, *args)
        made.append(s)
        return s

    try:
        yield make
    finally:
        for s in made:
            s.stop()

"""A PostgreSQL server of Debian's package (postgresql-15), started on a
loopback port with a data directory of its own, as the tests start
ZooKeeper: no system service, no root daemon (as root, the server runs as
the package's `postgres` user, which PostgreSQL requires).

    with PgServer() as pg:
        pg.psql("SELECT 1")            # as the superuser, over TCP
        pg.dsn                          # "host=127.0.0.1 port=N user=... dbname=postgres"
"""

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

from bed.zkbed import free_port


def bindir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        raise RuntimeError("no PostgreSQL server: install Debian's postgresql package "
                           "(./dev test does)")
    return os.path.dirname(found[-1])


class PgServer:
    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="zkelect-pg-")
        self.data = os.path.join(self.dir, "data")
        self.proc = None
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        self.dsn = f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres"

    def _as_owner(self, argv):
        if os.geteuid() == 0:
            return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]
        return argv

    def start(self, timeout=60):
        if os.geteuid() == 0:
            os.chmod(self.dir, 0o755)
            shutil.chown(self.dir, "postgres", "postgres")
        subprocess.run(self._as_owner([os.path.join(bindir(), "initdb"), "-D", self.data,
                                       "-A", "trust", "-U", self.user, "--no-sync"]),
                       check=True, capture_output=True, timeout=120, cwd="/")
        self.proc = subprocess.Popen(
            self._as_owner([os.path.join(bindir(), "postgres"), "-D", self.data,
                            "-p", str(self.port), "-k", self.dir,
                            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True, cwd="/")
        deadline = time.monotonic() + timeout
        while True:
            r = subprocess.run(["pg_isready", "-h", "127.0.0.1", "-p", str(self.port)],
                               capture_output=True, timeout=30)
            if r.returncode == 0:
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited: {self.proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("postgres did not accept connections in time")
            time.sleep(0.1)

    def psql_argv(self, *extra):
        return ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.dsn, *extra]

    def psql(self, sql, check=True, timeout=60):
        r = subprocess.run(self.psql_argv("-At", "-c", sql), capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"psql {sql!r}: {r.stderr}")
        return r

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

"""Participant programs of the line protocol (DESIGN.md section 6) as
subprocesses: `zkelect candidate` and Curator's LeaderLatch participant.
Every line is time-stamped on arrival and kept; waits are bounded."""

import os
import re
import signal
import subprocess
import threading
import time

CURATOR_NODE = re.compile(r"^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                          r"-latch-(\d{10})$")


class Participant:
    """One participant program; ids are strings."""

    def __init__(self, argv, env, name):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.lines = []            # (recv_ns, [words])
        self.err = []
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(self.argv, env=env, text=True, bufsize=1,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append((time.time_ns(), line.split()))
                self.cv.notify_all()
        with self.cv:
            self.lines.append((time.time_ns(), ["EOF"]))
            self.cv.notify_all()

    def _read_err(self):
        for line in self.proc.stderr:
            if len(self.err) < 200:
                self.err.append(line.rstrip())

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def mark(self):
        with self.cv:
            return len(self.lines)

    def events(self, since=0):
        """[(epoch_ns, kind, id, {k: v})] of EVENT lines."""
        with self.cv:
            ls = list(self.lines[since:])
        out = []
        for _, w in ls:
            if len(w) >= 4 and w[0] == "EVENT":
                out.append((int(w[3]), w[1], w[2], dict(x.split("=", 1) for x in w[4:] if "=" in x)))
        return out

    def wait(self, pred, timeout, since=0, what="a line"):
        deadline = time.monotonic() + timeout
        i = since
        with self.cv:
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i][1]):
                        return self.lines[i]
                    i += 1
                if self.lines and self.lines[-1][1] == ["EOF"]:
                    raise AssertionError(f"{self.name} exited (rc={self.proc.poll()}) before "
                                         f"{what}:\n{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name}: no {what} within {timeout} s:\n{self.tail()}")
                self.cv.wait(left)

    def wait_event(self, kinds, pid, timeout, since=0):
        """epoch_ns and kind of the first EVENT <kind in kinds> <pid>."""
        _, w = self.wait(lambda w: len(w) >= 4 and w[0] == "EVENT" and w[1] in kinds
                         and w[2] == pid, timeout, since, f"EVENT {'|'.join(kinds)} {pid}")
        return int(w[3]), w[1]

    def info(self, pid, key, timeout=30):
        _, w = self.wait(lambda w: len(w) >= 3 and w[0] == "INFO" and w[1] == pid
                         and any(x.startswith(key + "=") for x in w[2:]), timeout,
                         what=f"INFO {pid} {key}")
        return dict(x.split("=", 1) for x in w[2:] if "=" in x)[key]

    def tail(self, n=30):
        with self.cv:
            out = "\n".join(" ".join(w) for _, w in self.lines[-n:])
        return out + ("\nstderr:\n" + "\n".join(self.err[-10:]) if self.err else "")

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def close(self, timeout=10):
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                self.proc.wait(10)
        return self.proc.returncode


def zkelect_candidate(zkelect_bin, env, hosts, path, first_id, count=1, session_ms=2000):
    return Participant([zkelect_bin, "candidate", "--connect", hosts, "--path", path,
                        "--first-id", first_id, "--count", count,
                        "--session-timeout-ms", session_ms], env, f"zkelect[{first_id}]")


def curator_candidate(classes_dir, env, hosts, path, first_id, count=1, session_ms=2000):
    return Participant(["java", "-XX:+UseSerialGC", "-Xms32m", "-Xmx256m",
                        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                        "-cp", f"{classes_dir}:/usr/share/java/curator-recipes.jar:"
                               "/usr/share/java/slf4j-simple.jar",
                        "CuratorParticipant", "--connect", hosts, "--path", path,
                        "--first-id", first_id, "--count", count,
                        "--session-timeout-ms", session_ms], env, f"curator[{first_id}]")


class Kazoo:
    """A plain ZooKeeper client to look at the election from outside."""

    def __init__(self, hosts):
        from kazoo.client import KazooClient
        self.zk = KazooClient(hosts=hosts, timeout=10)
        self.zk.start(timeout=15)

    def queue(self, path):
        """[(node, id, session)] in queue order (by the sequence after latch-)."""
        self.zk.sync(path)
        out = []
        for c in self.zk.get_children(path):
            m = CURATOR_NODE.match(c)
            assert m, f"{path}/{c} does not follow Curator's layout"
            try:
                data, st = self.zk.get(f"{path}/{c}")
            except Exception:  # left while we looked
                continue
            out.append((int(m.group(1)), c, data.decode(), st.ephemeralOwner))
        out.sort()
        return [(c, d, s) for _, c, d, s in out]

    def close(self):
        self.zk.stop()
        self.zk.close()

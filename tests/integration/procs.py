"""Participant programs of the line protocol (docs/design.md) as
subprocesses: `zkelect candidate` and Curator's LeaderLatch participant
(bench/participants/curator), driven by tests/bed/participant.py; and a
kazoo client that looks at the election from outside."""

import re
from pathlib import Path

from bed.participant import Participant, candidate_argv, protocol_args

CURATOR_NODE = re.compile(r"^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                          r"-latch-(\d{10})$")


def zkelect_candidate(zkelect_bin, env, hosts, path, first_id, count=1, session_ms=2000):
    return Participant(candidate_argv(zkelect_bin, hosts, path, first_id, count, session_ms),
                       env, f"zkelect[{first_id}]", stderr="pipe")


CURATOR_RUN = Path(__file__).resolve().parents[2] / "bench" / "participants" / "curator" / "run.sh"


def curator_candidate(classes_dir, env, hosts, path, first_id, count=1, session_ms=2000,
                      classpath=None):
    """The Curator participant of bench/, its classes already built into
    classes_dir against `classpath` (default Debian's Curator; else a
    release's jars, bed/curatordist.py classpath)."""
    env = dict(env, CURATOR_CLASSES=str(classes_dir))
    if classpath:
        env["CURATOR_CLASSPATH"] = classpath
    else:
        env.pop("CURATOR_CLASSPATH", None)
    return Participant([CURATOR_RUN, *protocol_args(hosts, path, first_id, count, session_ms)],
                       env, f"curator[{first_id}]", stderr="pipe")


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

"""Fixtures shared by the fault scenarios (tests/fault/*.py).

kz, proxies         (tests/conftest.py) a kazoo client; fault proxies in front of the ensemble
spawn               spawn(hosts, path, first_id, timeout_ms, **kw) -> Candidate
                    (closed and killed at the end of the test)
paused_leader_bin   (tests/conftest.py) tests/fault/paused_leader.c built with cc + pkg-config
"""

import pytest

from bed.candidates import Candidate


@pytest.fixture
def spawn(zkelect_bin, test_env, tmp_path):
    made = []

    def make(hosts, path, first_id, timeout_ms, **kw):
        c = Candidate(zkelect_bin, hosts, path, first_id, timeout_ms, test_env,
                      log_dir=str(tmp_path), **kw)
        made.append(c)
        return c

    yield make
    # Every one told to quit first, so their sessions end side by side
    # rather than one after another (a quit waits for the session's close).
    for c in made:
        if c.proc.poll() is None:
            c.send("quit")
    for c in made:
        c.close()
        c.kill()

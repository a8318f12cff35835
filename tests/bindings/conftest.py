"""Fixtures shared by the bindings' drivers."""

import uuid

import pytest

# Longer than ZKELECT_ID_MAX (1024), as a Curator participant may write.
LONG_ID = ("curator-" + "L" * 1992).encode()


@pytest.fixture
def foreign_long_leader(kz, zk_path):
    """A Curator-style participant that leads zk_path with a 2000-byte id,
    written by another client (kazoo) the way Curator's LeaderLatch writes
    its node. Returns the environment that tells a binding's own tests
    where it is: ZKELECT_TEST_LONG_ID_PATH and ZKELECT_TEST_LONG_ID."""
    kz.ensure_path(zk_path)
    kz.create(f"{zk_path}/_c_{uuid.uuid4()}-latch-", LONG_ID, ephemeral=True, sequence=True)
    yield {"ZKELECT_TEST_LONG_ID_PATH": zk_path, "ZKELECT_TEST_LONG_ID": LONG_ID.decode()}
    kz.delete(zk_path, recursive=True)

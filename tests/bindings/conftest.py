"""Fixtures shared by the bindings' drivers."""

import uuid

import pytest

# Longer than ZKELECT_ID_MAX (1024), as a Curator participant may write.
LONG_ID = ("curator-" + "L" * 1992).encode()


@pytest.fixture
def foreign_long_leader(zk, zk_path):
    """A Curator-style participant that leads zk_path with a 2000-byte id,
    written by another client (kazoo) the way Curator's LeaderLatch writes
    its node. Returns the environment that tells a binding's own tests
    where it is: ZKELECT_TEST_LONG_ID_PATH and ZKELECT_TEST_LONG_ID.

    Its session must outlive the binding's whole suite (JUnit: 70 s on a
    busy machine): with the 4 s of the kz fixture it expired there once,
    its node went with it, and a test that reads that leader failed."""
    from bed import kz
    k = kz.kazoo(zk, timeout=30.0)
    try:
        k.ensure_path(zk_path)
        k.create(f"{zk_path}/_c_{uuid.uuid4()}-latch-", LONG_ID, ephemeral=True, sequence=True)
        yield {"ZKELECT_TEST_LONG_ID_PATH": zk_path, "ZKELECT_TEST_LONG_ID": LONG_ID.decode()}
        k.delete(zk_path, recursive=True)
    finally:
        k.stop()
        k.close()

import os

import pytest


@pytest.fixture
def env(build_dir):
    """The environment a zkelect command runs in here: the tested build's
    library, and none of the variables that would stand in for options."""
    e = dict(os.environ)
    e["LD_LIBRARY_PATH"] = str(build_dir / "capi") + (
        ":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
    for name in ("ZKELECT_CONNECT", "ZKELECT_AUTH"):
        e.pop(name, None)
    return e

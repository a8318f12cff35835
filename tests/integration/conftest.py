"""Fixtures of the tests that drive the C API through ctypes (bed/zkc.py).

  api       zkc.Api over the tested build's libzkelect, one per module
  handles   {"e": [...], "o": [...], "c": [...]}: what a test made, freed
            after it (elections, observers, clients, in that order)
"""

import pytest

from bed import zkc


@pytest.fixture(scope="module")
def api(build_dir):
    return zkc.Api(build_dir)


@pytest.fixture
def handles(api):
    yield from zkc.handles_fixture(api)

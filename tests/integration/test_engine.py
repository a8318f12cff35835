"""Runs the engine interleaving programs (tests/engine) against the shared
real ensemble, from the plain build and from the sanitizer builds that
./dev test makes beside it (a sanitizer report fails like an assertion)."""

import pytest

from test_capi import FLAVORS, run_program


@pytest.mark.parametrize("flavor", FLAVORS)
def test_engine_interleavings(flavor, build_dir, test_env, zk, zk_path):
    run_program("engine-interleaving", flavor, build_dir, test_env, zk_path, subdir="engine")

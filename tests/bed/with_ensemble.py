#!/usr/bin/env python3
"""Run a command with ZKELECT_TEST_HOSTS (and ZK_HOSTS) naming a ZooKeeper
ensemble: the one already named in the environment, else a one-server
ensemble on loopback started here and stopped when the command ends.

    with_ensemble.py [--timeout S] CMD [ARGS...]

It lets `meson test --suite bindings` run a binding's own tests without
pytest. The command's exit status is this script's.
"""
import os
import subprocess
import sys

# Run as a script: its folder (tests/bed) is sys.path[0].
from zkbed import Ensemble


def main(argv):
    timeout = 600.0
    if len(argv) >= 2 and argv[0] == "--timeout":
        timeout = float(argv[1])
        argv = argv[2:]
    if not argv:
        print("usage: with_ensemble.py [--timeout S] CMD [ARGS...]", file=sys.stderr)
        return 2
    env = dict(os.environ)
    if env.get("ZKELECT_TEST_HOSTS"):
        env.setdefault("ZK_HOSTS", env["ZKELECT_TEST_HOSTS"])
        return _run(argv, env, timeout)
    ens = Ensemble(n=1)
    ens.start()
    try:
        env["ZKELECT_TEST_HOSTS"] = env["ZK_HOSTS"] = ens.connect_string
        return _run(argv, env, timeout)
    finally:
        ens.stop()


def _run(argv, env, timeout):
    try:
        return subprocess.run(argv, env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        # subprocess.run has killed it by now.
        print(f"with_ensemble.py: {argv[0]} did not finish in {timeout} s", file=sys.stderr)
        return 124


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

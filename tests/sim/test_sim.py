"""The fault explorer's deterministic tier (explore/sim, docs/explore.md) in
./dev test: a fixed range of seeds, one new range per run (printed: replay a
seed with `./dev explore --sim --seed S`), every shrunk case of
explore/sim/cases replayed, and the claim everything else rests on: a seed
replays the same run.

No ZooKeeper server: the simulator's ensemble is a model, judged by the real
tier (explore/real) where the two could differ.
"""

import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

# The product this tests lives in its own room, explore/sim (issue 53);
# its binary in the build's mirror of that folder.
SIM = Path(__file__).resolve().parents[2] / "explore" / "sim"
FIXED = (1, 3000)       # first seed, runs: about 10-30 s on one core
NEW_SECONDS = 10

# What reaches a finding still open stays out of the short form, each with
# the finding it reaches (issue 50); `./dev explore --sim` keeps it all.
# Take an entry out once its finding is fixed (and the fixed seeds pass).
KNOWN_OPEN = {
    # Empty since issue 50's findings were fixed: seeds 1-3000 and 43,251 new
    # seeds (6000000-6043250) with every step and rule showed no violation.
}
SHORT_FORM = [a for args in KNOWN_OPEN for a in args]


# The simulator runs on virtual time on one thread: what bounds a run that
# never ends is the CPU it burns, not the wall clock, which a busy machine
# stretches (3,000 fixed seeds: 30 s of CPU, and past a 120 s wall-clock
# bound beside ./dev test's other workers on a loaded machine). The
# wall-clock bound only catches a process that hangs without running.
CPU_S = 120
WALL_S = 900


def _cpu_bound():
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_S, CPU_S + 5))


def sim(build_dir, *args):
    exe = Path(build_dir) / "explore" / "sim" / "zkelect-sim"
    if not exe.is_file():
        pytest.fail(f"{exe} is missing (ninja -C {build_dir})", pytrace=False)
    r = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                       timeout=WALL_S, preexec_fn=_cpu_bound)
    assert r.returncode != -signal.SIGXCPU, f"zkelect-sim {args}: more than {CPU_S} s of CPU"
    return r


def test_fixed_seeds(build_dir):
    first, runs = FIXED
    r = sim(build_dir, "--seed", first, "--runs", runs, *SHORT_FORM)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert f"{runs} runs" in r.stdout, r.stdout


def test_new_seeds(build_dir):
    """Seeds nobody ran before: the first is printed, and a violation names
    its own seed with the command that replays it."""
    first = int(time.time()) % 1_000_000_000 * 1000
    print(f"zkelect-sim: new seeds from {first} (./dev explore --sim --seed S "
          f"{' '.join(SHORT_FORM)} replays one)")
    r = sim(build_dir, "--seed", first, "--minutes", NEW_SECONDS / 60, "--shrink", 30, *SHORT_FORM)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]


@pytest.mark.parametrize("case", sorted(p.name for p in (SIM / "cases").glob("*.txt")))
def test_case(build_dir, case):
    """A shrunk schedule of a violation found and fixed (its first comment
    says what it found) no longer shows one."""
    r = sim(build_dir, "--case", SIM / "cases" / case)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]


def test_a_seed_replays_the_same_run(build_dir):
    runs = [sim(build_dir, "--seed", 4242, "--verbose") for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stdout
    assert runs[0].stderr.count("\n") > 200, runs[0].stderr[:2000]
    assert runs[0].stderr == runs[1].stderr
    other = sim(build_dir, "--seed", 4243, "--verbose")
    assert other.stderr != runs[0].stderr

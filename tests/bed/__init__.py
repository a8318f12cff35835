"""The test bed: the one package of helpers that every test suite, the
benchmarks (bench/) and the demo (tools/demo.py) import as `bed`.

It is found with tests/ on the module path: pytest.ini at the top of the
tree says so to pytest (`pythonpath = tests`), and ./dev puts tests/ on
PYTHONPATH for what it starts (the bench, the demo, the explorer, the
mutation runner). By hand: PYTHONPATH=$PWD/tests.

  zkbed        real ZooKeeper ensembles on loopback; free_port(), the one
               free-port helper (the ensembles' machine-wide port
               reservation); four_letter(), the one four-letter-word client
               (four_quiet(): "" when nobody answers); also a command line:
               python3 tests/bed/zkbed.py --help
  faultproxy   a fault-injecting TCP proxy in front of servers (also a
               command line)
  participant  the driver of the participant line protocol
  lines        LinePump, the one reader of a child process's lines
  toolutil     `zkelect` subprocesses (Proc, Candidates) and a ctypes view
               of the C API for the tool's tests
  zkc          the public C API through ctypes
  crosslang    the cross-language candidates (one program per binding):
               built once a session, driven by one protocol
  gtestrun     GoogleTest programs run with proof that every case ran
  examples     the docs' fenced code blocks and their markers
  sh           a command run with a bound, its failure as a test failure
  with_ensemble  a command line: a command run against a fresh ensemble
"""

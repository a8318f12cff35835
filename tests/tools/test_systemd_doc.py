"""docs/systemd.md as a user reads it: its shell commands run as written
(against the test ensemble, in place of zk1..zk3), and what it says about
packages holds for debian/."""

import os
import re
import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "systemd.md"
EXAMPLE_HOSTS = "zk1:2181,zk2:2181,zk3:2181"


def _shell_lines(text):
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                lines.append(line)
    return lines


def test_its_zkelect_commands_run_as_written(zk, zkelect_bin, test_env):
    """A shell has no ZKELECT_CONNECT of the unit's: each `zkelect` command
    of the page names its ensemble itself."""
    cmds = [l for l in _shell_lines(DOC.read_text()) if l.startswith("zkelect ")]
    assert cmds, "no zkelect command in systemd.md"
    env = dict(test_env)
    env.pop("ZKELECT_CONNECT", None)
    for cmd in cmds:
        argv = shlex.split(cmd.replace(EXAMPLE_HOSTS, zk.connect_string))
        r = subprocess.run([str(zkelect_bin), *argv[1:]], env=env, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, (cmd, r.returncode, r.stderr)


def test_what_it_says_a_package_installs_is_installed():
    """A unit the page says a package ships is in a debian/*.install."""
    text = DOC.read_text()
    installed = "".join(p.read_text() for p in (REPO / "debian").glob("*.install"))
    for where in re.findall(r"(/(?:usr/)?lib/systemd/system)", text):
        sentence = text[max(0, text.index(where) - 200):text.index(where) + 50]
        if re.search(r"\b(ships|installs)\b", sentence) and not re.search(r"\bno package\b",
                                                                           sentence):
            assert "zkelect-run@.service" in installed, (
                f"systemd.md says a package puts the unit in {where}; none does")

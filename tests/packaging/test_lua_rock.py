"""The LuaRocks spec (bindings/lua/zkelect-<version>-1.rockspec): `luarocks make`
builds and installs the module into a tree of its own, and the README's
Lua example, with only `luarocks path` for that tree, elects a leader on
the test ensemble.
"""

import os
import re
import shutil
from pathlib import Path

import pytest

from bed import sh

REPO = Path(__file__).resolve().parents[2]
VERSION = re.search(r"version\s*:\s*'([^']+)'", (REPO / "meson.build").read_text()).group(1)
ROCKSPEC = REPO / "bindings" / "lua" / f"zkelect-{VERSION}-1.rockspec"


def _run(cmd, timeout=300, **kw):
    return sh.run(cmd, timeout, **kw)


def test_rockspec_version_is_the_project_version():
    version = VERSION
    assert ROCKSPEC.exists(), f"no rockspec for version {version}: {ROCKSPEC}"
    text = ROCKSPEC.read_text()
    assert f'version = "{version}-1"' in text and f'tag = "v{version}"' in text
    assert ROCKSPEC.name == f"zkelect-{version}-1.rockspec"


def test_luarocks_make_installs_a_module_the_example_requires(test_env, zk, tmp_path):
    for tool in ("luarocks", "lua5.4", "swig"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (Debian: apt-get install {tool})", pytrace=False)
    tree = tmp_path / "tree"
    env = {k: v for k, v in test_env.items() if not k.startswith("LUA_")}
    proc = _run(["luarocks", "--lua-version", "5.4", "make", "--tree", str(tree), str(ROCKSPEC)],
                cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tree / "lib" / "lua" / "5.4" / "zkelect.so").exists(), proc.stdout
    paths = _run(["luarocks", "--lua-version", "5.4", "path", "--tree", str(tree)], env=env).stdout
    for var in ("LUA_PATH", "LUA_CPATH"):
        m = re.search(rf"export {var}='([^']*)'", paths)
        assert m, paths
        env[var] = m.group(1)
    readme = (REPO / "bindings" / "README.md").read_text()
    example = re.search(r"<!-- lua-example -->\s*```lua\n(.*?)```", readme, re.S).group(1)
    (tmp_path / "example.lua").write_text(example)
    env["ZK_HOSTS"] = zk.connect_string
    where = _run(["lua5.4", "-e", 'print(package.searchpath("zkelect", package.cpath))'], env=env).stdout
    assert where.strip() == str(tree / "lib" / "lua" / "5.4" / "zkelect.so"), where
    proc = _run(["lua5.4", "example.lua"], cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.fullmatch(r"leading with fencing token \d+\n", proc.stdout), proc.stdout

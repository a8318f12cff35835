"""The Python package as pip users get it: bindings/python built into a
pure-Python wheel and sdist through its pyproject.toml (setuptools' PEP 517
hooks, offline, on a copy so the tree stays clean), the wheel installed
with pip into a folder of its own, and the README example run from a
folder outside the repository with an environment that leads nowhere into
the tree except to the library, which it finds through the system's loader.
"""

import os
import re
import shutil
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from bed.sh import ok as _ok, run as _run
from test_installed_debs import _clean_env, _readme_block, _token

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "bindings" / "python"
MODULES = sorted(p.name for p in (SRC / "zkelect").glob("*.py"))


def _meson_version():
    m = re.search(r"^\s*version : '(.*?)',$", (REPO / "meson.build").read_text(), re.M)
    return m.group(1)


def test_the_package_version_is_the_librarys():
    project = tomllib.loads((SRC / "pyproject.toml").read_text())["project"]
    assert project["version"] == _meson_version(), \
        "bindings/python/pyproject.toml and meson.build name different versions"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pybuild")
    src = tmp / "src"
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    out = tmp / "dist"
    out.mkdir()
    built = []
    # One process per hook: in one, setuptools 66 puts the sdist where the
    # wheel was built.
    for hook in ("build_sdist", "build_wheel"):
        proc = _ok(_run(["/usr/bin/python3", "-c",
                         f"from setuptools import build_meta as b; import sys; "
                         f"print('BUILT', b.{hook}(sys.argv[1]))", str(out)],
                        cwd=src, timeout=300), f"setuptools {hook}")
        # setuptools talks on stdout too.
        m = re.search(r"^BUILT (\S+)$", proc.stdout, re.M)
        assert m, proc.stdout
        built.append(out / m.group(1))
    sdist, wheel = built
    return wheel, sdist, tmp


def test_wheel_and_sdist_hold_the_package_and_nothing_else(built):
    wheel, sdist, _ = built
    assert wheel.name == f"zkelect-{_meson_version()}-py3-none-any.whl", wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    code = sorted(n for n in names if not n.startswith("zkelect-"))
    assert code == [f"zkelect/{m}" for m in MODULES], names
    with tarfile.open(sdist) as tar:
        inside = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", *(f"zkelect/{m}" for m in MODULES)} <= inside, inside
    assert not [n for n in inside if n.startswith("tests")], inside


def test_pip_installed_wheel_runs_the_example_outside_the_tree(built, zk, build_dir, tmp_path):
    wheel, _, _ = built
    site = tmp_path / "site"
    _ok(_run(["/usr/bin/python3", "-m", "pip", "install", "--no-deps", "--no-index",
              "--disable-pip-version-check", "--target", str(site), str(wheel)],
             cwd=tmp_path, timeout=300), "pip install the wheel")
    d = tmp_path / "outside"
    d.mkdir()
    assert not d.resolve().is_relative_to(REPO.resolve())
    (d / "example.py").write_text(_readme_block(REPO / "bindings" / "README.md",
                                                r"<!-- python-example -->\s*```python\n(.*?)```"))
    env = _clean_env(tmp_path)
    env.update(PYTHONPATH=str(site), ZK_HOSTS=zk.connect_string,
               LD_LIBRARY_PATH=str(build_dir / "capi"))
    where = _ok(_run(["/usr/bin/python3", "-c", "import zkelect; print(zkelect.__file__)"],
                     cwd=d, env=env), "import zkelect").stdout.strip()
    assert where == str(site / "zkelect" / "__init__.py"), where
    proc = _ok(_run(["/usr/bin/python3", "example.py"], cwd=d, env=env, timeout=120),
               "the Python example from the wheel")
    _token(proc.stdout, "the Python example")

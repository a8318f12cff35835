"""The Curators the interop test runs beside libzkelect (bed/curatordist.py):
their names, and a release that cannot be had said before any test runs it."""

import subprocess
import sys
from pathlib import Path

import pytest

from bed import curatordist, zkdist


def test_curator_versions_named(monkeypatch, tmp_path):
    monkeypatch.delenv("ZKELECT_CURATOR_ALSO", raising=False)
    assert curatordist.versions() == [curatordist.DEBIAN, curatordist.NEWEST]
    monkeypatch.setenv("ZKELECT_CURATOR_ALSO", "")
    assert curatordist.versions() == [curatordist.DEBIAN]
    monkeypatch.setenv("ZKELECT_CURATOR_ALSO", "5.8.0, debian")
    assert curatordist.versions() == [curatordist.DEBIAN, "5.8.0"]
    with pytest.raises(zkdist.ZkDistError, match="expected 'debian'"):
        curatordist.normalize("5.x")
    assert "/usr/share/java/curator-recipes.jar" in curatordist.classpath("debian")

    # Not cached, and no Maven to fetch it with: said, naming what and the cure.
    monkeypatch.setenv("ZKELECT_CURATOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(zkdist.ZkDistError, match=r"Curator 5\.9\.0 is not in .*curatordist\.py fetch"):
        curatordist.classpath("5.9.0", fetch_missing=False)
    with pytest.raises(zkdist.ZkDistError, match=r"Curator 5\.9\.0: mvn not found"):
        curatordist.classpath("5.9.0")
    r = subprocess.run([sys.executable, str(Path(curatordist.__file__)), "fetch", "5.9.0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Curator 5.9.0: mvn not found" in r.stderr, r.stderr

"""The reference in docs/api.md is generated from the public header; a stale
copy would document an API that does not exist."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_api_reference_matches_header():
    r = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_api.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_every_exported_function_is_documented():
    header = (ROOT / "capi" / "zkelect" / "zkelect.h").read_text()
    api = (ROOT / "docs" / "api.md").read_text()
    funcs = set(re.findall(r"ZKELECT_API[^;(]*?\b(zkelect_\w+)\s*\(", header))
    assert len(funcs) > 50
    missing = sorted(f for f in funcs if "### `%s`" % f not in api)
    assert not missing, missing

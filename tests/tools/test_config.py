"""`zkelect config`: every key the library lists (zkelect_conf_key), with the
default the library gives it and the value the tool's options make current;
no ZooKeeper needed, as the command connects to nothing."""

import json
import subprocess

import pytest

from bed.toolutil import CApi


@pytest.fixture(scope="module")
def defaults(build_dir):
    d = CApi(build_dir).conf_defaults()
    assert "zk.hosts" in d and "leadership" in d, d
    return d


def config(zkelect_bin, env, *args):
    r = subprocess.run([str(zkelect_bin), "config", *args], env=env, capture_output=True,
                       text=True, timeout=30, stdin=subprocess.DEVNULL)
    return r


def table(out):
    """{key: (default, current)} from the text listing."""
    lines = out.splitlines()
    assert lines[0].split() == ["KEY", "DEFAULT", "CURRENT"], lines[0]
    rows = {}
    for line in lines[1:]:
        key, default, current = line.split()
        unq = lambda v: "" if v == '""' else v
        rows[key] = (unq(default), unq(current))
    return rows


def test_every_key_with_its_default(zkelect_bin, env, defaults):
    r = config(zkelect_bin, env)
    assert r.returncode == 0, r.stderr
    rows = table(r.stdout)
    assert list(rows) == list(defaults)
    for key, default in defaults.items():
        assert rows[key] == (default, default), key

    r = config(zkelect_bin, env, "--json")
    assert r.returncode == 0, r.stderr
    keys = json.loads(r.stdout)["keys"]
    assert [k["key"] for k in keys] == list(defaults)
    for k in keys:
        assert k["default"] == defaults[k["key"]] and k["current"] == k["default"], k


def test_options_show_as_current(zkelect_bin, env, defaults, tmp_path):
    assert defaults["leadership"] != "strict"
    auth = tmp_path / "auth"
    auth.write_text("digest:user:secret\n")
    args = ["--connect", "127.0.0.1:2181,127.0.0.1:2182", "--path", "/ignored",
            "--session-timeout-ms", "4000", "--set", "leadership=strict",
            "--set", "lease.margin.ms=500", "--auth-file", str(auth)]
    want = {"zk.hosts": "127.0.0.1:2181,127.0.0.1:2182", "zk.session.timeout.ms": "4000",
            "leadership": "strict", "lease.margin.ms": "500", "zk.auth": "***"}
    for fmt in ("text", "json"):
        r = config(zkelect_bin, env, *args, *(["--json"] if fmt == "json" else []))
        assert r.returncode == 0, r.stderr
        assert "secret" not in r.stdout, "credentials must not be printed"
        if fmt == "json":
            rows = {k["key"]: (k["default"], k["current"]) for k in json.loads(r.stdout)["keys"]}
        else:
            rows = table(r.stdout)
        for key, default in defaults.items():
            assert rows[key] == (default, want.get(key, default)), (fmt, key)


def test_environment_and_refusals(zkelect_bin, env, defaults):
    env = dict(env, ZKELECT_CONNECT="zk1:2181")
    r = config(zkelect_bin, env, "--json")
    assert r.returncode == 0, r.stderr
    rows = {k["key"]: k["current"] for k in json.loads(r.stdout)["keys"]}
    assert rows["zk.hosts"] == "zk1:2181"

    # The library's own checks, with the tool's wording and exit status.
    r = config(zkelect_bin, env, "--set", "no.such.key=1")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith('zkelect config: --set: unknown configuration key "no.such.key"')
    r = config(zkelect_bin, env, "--set", "leadership=sometimes")
    assert r.returncode == 2 and r.stderr.startswith("zkelect config: --set: leadership")


def test_listed_in_help(zkelect_bin, env):
    r = subprocess.run([str(zkelect_bin), "--help"], env=env, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0 and "\n  config " in r.stdout, r.stdout
    r = config(zkelect_bin, env, "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: zkelect config"), r.stdout


@pytest.mark.parametrize("args", [
    ["--set", "lease.margin.ms=6000"],                                 # not below T/2 = 5000
    ["--session-timeout-ms", "4000", "--set", "lease.margin.ms=2000"],
    ["--set", "zk.session.timeout.ms=3000", "--set", "lease.margin.ms=1500"],
    ["--set", "lease.margin.ms=10"],                                   # run needs 20 at least
    ["--set", "lease.margin.ms=400"],
    ["--session-timeout-ms", "4000", "--set", "lease.margin.ms=1999"],
])
def test_config_and_run_agree_on_the_lease_margin(zkelect_bin, env, args):
    """`config` shows the options as the commands would take them: a margin
    that `run` refuses with the same options is refused by `config` too,
    with the same status (2) and message, and one run takes is shown."""
    c = config(zkelect_bin, env, "--connect", "127.0.0.1:1", *args)
    r = subprocess.run([str(zkelect_bin), "run", "--connect", "127.0.0.1:1", "--path", "/x",
                        "--connect-timeout-ms", "300", *args, "--", "true"],
                       env=env, capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    if r.returncode == 2:
        assert c.returncode == 2, (c.returncode, c.stdout, c.stderr, r.stderr)
        assert "lease.margin.ms" in c.stderr, c.stderr
        said = [e.splitlines()[0] for e in (r.stderr, c.stderr)]
        assert said[0][said[0].index("lease.margin.ms"):] == \
            said[1][said[1].index("lease.margin.ms"):], said
    else:
        assert r.returncode == 3, r.stderr   # taken, then no connection
        assert c.returncode == 0, c.stderr

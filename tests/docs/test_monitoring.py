"""docs/monitoring.md and what it ships: the metric table is exactly what
`zkelect run` exports (rendered from a real client's stats snapshot), the
alert rules pass `promtool check rules` and their own `promtool test rules`
cases, and the Grafana dashboard's queries are valid PromQL that use only
exported names and labels."""
import ctypes as C
import json
import pathlib
import re
import subprocess

import pytest

from bed import zkc
import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "monitoring.md"
MON = ROOT / "docs" / "monitoring"
RULES = MON / "zkelect-alerts.yml"
RULE_TESTS = MON / "zkelect-alerts.test.yml"
DASHBOARD = MON / "zkelect-grafana.json"
NAME_RE = re.compile(r"\b(zkelect_[a-z0-9_]+|leader_election_master_status)\b")
# Labels the tool puts on its series, and the ones Prometheus adds to every target.
LABELS = {"name", "path", "id", "state", "reason", "le", "group", "job", "instance"}


@pytest.fixture(scope="module")
def exported(build_dir, zkelect_bin):
    """{family name as exposed: type}, from the exposition of a real client
    snapshot (a client that never connects, with one election on it, in a
    balanced group: the families of balance.group too)."""
    api = zkc.Api(build_dir)
    c = api.client(zk_hosts="127.0.0.1:1", zk_log_level="none", balance_group="/docs/group")
    e = api.election(c, "/docs/monitoring", "doc")
    try:
        err = C.create_string_buffer(256)
        st = api.lib.zkelect_client_stats(c, err, 256)
        assert st, err.value
        doc = api.lib.zkelect_stats_json(st).decode()
        api.lib.zkelect_stats_destroy(st)
    finally:
        api.lib.zkelect_election_destroy(e)
        api.lib.zkelect_client_destroy(c)
    r = subprocess.run([str(zkelect_bin), "__metrics-render"], input=doc, text=True,
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", r.stdout, re.M))
    # The real parser agrees on every family.
    parsed = {f.name for f in text_string_to_metric_families(r.stdout)}
    assert {n[:-6] if n.endswith("_total") else n for n in types} == parsed
    return types


def _series_names(types):
    """Every sample name a query may use."""
    out = set()
    for n, t in types.items():
        out.add(n)
        if t == "histogram":
            out |= {n + "_bucket", n + "_sum", n + "_count"}
    return out


def test_metric_table_is_what_is_exported(exported):
    text = DOC.read_text()
    section = text[text.index("\n## Metrics\n"):]
    section = section[:section.index("\n## ", 1)]
    rows = re.findall(r"^\| `([a-z_]+)` \| (gauge|counter|histogram) \|", section, re.M)
    documented = dict(rows)
    assert len(rows) == len(documented), "a metric is listed twice"
    assert documented == exported


def test_counters_and_durations_follow_the_naming_rules(exported):
    for n, t in exported.items():
        assert (t == "counter") == n.endswith("_total"), n
        if "latency" in n or "rtt" in n or "remaining" in n or "timeout" in n:
            assert n.endswith("_seconds"), n


def test_alert_rules_pass_promtool():
    r = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 rules found" in r.stdout
    r = subprocess.run(["promtool", "test", "rules", RULE_TESTS.name], cwd=MON,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_alert_rules_use_only_exported_names(exported):
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    assert {x["alert"] for x in rules} == {"ZkelectNoLeader", "ZkelectLeadershipFlapping",
                                           "ZkelectKeepaliveSlow"}
    for x in rules:
        used = set(NAME_RE.findall(x["expr"]))
        assert used and used <= _series_names(exported), (x["alert"], used - _series_names(exported))


def _dashboard_exprs():
    d = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
    var = [v for v in d["templating"]["list"] if v["type"] == "query"]
    return d, exprs, var


def test_dashboard_queries_use_only_exported_names_and_labels(exported, tmp_path):
    d, exprs, var = _dashboard_exprs()
    assert len(exprs) >= 10
    names = _series_names(exported)
    for e in exprs + [v["definition"] for v in var]:
        used = set(NAME_RE.findall(e))
        assert used, e
        assert used <= names, (e, used - names)
        for group in re.findall(r"\b(?:by|on)\s*\(([^)]*)\)", e):
            labels = {l.strip() for l in group.split(",") if l.strip()}
            assert labels <= LABELS, (e, labels - LABELS)
        for label in re.findall(r"[{,]\s*([a-z_]+)\s*(?:=~|!=|=)", e):
            assert label in LABELS, (e, label)
    # Valid PromQL: the queries as recording rules, with the dashboard's
    # variable as its "All" value, through promtool.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:q{i}", "expr": e.replace("$name", ".*")}
        for i, e in enumerate(exprs)]}]}
    f = tmp_path / "dashboard-rules.yml"
    f.write_text(yaml.safe_dump(rules))
    r = subprocess.run(["promtool", "check", "rules", str(f)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    # Every panel has a unique id and a place.
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    assert all({"x", "y", "w", "h"} <= set(p["gridPos"]) for p in d["panels"])

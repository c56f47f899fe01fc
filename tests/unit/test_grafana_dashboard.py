"""The shipped Grafana dashboard queries only metrics the collection writes, and shows all of them."""
import json
import os
import re

from ansible_collections.jetson.specdec.plugins.module_utils.record import watch
from ansible_collections.jetson.specdec.plugins.module_utils.record.textfile import build_families

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DASHBOARD = os.path.join(ROOT, "dashboards", "jetson-specdec.json")
PULL_SCRIPT = os.path.join(ROOT, "roles", "pull_mode", "templates", "pull.sh.j2")
METRIC = re.compile(r"\bjetson_specdec_[a-z0-9_]+")


def _queries(dashboard):
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield target["expr"]
    for var in dashboard["templating"]["list"]:
        query = var.get("query")
        if isinstance(query, dict):
            yield query["query"]


def _written():
    names = {family[0] for family in build_families({})}
    names |= {family[0] for family in watch.families({"status": "steady"})}  # jetson_specdec_watch.prom
    with open(PULL_SCRIPT, encoding="utf-8") as handle:
        names |= set(re.findall(r"^# TYPE (jetson_specdec_[a-z0-9_]+) ", handle.read(), re.M))
    return names


def test_every_queried_metric_is_written():
    with open(DASHBOARD, encoding="utf-8") as handle:
        dashboard = json.load(handle)
    queried = {name for expr in _queries(dashboard) for name in METRIC.findall(expr)}
    written = _written()
    assert queried, "the dashboard queries no jetson_specdec metric"
    assert queried <= written, "queried but never written: %s" % sorted(queried - written)
    assert written <= queried, "written but not on the dashboard: %s" % sorted(written - queried)


def test_panels_are_well_formed():
    with open(DASHBOARD, encoding="utf-8") as handle:
        dashboard = json.load(handle)
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24
        for target in panel["targets"]:
            # PromQL braces and parentheses balance: a typo here is an empty panel in Grafana.
            expr = target["expr"]
            assert expr.count("{") == expr.count("}") and expr.count("(") == expr.count(")"), expr

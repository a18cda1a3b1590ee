"""deploy/observability against the code: alerts and dashboard use metrics the services export.

Both sides are parsed: the PromQL expressions of the PrometheusRule and of the Grafana
dashboard (their series selectors, by a small PromQL tokenizer), and the metric families the
code registers with prometheus_client (every module that defines one is imported, and the
registry's families expanded to the series names Prometheus stores: ``_total`` for counters,
``_bucket``/``_count``/``_sum`` for histograms). A label used in a selector must be one of
that metric's labels. Every alert names its severity and a runbook section that exists in
docs/operations.md, and the alerts the issue asks for are all there.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
OBSERVABILITY = ROOT / "deploy" / "observability"
RUNBOOK = ROOT / "docs" / "operations.md"
#: every module that registers a Prometheus metric (a new one is found by the test below)
METRIC_MODULES = ("servicekit.metrics", "servicekit.consumer")

KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}")
IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def series_selectors(expr: str) -> list[tuple[str, set[str]]]:
    """``(metric name, label names matched)`` of every series selector in a PromQL expression."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals (label values, formats)
    text = GROUPING.sub(" ", text)  # by (...), on (...): label lists, not series
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range and subquery windows [5m], [10m:1m]
    found: list[tuple[str, set[str]]] = []

    def take(m: re.Match[str]) -> str:
        labels = {part.split("=")[0].rstrip("!~ ").strip() for part in m.group(2).split(",") if part.strip()}
        name = m.group(1)
        if name is None:
            name = next(
                v for k, v in (p.split("=", 1) for p in m.group(2).split(",")) if k.strip() == "__name__"
            )
        found.append((name, labels))
        return " "

    text = SELECTOR.sub(take, text)
    for m in IDENT.finditer(text):
        following = text[m.end() :].lstrip()
        if following.startswith("(") or m.group(0) in KEYWORDS:
            continue  # a function or aggregation, or a keyword
        if re.fullmatch(r"\d+[smhdwy]?", m.group(0)) or text[max(0, m.start() - 1)] in "0123456789.":
            continue
        if m.group(0) in ("e", "Inf", "NaN", "inf", "nan"):
            continue
        found.append((m.group(0), set()))
    return found


@functools.cache
def exported() -> dict[str, set[str]]:
    """Series name -> label names, for every metric the code registers."""
    for module in METRIC_MODULES:
        importlib.import_module(module)
    series: dict[str, set[str]] = {}
    for name, collector in list(REGISTRY._names_to_collectors.items()):  # noqa: SLF001 - the registry's index
        labels = set(getattr(collector, "_labelnames", ()))
        if name.startswith("roomtax_"):
            series[name] = labels | ({"le"} if name.endswith("_bucket") else set())
    return series


def test_the_code_exports_the_metrics_the_issue_asks_for() -> None:
    names = set(exported())
    assert {
        "roomtax_outbox_backlog",
        "roomtax_outbox_oldest_unpublished_age_seconds",
        "roomtax_outbox_dead_letters_open",
        "roomtax_consumer_dead_letters",
        "roomtax_consumer_lag",
        "roomtax_consumer_handler_seconds_bucket",
        "roomtax_inbox_duplicates_skipped_total",
        "roomtax_job_last_success_timestamp_seconds",
        "roomtax_http_requests_total",
        "roomtax_http_request_seconds_bucket",
    } <= names
    assert exported()["roomtax_consumer_lag"] == {"consumer", "topic", "partition"}


def test_every_metric_module_is_listed() -> None:
    defining = set()
    for path in [*ROOT.glob("libs/*/*/**/*.py"), *ROOT.glob("services/*/*/**/*.py")]:
        package_root = ROOT / path.relative_to(ROOT).parts[0] / path.relative_to(ROOT).parts[1]
        if "tests" in path.relative_to(package_root).parts:
            continue
        if re.search(r"^[A-Z_]+ = (Counter|Gauge|Histogram|Summary)\(", path.read_text(), re.M):
            defining.add(".".join(path.relative_to(package_root).with_suffix("").parts))
    assert defining == set(METRIC_MODULES)


@functools.cache
def rules() -> list[dict[str, Any]]:
    (doc,) = [d for d in yaml.safe_load_all((OBSERVABILITY / "prometheusrule.yaml").read_text()) if d]
    assert doc["kind"] == "PrometheusRule"
    return [rule for group in doc["spec"]["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    dashboard = json.loads((OBSERVABILITY / "dashboards" / "roomtax.json").read_text())
    return [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]


def check_expression(expr: str) -> None:
    selectors = series_selectors(expr)
    assert selectors, expr
    for name, labels in selectors:
        assert name in exported(), f"{name!r} (in {expr!r}) is not a metric the code exports"
        assert labels <= exported()[name], f"{name}: labels {sorted(labels - exported()[name])} do not exist"


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r["alert"])
def test_alert_expressions_use_exported_metrics(rule: dict[str, Any]) -> None:
    check_expression(rule["expr"])


@pytest.mark.parametrize("expr", dashboard_exprs())
def test_dashboard_expressions_use_exported_metrics(expr: str) -> None:
    check_expression(expr)


def test_the_tokenizer_finds_every_selector_and_no_label_or_function() -> None:
    expr = (
        'sum by (service) (rate(roomtax_http_requests_total{status=~"5..", service!="x"}[5m])) '
        "/ ignoring (status) histogram_quantile(0.99, rate(roomtax_http_request_seconds_bucket[1m])) > 1e3"
    )
    assert series_selectors(expr) == [
        ("roomtax_http_requests_total", {"status", "service"}),
        ("roomtax_http_request_seconds_bucket", set()),
    ]
    with pytest.raises(AssertionError, match="'roomtax_nope_total'"):
        check_expression("rate(roomtax_nope_total[5m]) > 0")
    with pytest.raises(AssertionError, match=r"labels \['tenant'\] do not exist"):
        check_expression('roomtax_outbox_backlog{tenant="a"} > 0')


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors of the Markdown headings (lower case, punctuation dropped, spaces to -)."""
    out = set()
    for line in markdown.splitlines():
        if m := re.match(r"#+\s+(.*)", line):
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", m.group(1).strip().lower())))
    return out


def test_alerts_have_a_severity_and_a_runbook_section() -> None:
    sections = anchors(RUNBOOK.read_text())
    for rule in rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        url = rule["annotations"]["runbook_url"]
        assert url.startswith("https://github.com/roomtax/roomtax/blob/main/docs/operations.md#"), url
        assert url.split("#", 1)[1] in sections, f"{rule['alert']}: no section {url.split('#', 1)[1]!r}"
        assert rule["annotations"]["summary"]


def test_the_alerts_the_issue_asks_for() -> None:
    by_name = {r["alert"]: r for r in rules()}
    assert by_name["RoomtaxOutboxStale"]["expr"].endswith("> 300")  # outbox age > 5 min
    assert by_name["RoomtaxConsumerLagGrowing"]["for"] == "10m"
    assert "roomtax_outbox_dead_letters_open" in by_name["RoomtaxOutboxDeadLetter"]["expr"]
    assert "roomtax_consumer_dead_letters" in by_name["RoomtaxConsumerDeadLetter"]["expr"]
    assert by_name["RoomtaxJobNotRun"]["expr"].endswith("> 26 * 3600")
    assert 'status=~"5.."' in by_name["RoomtaxHigh5xxRate"]["expr"]
    assert by_name["RoomtaxHighLatencyP99"]["expr"].startswith("histogram_quantile(0.99,")

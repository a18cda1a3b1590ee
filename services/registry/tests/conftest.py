from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from registry.app import build_app
from registry.settings import RegistrySettings
from servicekit.testing import BrokerProcess, fresh_database, serving

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="session")
async def registry_db() -> str:
    return await fresh_database("roomtax_test_registry", MIGRATIONS)


@pytest.fixture(scope="session")
async def service_app(registry_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    settings = RegistrySettings(
        environment="test", database_url=registry_db, kafka_bootstrap=broker.bootstrap
    )
    async with serving(build_app(settings)) as app:
        yield app

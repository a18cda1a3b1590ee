from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from distribution.app import build_app
from distribution.settings import DistributionSettings
from servicekit.testing import BrokerProcess, fresh_database, serving_service

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="session")
async def distribution_db() -> str:
    return await fresh_database("roomtax_test_distribution", MIGRATIONS)


@pytest.fixture(scope="session")
async def service_app(distribution_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    built = serving_service(build_app, DistributionSettings, database_url=distribution_db, broker=broker)
    async with built as app:
        yield app

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from distribution.app import build_app
from distribution.settings import DistributionSettings
from servicekit.testing import BrokerProcess, fresh_database, rolled_back, running_app

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="session")
async def distribution_db() -> str:
    return await fresh_database("roomtax_test_distribution", MIGRATIONS)


@pytest.fixture(scope="session")
async def distribution_app(distribution_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    settings = DistributionSettings(
        environment="test", database_url=distribution_db, kafka_bootstrap=broker.bootstrap
    )
    app = build_app(settings)
    async with running_app(app) as client:
        app.state.test_client = client
        yield app


@pytest.fixture
async def client(distribution_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose writes are rolled back after the test."""
    async with rolled_back(distribution_app):
        yield distribution_app.state.test_client


@pytest.fixture
def db(client: httpx.AsyncClient, distribution_app: FastAPI) -> async_sessionmaker[AsyncSession]:
    """Sessions inside the test's rolled-back transaction."""
    return distribution_app.state.sessionmaker  # type: ignore[no-any-return]

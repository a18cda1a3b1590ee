from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from filing.app import build_app
from filing.settings import FilingSettings
from servicekit.testing import BrokerProcess, fresh_database, rolled_back, running_app

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="session")
async def filing_db() -> str:
    return await fresh_database("roomtax_test_filing", MIGRATIONS)


@pytest.fixture(scope="session")
async def filing_app(filing_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    settings = FilingSettings(environment="test", database_url=filing_db, kafka_bootstrap=broker.bootstrap)
    app = build_app(settings)
    async with running_app(app) as client:
        app.state.test_client = client
        yield app


@pytest.fixture
async def client(filing_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose writes are rolled back after the test."""
    async with rolled_back(filing_app):
        yield filing_app.state.test_client


@pytest.fixture
def db(client: httpx.AsyncClient, filing_app: FastAPI) -> async_sessionmaker[AsyncSession]:
    """Sessions inside the test's rolled-back transaction."""
    return filing_app.state.sessionmaker  # type: ignore[no-any-return]

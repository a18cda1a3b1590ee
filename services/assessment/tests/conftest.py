from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import httpx
import pytest
from assessment_factories import TODAY, Bus
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment import clock
from assessment.app import build_app
from assessment.settings import AssessmentSettings
from servicekit.testing import BrokerProcess, fresh_database, rolled_back, running_app

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(autouse=True)
def pinned_today(monkeypatch: pytest.MonkeyPatch) -> date:
    """Balances as of "today" (summaries, notice status) must not move with the wall clock."""
    monkeypatch.setattr(clock, "today", lambda: TODAY)
    return TODAY


@pytest.fixture(scope="session")
async def assessment_db() -> str:
    return await fresh_database("roomtax_test_assessment", MIGRATIONS)


@pytest.fixture(scope="session")
async def assessment_app(assessment_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    settings = AssessmentSettings(
        environment="test", database_url=assessment_db, kafka_bootstrap=broker.bootstrap
    )
    app = build_app(settings)
    async with running_app(app) as client:
        app.state.test_client = client
        yield app


@pytest.fixture
async def client(assessment_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose writes are rolled back after the test."""
    async with rolled_back(assessment_app):
        yield assessment_app.state.test_client


@pytest.fixture
def db(client: httpx.AsyncClient, assessment_app: FastAPI) -> async_sessionmaker[AsyncSession]:
    """Sessions inside the test's rolled-back transaction."""
    return assessment_app.state.sessionmaker  # type: ignore[no-any-return]


@pytest.fixture
def bus(db: async_sessionmaker[AsyncSession], assessment_app: FastAPI) -> Bus:
    """Delivers events to the service's real consumers (inbox included), inside the test's transaction."""
    return Bus(db, assessment_app.state.settings)

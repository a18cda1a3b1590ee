from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import pytest
from assessment_factories import CLOCK, RUNTIME, TODAY, Bus
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.app import build_app
from assessment.settings import AssessmentSettings
from servicekit.testing import BrokerProcess, fresh_database, serving

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(autouse=True)
def pinned_today(monkeypatch: pytest.MonkeyPatch) -> date:
    """Balances as of "today" (summaries, notice status) must not move with the wall clock: the
    app's and the consumers' clock is pinned (a test may move it; monkeypatch puts it back)."""
    monkeypatch.setattr(CLOCK, "day", TODAY)
    return TODAY


@pytest.fixture(scope="session")
async def assessment_db() -> str:
    return await fresh_database("roomtax_test_assessment", MIGRATIONS)


@pytest.fixture(scope="session")
async def service_app(assessment_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    settings = AssessmentSettings(
        environment="test", database_url=assessment_db, kafka_bootstrap=broker.bootstrap
    )
    async with serving(build_app(settings, runtime=RUNTIME)) as app:
        yield app


@pytest.fixture
def bus(db: async_sessionmaker[AsyncSession], service_app: FastAPI) -> Bus:
    """Delivers events to the service's real consumers (inbox included), inside the test's transaction."""
    return Bus(db, service_app.state.settings, service_app.state.runtime)

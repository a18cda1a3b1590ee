from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from filing.app import build_app
from filing.settings import FilingSettings
from servicekit.testing import BrokerProcess, fresh_database, serving

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="session")
async def filing_db() -> str:
    return await fresh_database("roomtax_test_filing", MIGRATIONS)


@pytest.fixture(scope="session")
async def service_app(filing_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    settings = FilingSettings(environment="test", database_url=filing_db, kafka_bootstrap=broker.bootstrap)
    async with serving(build_app(settings)) as app:
        yield app

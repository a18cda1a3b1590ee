from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from filing.app import build_app
from filing.settings import FilingSettings
from servicekit.testing import BrokerProcess, fresh_database, serving_service

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="session")
async def filing_db() -> str:
    return await fresh_database("roomtax_test_filing", MIGRATIONS)


@pytest.fixture(scope="session")
async def service_app(filing_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    async with serving_service(build_app, FilingSettings, database_url=filing_db, broker=broker) as app:
        yield app

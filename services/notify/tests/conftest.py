from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from notify.app import build_app
from notify.settings import NotifySettings
from servicekit.testing import BrokerProcess, fresh_database, serving

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="session")
async def notify_db() -> str:
    return await fresh_database("roomtax_test_notify", MIGRATIONS)


@pytest.fixture(scope="session")
def notify_settings(notify_db: str, broker: BrokerProcess) -> NotifySettings:
    return NotifySettings(
        environment="test",
        database_url=notify_db,
        kafka_bootstrap=broker.bootstrap,
        webhook_allow_private_targets=True,
        webhook_retry_base_seconds=0.2,
        webhook_retry_max_seconds=1.0,
        webhook_give_up_after_seconds=3600.0,
        mail_retry_base_seconds=0.2,
        agency_email="agency@roomtax.example",
        portal_url="https://portal.roomtax.example/",
    )


@pytest.fixture(scope="session")
async def service_app(notify_settings: NotifySettings) -> AsyncIterator[FastAPI]:
    async with serving(build_app(notify_settings)) as app:
        yield app

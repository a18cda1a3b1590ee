from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from servicekit_fixtures import build_widget_app, make_chassis_db

from servicekit.testing import BrokerProcess, serving


@pytest.fixture(scope="session")
async def chassis_db() -> str:
    return await make_chassis_db("roomtax_test_chassis")


@pytest.fixture(scope="session")
async def widget_app(chassis_db: str, broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    async with serving(build_widget_app(chassis_db, broker.bootstrap)) as app:
        yield app


@pytest.fixture
def client(widget_app: FastAPI) -> httpx.AsyncClient:
    return widget_app.state.test_client  # type: ignore[no-any-return]

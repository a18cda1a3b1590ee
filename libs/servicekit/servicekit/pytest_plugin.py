"""Pytest fixtures shared by every suite: one real broker per test session, and the
per-test ``client``/``db`` pair of a service suite.

A service's ``conftest.py`` provides a session-scoped ``service_app`` (its app built on
a migrated test database and run with :func:`servicekit.testing.serving`); ``client``
and ``db`` below then wrap each test in a transaction that is rolled back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import BrokerProcess, rolled_back


@pytest.fixture(scope="session")
def broker() -> Iterator[BrokerProcess]:
    """A real Tansu broker (Kafka protocol over TCP) for the whole session."""
    process = BrokerProcess()
    process.start()
    yield process
    process.stop()


@pytest.fixture
async def client(service_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client to the suite's service whose writes are rolled back after the test."""
    async with rolled_back(service_app):
        yield service_app.state.test_client


@pytest.fixture
def db(client: httpx.AsyncClient, service_app: FastAPI) -> async_sessionmaker[AsyncSession]:
    """Sessions inside the test's rolled-back transaction (to look at tables directly)."""
    return service_app.state.sessionmaker  # type: ignore[no-any-return]

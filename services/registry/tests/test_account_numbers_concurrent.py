"""Tax account numbers (PR §26) allocated under concurrent registrations.

The other registry tests run inside one rolled-back transaction, so they never race;
this one runs the real app on a database of its own, with every request its own
committed transaction, as concurrent clients would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from registry_factories import ADMIN, make_operator

from registry.accounts import format_account, is_valid_account
from registry.app import build_app
from registry.settings import RegistrySettings
from servicekit.testing import BrokerProcess, fresh_database, serving_service

CONCURRENT = 20
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="module")
async def committing_app(broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    url = await fresh_database("roomtax_test_registry_accounts", MIGRATIONS)
    async with serving_service(build_app, RegistrySettings, database_url=url, broker=broker) as app:
        yield app


def _lodging(operator_id: str, jurisdiction: str, n: int) -> dict[str, object]:
    return {
        "jurisdiction": jurisdiction,
        "lodging_class": "hotel",
        "name": f"Concurrent Inn {n}",
        "address": {"line1": f"{n} Calle Luna", "municipality": "San Juan"},
        "room_count": 10,
        "operator_id": operator_id,
        "registered_on": "2026-01-01",
    }


class TestConcurrentRegistration:
    @pytest.mark.parametrize("jurisdiction", ["PR", "VI"])
    async def test_twenty_at_once_get_twenty_distinct_consecutive_accounts(
        self, committing_app: FastAPI, jurisdiction: str
    ) -> None:
        client: httpx.AsyncClient = committing_app.state.test_client
        op = await make_operator(client)
        responses = await asyncio.gather(
            *(
                client.post("/v1/lodgings", json=_lodging(op["id"], jurisdiction, n), headers=ADMIN)
                for n in range(CONCURRENT)
            )
        )
        assert [r.status_code for r in responses] == [201] * CONCURRENT, [r.text for r in responses]
        accounts = sorted(r.json()["tax_account"] for r in responses)
        assert accounts == [format_account(jurisdiction, serial) for serial in range(1, CONCURRENT + 1)]
        assert all(is_valid_account(a) for a in accounts)

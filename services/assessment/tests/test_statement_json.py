"""The statement's JSON is written once from the service's wire values (``service.statement_json``,
facts read as rows): byte for byte what validating the dict into ``Statement`` and serializing the
model gives, on accounts with every kind of fact the statement shows."""

from __future__ import annotations

from datetime import date

import httpx
import pytest
from assessment_factories import AUDITOR, Bus, due, new_account
from casework_factories import MAKER, today_is
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.accounts import repository, service
from assessment.accounts.schemas import Statement
from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]


async def through_the_model(db: DB, account: str, as_of: date) -> bytes:
    """The statement as the endpoint answered before: ORM facts, the dict validated into the model."""
    async with db() as session:
        facts = await repository.load_facts(session, account)
    assert facts is not None
    return (
        Statement.model_validate(service.statement(facts, as_of=as_of, explain=False))
        .model_dump_json()
        .encode()
    )


async def same_bytes(client: httpx.AsyncClient, db: DB, account: str, *days: date) -> None:
    for day in days:
        r = await client.get(f"/v1/accounts/{account}/statement", params={"as_of": str(day)}, headers=AUDITOR)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "application/json"
        assert r.content == await through_the_model(db, account, day), day


class TestStatementJson:
    async def test_pr_account_with_amendment_schedule_deficiency_reversal_credit_and_refund(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        first = await bus.declare(account, "2025-01", room_revenue="10000.00", declared_total="850.00")
        await bus.declare(
            account, "2025-01", room_revenue="3000.00", filer_kind="facilitator", filer_id="ota-1"
        )
        await bus.declare(account, "2025-02", room_revenue="10000.00")
        await bus.declare(
            account,
            "2025-01",
            room_revenue="12000.00",
            version=2,
            filing_id=first.data["filing_id"],
            supersedes=first.data["declaration_id"],
            filed_on=date(2025, 4, 1),
        )
        designated = await bus.pay(account, "900.00", due("PR", "2025-01"), periods={"2025-01": "900.00"})
        await bus.pay(account, "3000.00", date(2025, 3, 20))
        await bus.reverse(account, designated, "300.00", date(2025, 5, 2))
        await bus.declare(account, "2025-06", room_revenue="7000.00", filed_on=date(2025, 8, 1))
        refund = await client.post(
            f"/v1/accounts/{account}/refunds",
            json={"amount": "10.00", "requested_on": "2025-09-01"},
            headers=auth("operator", operator_id="op-1"),
        )
        assert refund.status_code == 201, refund.text
        await same_bytes(client, db, account, date(2025, 2, 9), date(2025, 4, 15), date(2025, 12, 31))
        explained = await client.get(
            f"/v1/accounts/{account}/statement",
            params={"as_of": "2025-12-31", "explain": "true"},
            headers=AUDITOR,
        )
        assert explained.status_code == 200, explained.text
        january = explained.json()["periods"][0]
        assert [x["declaration_id"] for x in january["explain"]["liabilities"]] == [
            f["declaration_id"] for f in january["filings"]
        ]
        assert all(x["trace"] for x in january["explain"]["liabilities"])

    async def test_vi_account_with_a_write_off_and_its_reversal(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI")
        await bus.declare(account, "2025-01", jurisdiction="VI", room_revenue="8000.00")
        await bus.declare(account, "2025-02", jurisdiction="VI", room_revenue="4000.00")
        await bus.pay(account, "200.00", date(2025, 3, 31), jurisdiction="VI")
        body = {"period": "2025-01", "reason": "business_closed", "explanation": "hotel closed"}
        proposal = await client.post(f"/v1/accounts/{account}/write-offs", json=body, headers=MAKER)
        assert proposal.status_code == 201, proposal.text
        checker = auth("agency-admin", user_id="u-admin")
        ok = await client.post(f"/v1/proposals/{proposal.json()['id']}/approve", json={}, headers=checker)
        assert ok.status_code == 200, ok.text
        await same_bytes(client, db, account, date(2025, 4, 1), date(2025, 6, 1))
        [fact] = [
            f
            for p in (
                await client.get(
                    f"/v1/accounts/{account}/statement", params={"as_of": "2025-06-01"}, headers=AUDITOR
                )
            ).json()["periods"]
            for f in p["adjustments"]
        ]
        today_is(monkeypatch, date(2025, 5, 1))
        back = await client.post(
            f"/v1/write-offs/{fact['fact_id']}/reversal", json={"reason": "the owner paid"}, headers=MAKER
        )
        assert back.status_code == 200, back.text
        await same_bytes(client, db, account, date(2025, 4, 30), date(2025, 6, 1), date(2026, 1, 1))

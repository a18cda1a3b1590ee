"""Write-offs: proposed and approved by two people, stop accrual and collection from their date,
stay on the record and can be reversed.

VI, period 2025-01: tax 1,000.00 (8,000.00 at 12.5%) due 2025-03-02 (§54(f)); declared on time,
unpaid. §54(i): 5% from day 1 (03-03), 15% from day 31 (04-02), 25% from day 91 (06-01);
1% a month compounding; interest month 1 = 03-03..04-02 (31 days).
"""

from __future__ import annotations

from datetime import date

import httpx
import pytest
from assessment_factories import Bus, new_account, rows, statement
from casework_factories import MAKER, disputed, today_is
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.casework import repository as casework_repository
from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]
ADMIN_CHECKER = auth("agency-admin", user_id="u-admin")
WRITE_OFF = {"period": "2025-01", "reason": "business_closed", "explanation": "hotel closed, owner abroad"}


async def period_of(client: httpx.AsyncClient, account: str, on: str) -> dict[str, str]:
    p: dict[str, str] = (await statement(client, account, on))["periods"][0]
    return p


class TestWriteOff:
    async def test_write_off_stops_accrual_and_its_reversal_resumes_it(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI")
        await bus.declare(account, "2025-01", jurisdiction="VI", room_revenue="8000.00")
        r = await client.post(f"/v1/accounts/{account}/write-offs", json=WRITE_OFF, headers=MAKER)
        assert r.status_code == 201, r.text
        proposal = r.json()
        # on 04-01: 1,000.00 + 5% 50.00 + interest 1,000 x 1% x 1/31 + 1,050 x 1% x 29/31 = 10.15
        assert (proposal["amount"], proposal["admin_approval_required"]) == ("1060.15", True)
        dup = await client.post(f"/v1/accounts/{account}/write-offs", json=WRITE_OFF, headers=MAKER)
        assert dup.status_code == 409  # one pending proposal per period
        own = await client.post(f"/v1/proposals/{proposal['id']}/approve", json={}, headers=MAKER)
        assert own.status_code == 409
        ok = await client.post(f"/v1/proposals/{proposal['id']}/approve", json={}, headers=ADMIN_CHECKER)
        assert ok.status_code == 200, ok.text

        # the day before: 1,000.00 + 50.00 + (0.322581 + 1,050 x 1% x 28/31 = 9.483871) 9.81
        assert (await period_of(client, account, "2025-03-31"))["balance"] == "1059.81"
        on = await period_of(client, account, "2025-04-01")
        assert (on["balance"], on["written_off"]) == ("0.00", "1060.15")
        # two months later nothing accrued, the 15% and 25% tiers added nothing
        later = await period_of(client, account, "2025-06-01")
        assert (later["balance"], later["written_off"], later["penalties"][0]["amount"]) == (
            "0.00",
            "1060.15",
            "50.00",
        )
        [fact_id] = [
            r[0] for r in await rows(db, "SELECT id FROM adjustment_facts WHERE tax_account = :a", a=account)
        ]

        today_is(monkeypatch, date(2025, 5, 1))
        back = await client.post(
            f"/v1/write-offs/{fact_id}/reversal", json={"reason": "the owner paid a bond"}, headers=MAKER
        )
        assert back.status_code == 200, back.text
        assert back.json()["reversed_on"] == "2025-05-01"
        again = await client.post(f"/v1/write-offs/{fact_id}/reversal", json={"reason": "x"}, headers=MAKER)
        assert again.status_code == 409
        assert (await period_of(client, account, "2025-04-30"))["balance"] == "0.00"  # before the reversal
        # owed again from 05-01: 15% (day 60) then 25% from day 91; 04-02..05-01 accrued nothing;
        # interest 10.145161 + 05-02: 1,160.15 x 1% x 1/30 = 0.386717 + 05-03..06-01:
        # 1,160.53 x 1% x 30/31 = 11.230935 -> 21.76 ; 1,000.00 + 250.00 + 21.76
        resumed = await period_of(client, account, "2025-06-01")
        assert (resumed["balance"], resumed["written_off"]) == ("1271.76", "0.00")
        kinds = [
            e["kind"]
            for e in (await client.get(f"/v1/accounts/{account}/timeline", headers=MAKER)).json()["entries"]
        ]
        assert kinds == ["proposal.made", "proposal.approved", "adjustment.write_off", "adjustment.reversed"]

    async def test_no_write_off_under_an_open_case_or_before_the_limitation(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        account, case = await disputed(client, bus, "op-w")
        r = await client.post(f"/v1/accounts/{account}/write-offs", json=WRITE_OFF, headers=MAKER)
        assert r.status_code == 409
        assert r.json()["errors"][0]["pointer"] == "#/body/period"
        url = f"/v1/cases/{case['id']}"
        await client.post(f"{url}/review", headers=MAKER)
        await client.post(f"{url}/decision", json={"outcome": "sustain", "reasons": "r"}, headers=MAKER)
        await client.post(
            f"{url}/appeal", json={"grounds": "g"}, headers=auth("operator", operator_id="op-w")
        )
        under_appeal = await client.post(f"/v1/accounts/{account}/write-offs", json=WRITE_OFF, headers=MAKER)
        assert under_appeal.status_code == 409
        assert "under_appeal" in under_appeal.json()["detail"]
        await client.post(
            f"{url}/appeal/resolution", json={"outcome": "upheld", "reasons": "r"}, headers=MAKER
        )
        early = await client.post(
            f"/v1/accounts/{account}/write-offs",
            json={**WRITE_OFF, "reason": "limitation_passed"},
            headers=MAKER,
        )
        assert early.status_code == 422
        assert early.json()["errors"][0]["pointer"] == "#/body/reason"
        assert await rows(
            db,
            "SELECT count(*) FROM proposals WHERE action = 'write_off.approve' AND tax_account = :a",
            a=account,
        ) == [(0,)]


class TestProposalListing:
    async def test_the_status_is_filtered_before_the_limit(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 6, 1))
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI")
        made = []
        for period in ("2025-01", "2025-02", "2025-03"):
            await bus.declare(account, period, jurisdiction="VI", room_revenue="8000.00")
            r = await client.post(
                f"/v1/accounts/{account}/write-offs", json={**WRITE_OFF, "period": period}, headers=MAKER
            )
            assert r.status_code == 201, r.text
            made.append(r.json()["id"])
        ok = await client.post(f"/v1/proposals/{made[0]}/approve", json={}, headers=ADMIN_CHECKER)
        assert ok.status_code == 200, ok.text

        async def listed(**params: str) -> list[tuple[str, str]]:
            r = await client.get("/v1/proposals", params={"tax_account": account, **params}, headers=MAKER)
            assert r.status_code == 200, r.text
            return [(p["id"], p["status"]) for p in r.json()]

        assert await listed(status="pending") == [(made[1], "pending"), (made[2], "pending")]
        assert await listed(status="approved") == [(made[0], "approved")]
        assert await listed(status="rejected") == []
        # pending first, oldest first; then the reviewed ones, newest first
        assert await listed() == [(made[1], "pending"), (made[2], "pending"), (made[0], "approved")]
        # the first proposal made is reviewed: a limit taken before the filter left none pending
        monkeypatch.setattr(casework_repository, "QUEUE_LIMIT", 1)
        assert await listed(status="pending") == [(made[1], "pending")]
        assert await listed(status="approved") == [(made[0], "approved")]

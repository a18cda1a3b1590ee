from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import httpx
import pytest
from distribution_factories import ADMIN, AUDITOR, allocated, certify, collect, run, scalar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

D = Decimal


async def _counts(db: async_sessionmaker[AsyncSession]) -> tuple[int, int, int, int]:
    return (
        await scalar(db, "SELECT count(*) FROM runs"),
        await scalar(db, "SELECT count(*) FROM journal_entries"),
        await scalar(db, "SELECT count(*) FROM run_collections"),
        await scalar(db, "SELECT count(*) FROM outbox"),
    )


class TestCreateRun:
    async def test_running_a_posted_month_again_returns_the_same_run(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await certify(client, 2027, "1200000.00")
        await collect(db, amount="1000000.00", collected_on=date(2026, 7, 15))
        first = await run(client, "PR", "2026-07")
        before = await _counts(db)
        again = await run(client, "PR", "2026-07", expect=200)
        assert again == first
        assert await _counts(db) == before
        assert (await run(client, "PR", "2026-07", preview=True, expect=200))["id"] == first["id"]

    async def test_preview_posts_nothing(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await certify(client, 2027, "1200000.00")
        await collect(db, amount="1000000.00", collected_on=date(2026, 7, 15))
        before = await _counts(db)
        preview = await run(client, "PR", "2026-07", preview=True, expect=200)
        assert (preview["id"], preview["status"], preview["posted_at"]) == (None, "preview", None)
        assert allocated(preview)["pr_bank_special_account"] == D("120000.00")
        assert await _counts(db) == before
        posted = await run(client, "PR", "2026-07")
        assert posted["allocations"] == preview["allocations"]

    async def test_a_gap_is_refused(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await run(client, "VI", "2026-10")
        r = await client.post("/v1/runs", json={"jurisdiction": "VI", "month": "2026-12"}, headers=ADMIN)
        assert r.status_code == 409
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["errors"] == [
            {"pointer": "#/body/month", "detail": "the next month to run is 2026-11"}
        ]
        r = await client.post("/v1/runs", json={"jurisdiction": "VI", "month": "2026-09"}, headers=ADMIN)
        assert r.status_code == 409
        assert "never rewritten" in r.json()["detail"]

    async def test_bad_month_is_422(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/runs", json={"jurisdiction": "PR", "month": "2026-13"}, headers=ADMIN)
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/month"

    async def test_late_collection_goes_to_the_next_run(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await collect(db, jurisdiction="VI", amount="100000.00", collected_on=date(2026, 10, 3))
        october = await run(client, "VI", "2026-10")
        await collect(
            db, jurisdiction="VI", amount="2000.00", collected_on=date(2026, 10, 29)
        )  # arrives late
        await collect(db, jurisdiction="VI", amount="3000.00", collected_on=date(2026, 11, 2))
        await collect(db, jurisdiction="VI", amount="999.00", collected_on=date(2026, 12, 1))  # next month's
        november = await run(client, "VI", "2026-11")
        assert (november["collected"], november["inputs"]["late"]) == (
            "5000.00",
            {"collections": 1, "amount": "2000.00"},
        )
        assert (await client.get(f"/v1/runs/{october['id']}", headers=AUDITOR)).json() == october
        funds = (
            await client.get(
                "/v1/funds", params={"jurisdiction": "VI", "as_of": "2026-12-31"}, headers=AUDITOR
            )
        ).json()
        assert (funds["pending"], funds["distributed"], funds["collected"]) == (
            "999.00",
            "105000.00",
            "105999.00",
        )

    async def test_reversals_larger_than_collections_stay_pending(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await collect(db, jurisdiction="VI", amount="1000.00", collected_on=date(2026, 10, 3))
        await run(client, "VI", "2026-10")
        await collect(db, jurisdiction="VI", amount="-400.00", collected_on=date(2026, 10, 3))
        await collect(db, jurisdiction="VI", amount="100.00", collected_on=date(2026, 11, 3))
        november = await run(client, "VI", "2026-11")
        assert november["collected"] == "0.00"
        assert november["inputs"]["carried"][0] | {"reason": ""} == {
            "bucket": "room_tax",
            "amount": "-300.00",
            "collections": 2,
            "reason": "",
        }
        await collect(db, jurisdiction="VI", amount="500.00", collected_on=date(2026, 12, 3))
        december = await run(client, "VI", "2026-12")
        assert december["collected"] == "200.00"
        funds = (
            await client.get(
                "/v1/funds", params={"jurisdiction": "VI", "as_of": "2026-12-31"}, headers=AUDITOR
            )
        ).json()
        assert (funds["pending"], funds["distributed"], funds["collected"]) == ("0.00", "1200.00", "1200.00")

    async def test_posting_emits_run_posted(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await collect(db, jurisdiction="VI", amount="10000.00", collected_on=date(2026, 10, 3))
        body = await run(client, "VI", "2026-10")
        payload = await scalar(
            db, "SELECT payload FROM outbox WHERE event_type = 'roomtax.distribution.run.posted.v1'"
        )
        event = payload if isinstance(payload, dict) else json.loads(payload)
        assert (event["subject"], event["source"]) == (body["id"], "/roomtax/distribution")
        assert event["data"]["collected"] == "10000.00"
        assert event["data"]["journal_entry_id"] == body["journal_entry_id"]
        assert await scalar(db, "SELECT topic FROM outbox") == "distribution.runs"


class TestRunReport:
    async def test_csv_lists_every_allocation(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await collect(db, jurisdiction="VI", amount="10000.00", collected_on=date(2026, 10, 3))
        body = await run(client, "VI", "2026-10")
        r = await client.get(f"/v1/runs/{body['id']}/report.csv", headers=AUDITOR)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/csv")
        rows = r.text.splitlines()
        assert rows[0] == "run_id,jurisdiction,month,account,fund,name,rule,section,amount"
        assert rows[1] == (
            f"{body['id']},VI,2026-10,fund:vi_agriculture_revolving_fund,"
            "vi_agriculture_revolving_fund,Agriculture Revolving Fund (33 V.I.C. § 3018),"
            "vi.room_tax_floor,§54(e)(1)(A),10000.00"
        )
        assert rows[-1].endswith(",total,Collected (distributed by the run),collected,,10000.00")

    async def test_unknown_run_is_404(self, client: httpx.AsyncClient) -> None:
        assert (await client.get("/v1/runs/nope", headers=AUDITOR)).status_code == 404

    async def test_list_by_jurisdiction(self, client: httpx.AsyncClient) -> None:
        await run(client, "VI", "2026-10")
        await run(client, "VI", "2026-11")
        r = await client.get("/v1/runs", params={"jurisdiction": "VI", "limit": 1}, headers=AUDITOR)
        page = r.json()
        assert [x["month"] for x in page["items"]] == ["2026-10"]
        r = await client.get(
            "/v1/runs", params={"jurisdiction": "VI", "cursor": page["next_cursor"]}, headers=AUDITOR
        )
        assert [x["month"] for x in r.json()["items"]] == ["2026-11"]


class TestAuthorization:
    @pytest.mark.parametrize("role", ["operator", "facilitator"])
    @pytest.mark.parametrize(
        "path",
        [
            "/v1/funds?jurisdiction=PR",
            "/v1/runs",
            "/v1/certifications",
            "/v1/ledger/trial-balance",
            "/v1/fiscal-years/2027/summary?jurisdiction=PR",
            "/v1/allocations?jurisdiction=PR&fiscal_year=2027",
        ],
    )
    async def test_operators_and_facilitators_get_403(
        self, client: httpx.AsyncClient, role: str, path: str
    ) -> None:
        headers = auth(role, operator_id="op-1") if role == "operator" else auth(role, facilitator_id="f-1")
        assert (await client.get(path, headers=headers)).status_code == 403

    @pytest.mark.parametrize("role", ["agency-auditor", "dashboard", "operator"])
    async def test_only_the_admin_runs(self, client: httpx.AsyncClient, role: str) -> None:
        r = await client.post(
            "/v1/runs",
            json={"jurisdiction": "PR", "month": "2026-07"},
            headers=auth(role, operator_id="op-1"),
        )
        assert r.status_code == 403

    async def test_dashboard_reads(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/v1/funds", params={"jurisdiction": "PR"}, headers=auth("dashboard"))
        assert r.status_code == 200

    async def test_no_token_is_401(self, client: httpx.AsyncClient) -> None:
        assert (await client.get("/v1/runs")).status_code == 401

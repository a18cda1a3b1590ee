"""Tenant isolation: distribution is the agency's alone.

Funds, the ledger, certifications and runs hold no one lodging's data; every route
needs an agency role (reads: admin, auditor, dashboard; writes: admin). An operator
or a facilitator gets 403 everywhere, whatever it names in the path or body, and a
run or certification id never tells it whether the object exists.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
from distribution_factories import ADMIN, AUDITOR, certify, collect, run, scalar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]
DASHBOARD = auth("dashboard")
OPERATOR = auth("operator", operator_id="op-iso")
FACILITATOR = auth("facilitator", facilitator_id="fac-iso")


async def posted(client: httpx.AsyncClient, db: DB) -> tuple[dict[str, Any], dict[str, Any]]:
    cert = await certify(client, 2027, "1200000.00")
    await collect(db, amount="1000000.00", collected_on=date(2026, 7, 15))
    return cert, await run(client, "PR", "2026-07")


def reads(cert: dict[str, Any], posted_run: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    return [
        ("/v1/certifications", {}),
        (f"/v1/certifications/{cert['id']}", {}),
        ("/v1/runs", {}),
        (f"/v1/runs/{posted_run['id']}", {}),
        (f"/v1/runs/{posted_run['id']}/report.csv", {}),
        ("/v1/funds", {"jurisdiction": "PR"}),
        ("/v1/allocations", {"jurisdiction": "PR", "fiscal_year": "2027"}),
        ("/v1/fiscal-years/2027/summary", {"jurisdiction": "PR"}),
        ("/v1/ledger/trial-balance", {}),
        ("/v1/ledger/entries", {}),
        ("/v1/ledger/entries", {"run_id": posted_run["id"]}),
    ]


WRITES: list[tuple[str, dict[str, Any]]] = [
    (
        "/v1/certifications",
        {"fiscal_year": 2028, "amount": "1.00", "certified_on": "2027-06-15", "document_reference": "X"},
    ),
    ("/v1/runs", {"jurisdiction": "PR", "month": "2026-08"}),
    ("/v1/runs", {"jurisdiction": "PR", "month": "2026-08", "preview": True}),
]


async def counts(db: DB) -> tuple[int, int, int]:
    return (
        await scalar(db, "SELECT count(*) FROM runs"),
        await scalar(db, "SELECT count(*) FROM certifications"),
        await scalar(db, "SELECT count(*) FROM journal_entries"),
    )


class TestAgencyReads:
    async def test_auditor_and_dashboard_read_every_report(self, client: httpx.AsyncClient, db: DB) -> None:
        cert, posted_run = await posted(client, db)
        for headers in (ADMIN, AUDITOR, DASHBOARD):
            for url, params in reads(cert, posted_run):
                r = await client.get(url, params=params, headers=headers)
                assert r.status_code == 200, (url, r.text)


class TestReadOnlyRoles:
    async def test_auditor_and_dashboard_write_nothing(self, client: httpx.AsyncClient, db: DB) -> None:
        await posted(client, db)
        before = await counts(db)
        for headers in (AUDITOR, DASHBOARD):
            for url, body in WRITES:
                r = await client.post(url, json=body, headers=headers)
                assert r.status_code == 403, (url, r.text)
        assert await counts(db) == before


class TestOperatorsAndFacilitators:
    async def test_every_route_is_403(self, client: httpx.AsyncClient, db: DB) -> None:
        cert, posted_run = await posted(client, db)
        before = await counts(db)
        for headers in (OPERATOR, FACILITATOR):
            for url, params in reads(cert, posted_run):
                r = await client.get(url, params=params, headers=headers)
                assert r.status_code == 403, (url, r.text)
                assert "1000000.00" not in r.text
            for url, body in WRITES:
                assert (await client.post(url, json=body, headers=headers)).status_code == 403, url
        assert await counts(db) == before

    async def test_ids_in_paths_reveal_nothing(self, client: httpx.AsyncClient, db: DB) -> None:
        """A real and a made-up id answer the same to a caller that may not read runs."""
        cert, posted_run = await posted(client, db)
        for headers in (OPERATOR, FACILITATOR):
            for real, fake in (
                (f"/v1/runs/{posted_run['id']}", "/v1/runs/00000000-0000-0000-0000-000000000000"),
                (f"/v1/runs/{posted_run['id']}/report.csv", "/v1/runs/nope/report.csv"),
                (f"/v1/certifications/{cert['id']}", "/v1/certifications/nope"),
            ):
                a = await client.get(real, headers=headers)
                b = await client.get(fake, headers=headers)
                assert a.status_code == b.status_code == 403
                assert a.json()["detail"] == b.json()["detail"]

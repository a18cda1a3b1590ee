"""Tenant isolation: a caller never sees or changes another's data (404, never a leak).

Accounts, their statements, credits, refunds and notices are the taxpayer's
(the operator's): another operator and every facilitator get a 404 (see
``accounts.repository.visible``); dashboards and jobs are the agency's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

import httpx
from assessment_factories import ADMIN, AUDITOR, Bus, new_account, rows

from servicekit.testing import auth

DASHBOARD = auth("dashboard")
NOTICE = {"period": "2025-01", "reason": "tax declared but not paid", "issued_on": "2025-03-01"}
REFUND = {"amount": "1.00", "requested_on": "2025-06-01"}
RESPONSE = {"kind": "accept", "responded_on": "2025-03-10"}


@dataclass
class Side:
    account: str
    operator_id: str
    notice: dict[str, Any]

    @property
    def operator(self) -> dict[str, str]:
        return auth("operator", operator_id=self.operator_id)

    def reads(self) -> list[str]:
        return [
            f"/v1/accounts/{self.account}/statement",
            f"/v1/accounts/{self.account}/statement.pdf",
            f"/v1/accounts/{self.account}/credits",
            f"/v1/notices/{self.notice['id']}",
            f"/v1/notices/{self.notice['id']}/letter.pdf",
        ]

    def writes(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            (f"/v1/accounts/{self.account}/refunds", REFUND),
            (f"/v1/notices/{self.notice['id']}/responses", RESPONSE),
        ]


async def side(client: httpx.AsyncClient, bus: Bus, operator_id: str) -> Side:
    account = new_account()
    await bus.lodging(account, operator_id=operator_id)
    await bus.declare(account, "2025-01", filer_id=operator_id)
    r = await client.post("/v1/notices", json={**NOTICE, "tax_account": account}, headers=ADMIN)
    assert r.status_code == 201, r.text
    await bus.pay(account, "12000.00", date(2025, 3, 15), periods={"2025-01": "12000.00"})  # leaves a credit
    return Side(account, operator_id, r.json())


async def sides(client: httpx.AsyncClient, bus: Bus) -> tuple[Side, Side]:
    return await side(client, bus, "op-iso-a"), await side(client, bus, "op-iso-b")


FACILITATOR = auth("facilitator", facilitator_id="fac-iso")
AGENCY_ONLY_WRITES: list[tuple[str, dict[str, str]]] = [
    ("/v1/jobs/non-filers", {"as_of": "2025-06-01"}),
    ("/v1/jobs/lapsed-notices", {"as_of": "2025-06-01"}),
]
DASHBOARDS: list[tuple[str, dict[str, str]]] = [
    ("/v1/dashboard/aging", {"as_of": "2025-06-01"}),
    ("/v1/dashboard/delinquents", {"as_of": "2025-06-01"}),
    ("/v1/dashboard/monthly", {"from": "2025-01", "to": "2025-06"}),
]


class TestOperatorIsolation:
    async def test_b_account_and_notices_are_404_to_operator_a(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        a, b = await sides(client, bus)
        for url in b.reads():
            r = await client.get(url, headers=a.operator)
            assert r.status_code == 404, (url, r.text)
            assert "9000.00" not in r.text
        for url in a.reads():
            assert (await client.get(url, headers=a.operator)).status_code == 200, url
        unknown = await client.get(f"/v1/accounts/{new_account()}/statement", headers=a.operator)
        theirs = await client.get(f"/v1/accounts/{b.account}/statement", headers=a.operator)
        assert unknown.json()["title"] == theirs.json()["title"]

    async def test_notice_list_never_includes_b(self, client: httpx.AsyncClient, bus: Bus) -> None:
        a, b = await sides(client, bus)
        mine = (await client.get("/v1/notices", headers=a.operator)).json()
        assert [n["id"] for n in mine["items"]] == [a.notice["id"]]
        filtered = await client.get("/v1/notices", params={"tax_account": b.account}, headers=a.operator)
        assert filtered.json()["items"] == []

    async def test_operator_a_cannot_refund_or_answer_for_b(
        self, client: httpx.AsyncClient, bus: Bus, db: Any
    ) -> None:
        a, b = await sides(client, bus)
        for url, body in b.writes():
            r = await client.post(url, json=body, headers=a.operator)
            assert r.status_code == 404, (url, r.text)
        assert await rows(db, "SELECT id FROM refunds WHERE tax_account = :a", a=b.account) == []
        assert await rows(db, "SELECT id FROM notice_responses WHERE notice_id = :n", n=b.notice["id"]) == []


class TestFacilitatorIsolation:
    async def test_facilitator_sees_no_account_and_no_notice(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        """A facilitator remits but is not the taxpayer (assessment README): even a lodging
        that authorized it is a 404 here; what it filed and paid is at the filing service."""
        a, b = await sides(client, bus)
        for s in (a, b):
            for url in s.reads():
                assert (await client.get(url, headers=FACILITATOR)).status_code == 404, url
            for url, body in s.writes():
                assert (await client.post(url, json=body, headers=FACILITATOR)).status_code == 404, url
        assert (await client.get("/v1/notices", headers=FACILITATOR)).json()["items"] == []
        r = await client.get("/v1/notices", params={"tax_account": a.account}, headers=FACILITATOR)
        assert r.json()["items"] == []


class TestReadOnlyAndAgencyOnlyRoutes:
    async def test_auditor_and_dashboard_read_everything_and_write_nothing(
        self, client: httpx.AsyncClient, bus: Bus, db: Any
    ) -> None:
        _, b = await sides(client, bus)
        for headers in (AUDITOR, DASHBOARD):
            for url in b.reads():
                assert (await client.get(url, headers=headers)).status_code == 200, url
            for url, params in DASHBOARDS:
                assert (await client.get(url, params=params, headers=headers)).status_code == 200, url
            for url, body in [*b.writes(), ("/v1/notices", {**NOTICE, "tax_account": b.account})]:
                r = await client.post(url, json=body, headers=headers)
                assert r.status_code == 403, (url, r.text)
            for url, params in AGENCY_ONLY_WRITES:
                assert (await client.post(url, params=params, headers=headers)).status_code == 403, url
        assert await rows(db, "SELECT id FROM refunds WHERE tax_account = :a", a=b.account) == []
        assert len(await rows(db, "SELECT id FROM notices WHERE tax_account = :a", a=b.account)) == 1

    async def test_operator_and_facilitator_get_403_on_agency_only_routes(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        a, _ = await sides(client, bus)
        for headers in (a.operator, FACILITATOR):
            r = await client.post("/v1/notices", json={**NOTICE, "tax_account": a.account}, headers=headers)
            assert r.status_code == 403
            for url, params in AGENCY_ONLY_WRITES:
                assert (await client.post(url, params=params, headers=headers)).status_code == 403, url
            for url, params in DASHBOARDS:
                assert (await client.get(url, params=params, headers=headers)).status_code == 403, url

    async def test_the_operator_answers_and_refunds_only_its_own(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        a, _ = await sides(client, bus)
        refund = await client.post(f"/v1/accounts/{a.account}/refunds", json=REFUND, headers=a.operator)
        assert refund.status_code == 201, refund.text
        answer = await client.post(
            f"/v1/notices/{a.notice['id']}/responses", json=RESPONSE, headers=a.operator
        )
        assert answer.status_code == 201, answer.text

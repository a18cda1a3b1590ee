"""Tenant isolation of case work: another operator's cases, abatements and timeline are 404;
a facilitator sees the cases of the lodgings that authorized it (only); read-only agency
roles (auditor, dashboard) get 403 on case-work writes."""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
import pytest
from assessment_factories import AUDITOR, Bus, cloud_event, new_account, rows
from casework_factories import MAKER, disputed, today_is

from servicekit.testing import auth

DASHBOARD = auth("dashboard", user_id="u-dash")
FACILITATOR = auth("facilitator", facilitator_id="fac-cw")


async def authorize(bus: Bus, account: str, facilitator_id: str, *, ended: bool = False) -> None:
    verb = "ended" if ended else "granted"
    event = cloud_event(
        f"roomtax.registry.authorization.{verb}.v1",
        {
            "authorization_id": f"auth-{account}-{facilitator_id}",
            "lodging_id": f"lodging-{account}",
            "tax_account": account,
            "facilitator_id": facilitator_id,
            "starts_on": "2025-01-01",
            "ends_on": "2025-12-31" if ended else None,
        },
        key=account,
    )
    assert await bus.send(event) == "applied"


async def abatement(client: httpx.AsyncClient, account: str) -> dict[str, Any]:
    r = await client.post(
        f"/v1/accounts/{account}/abatements",
        json={
            "period": "2025-01",
            "component": "interest",
            "amount": "1.00",
            "ground": "agency_error",
            "explanation": "x",
        },
        headers=MAKER,
    )
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


def writes(case_id: str, abatement_id: str, account: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"/v1/cases/{case_id}/review", {}),
        (f"/v1/cases/{case_id}/hearing", {"hearing_on": "2025-04-20", "place": "office"}),
        (f"/v1/cases/{case_id}/decision", {"outcome": "cancel", "reasons": "x"}),
        (f"/v1/cases/{case_id}/appeal", {"grounds": "x"}),
        (f"/v1/cases/{case_id}/appeal/resolution", {"outcome": "upheld", "reasons": "x"}),
        (
            f"/v1/cases/{case_id}/appeal/resolution",
            {"outcome": "replaced", "reasons": "x", "decision": {"outcome": "cancel"}},
        ),
        (f"/v1/abatements/{abatement_id}/decision", {"outcome": "deny", "reasons": "x"}),
        (
            f"/v1/accounts/{account}/abatements",
            {
                "period": "2025-01",
                "component": "interest",
                "amount": "1.00",
                "ground": "agency_error",
                "explanation": "x",
            },
        ),
    ]


class TestCaseWorkIsolation:
    async def test_operator_a_gets_404_for_b(
        self, client: httpx.AsyncClient, bus: Bus, db: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        a_account, a_case = await disputed(client, bus, "op-cw-a")
        b_account, b_case = await disputed(client, bus, "op-cw-b")
        b_abatement = await abatement(client, b_account)
        operator_a = auth("operator", operator_id="op-cw-a")
        for url in (
            f"/v1/cases/{b_case['id']}",
            f"/v1/cases/{b_case['id']}/decision.pdf",
            f"/v1/abatements/{b_abatement['id']}",
            f"/v1/accounts/{b_account}/timeline",
            f"/v1/accounts/{b_account}/abatements",
        ):
            r = await client.get(url, headers=operator_a)
            assert r.status_code == 404, (url, r.text)
        for url, body in writes(b_case["id"], b_abatement["id"], b_account):
            r = await client.post(url, json=body, headers=operator_a)
            assert r.status_code == 404, (url, r.text)
        listed = await client.get("/v1/cases", params={"tax_account": b_account}, headers=operator_a)
        assert listed.json() == []
        mine = await client.get(f"/v1/cases/{a_case['id']}", headers=operator_a)
        assert mine.status_code == 200
        assert (await client.get(f"/v1/accounts/{a_account}/timeline", headers=operator_a)).status_code == 200
        # the proposals queue is the agency's
        assert (await client.get("/v1/proposals", headers=operator_a)).status_code == 403
        assert await rows(db, "SELECT count(*) FROM case_steps WHERE tax_account = :a", a=b_account) == [(1,)]

    async def test_facilitator_sees_only_cases_of_lodgings_that_authorized_it(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        account, case = await disputed(client, bus, "op-cw-f")
        other_account, other_case = await disputed(client, bus, "op-cw-g")
        url = f"/v1/cases/{case['id']}"
        assert (await client.get(url, headers=FACILITATOR)).status_code == 404
        await authorize(bus, account, "fac-cw")
        seen = await client.get(url, headers=FACILITATOR)
        assert seen.status_code == 200, seen.text
        assert seen.json()["id"] == case["id"]
        assert (await client.get(f"/v1/cases/{other_case['id']}", headers=FACILITATOR)).status_code == 404
        other_letter = await client.get(f"/v1/cases/{other_case['id']}/decision.pdf", headers=FACILITATOR)
        assert other_letter.status_code == 404
        letter = await client.get(f"{url}/decision.pdf", headers=FACILITATOR)
        assert letter.status_code == 409  # its own case is seen: undecided, no letter yet
        listed = await client.get("/v1/cases", params={"tax_account": other_account}, headers=FACILITATOR)
        assert listed.json() == []
        # it may see, not work, the case; the account itself stays the operator's (404)
        r = await client.post(f"{url}/review", headers=FACILITATOR)
        assert r.status_code == 403
        assert (await client.get(f"/v1/accounts/{account}/timeline", headers=FACILITATOR)).status_code == 404
        await authorize(bus, account, "fac-cw", ended=True)
        assert (await client.get(url, headers=FACILITATOR)).status_code == 404

    async def test_read_only_agency_roles_get_403_on_case_work_writes(
        self, client: httpx.AsyncClient, bus: Bus, db: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        account, case = await disputed(client, bus, "op-cw-r")
        ab = await abatement(client, account)
        for headers in (AUDITOR, auth("agency-auditor", user_id="u-aud"), DASHBOARD):
            assert (await client.get(f"/v1/cases/{case['id']}", headers=headers)).status_code == 200
            for url, body in writes(case["id"], ab["id"], account):
                if url.endswith("/appeal"):
                    continue  # the taxpayer's: 403 for every agency role but admin, tested in test_cases
                r = await client.post(url, json=body, headers=headers)
                assert r.status_code == 403, (url, r.text)
        assert await rows(db, "SELECT count(*) FROM case_steps WHERE tax_account = :a", a=account) == [(1,)]


class TestRefundAndWriteOffIsolation:
    async def test_refunds_and_write_offs_of_b_are_404_to_a_and_read_only_roles_get_403(
        self, client: httpx.AsyncClient, bus: Bus, db: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        b_account = new_account()
        await bus.lodging(b_account, operator_id="op-rw-b")
        await bus.declare(b_account, "2025-01", room_revenue="10000.00", filer_id="op-rw-b")  # tax 900.00
        await bus.pay(b_account, "2000.00", date(2025, 2, 10), periods={"2025-01": "2000.00"})
        r = await client.post(
            f"/v1/accounts/{b_account}/refunds",
            json={"amount": "100.00"},
            headers=auth("operator", operator_id="op-rw-b"),
        )
        assert r.status_code == 201, r.text
        refund_id = r.json()["refund_id"]
        operator_a = auth("operator", operator_id="op-rw-a")
        for url in (f"/v1/refunds/{refund_id}", f"/v1/accounts/{b_account}/refunds"):
            assert (await client.get(url, headers=operator_a)).status_code == 404, url
        for url, body in [
            (f"/v1/refunds/{refund_id}/review", {}),
            (f"/v1/refunds/{refund_id}/decision", {"outcome": "deny", "reasons": "x"}),
            (f"/v1/refunds/{refund_id}/payment", {"method": "ach", "reference": "x"}),
            (
                f"/v1/accounts/{b_account}/write-offs",
                {"period": "2025-01", "reason": "bankrupt", "explanation": "x"},
            ),
        ]:
            assert (await client.post(url, json=body, headers=operator_a)).status_code == 404, url
            for headers in (AUDITOR, DASHBOARD, auth("operator", operator_id="op-rw-b")):
                assert (await client.post(url, json=body, headers=headers)).status_code == 403, (url, headers)
        assert (await client.get("/v1/write-offs/nope", headers=operator_a)).status_code == 404
        assert await rows(db, "SELECT count(*) FROM refund_steps WHERE tax_account = :a", a=b_account) == [
            (0,)
        ]

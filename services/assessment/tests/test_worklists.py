"""The agency's work queues: open cases and unfinished refunds across accounts, oldest first."""

from __future__ import annotations

from datetime import date

import httpx
import pytest
from assessment_factories import Bus
from casework_factories import MAKER, disputed, today_is
from test_refunds import overpaid

from assessment.worklists import repository
from servicekit.testing import auth

CHECKER = auth("agency-officer", user_id="u-checker")


class TestOpenCases:
    async def test_a_case_stays_in_the_queue_until_it_is_decided(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 20))
        account, case = await disputed(client, bus, operator_id="op-wq1")

        def mine(r: httpx.Response) -> list[tuple[str, str]]:
            assert r.status_code == 200, r.text
            return [(c["id"], c["status"]) for c in r.json() if c["tax_account"] == account]

        assert mine(await client.get("/v1/worklists/cases", headers=MAKER)) == [(case["id"], "filed")]
        assert (await client.post(f"/v1/cases/{case['id']}/review", headers=MAKER)).status_code == 200
        queue = mine(await client.get("/v1/worklists/cases", headers=auth("agency-auditor")))
        assert queue == [(case["id"], "under_review")]
        only = await client.get("/v1/worklists/cases", params={"status": "filed"}, headers=MAKER)
        assert mine(only) == []
        r = await client.post(
            f"/v1/cases/{case['id']}/decision",
            json={"outcome": "sustain", "reasons": "the comps were taxable"},
            headers=MAKER,
        )
        assert r.status_code == 200, r.text
        assert mine(await client.get("/v1/worklists/cases", headers=MAKER)) == []

    @pytest.mark.parametrize("role", ["operator", "facilitator"])
    async def test_a_taxpayer_has_no_queue(self, client: httpx.AsyncClient, bus: Bus, role: str) -> None:
        await disputed(client, bus, operator_id="op-wq2")
        who = auth(role, operator_id="op-wq2") if role == "operator" else auth(role, facilitator_id="f-1")
        for path in ("/v1/worklists/cases", "/v1/worklists/refunds"):
            r = await client.get(path, headers=who)
            assert r.status_code == 403, (path, r.text)


class TestOpenRefunds:
    async def test_requested_then_approved_then_gone_once_paid(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 1))
        account = await overpaid(client, bus, "op-wq3")
        r = await client.post(
            f"/v1/accounts/{account}/refunds",
            json={"amount": "1000.00"},
            headers=auth("operator", operator_id="op-wq3"),
        )
        assert r.status_code == 201, r.text
        refund_id = r.json()["refund_id"]

        async def queue() -> list[tuple[str, str, str]]:
            r = await client.get("/v1/worklists/refunds", headers=MAKER)
            assert r.status_code == 200, r.text
            rows = [x for x in r.json() if x["tax_account"] == account]
            return [(x["refund_id"], x["status"], x["amount"]) for x in rows]

        assert await queue() == [(refund_id, "requested", "1000.00")]
        await client.post(f"/v1/refunds/{refund_id}/review", headers=MAKER)
        r = await client.post(
            f"/v1/refunds/{refund_id}/decision",
            json={"outcome": "approve", "reasons": "overpaid"},
            headers=MAKER,
        )
        approve = await client.post(
            f"/v1/proposals/{r.json()['pending_proposal_id']}/approve", json={}, headers=CHECKER
        )
        assert approve.status_code == 200, approve.text
        assert await queue() == [(refund_id, "approved", "1000.00")]
        r = await client.post(
            f"/v1/refunds/{refund_id}/payment", json={"method": "ach", "reference": "ACH-9"}, headers=MAKER
        )
        pay = await client.post(
            f"/v1/proposals/{r.json()['pending_proposal_id']}/approve", json={}, headers=CHECKER
        )
        assert pay.status_code == 200, pay.text
        assert await queue() == []


class TestRefusalsInSpanish:
    async def test_a_refund_above_the_credit_is_refused_in_the_callers_language(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 1))
        account = await overpaid(client, bus, "op-wq4")
        operator = auth("operator", operator_id="op-wq4")
        for lang, detail in (
            ("es-PR", "amount: como máximo 1100.00 de crédito es reembolsable al 2025-03-01"),
            ("en", "amount: at most 1100.00 of credit is refundable on 2025-03-01"),
        ):
            r = await client.post(
                f"/v1/accounts/{account}/refunds",
                json={"amount": "5000.00"},
                headers={**operator, "Accept-Language": lang},
            )
            assert r.status_code == 422, r.text
            assert (r.json()["detail"], r.json()["errors"][0]["pointer"]) == (detail, "#/body/amount")
        r = await client.get(f"/v1/accounts/{account}/refunds", headers=operator)
        assert r.json() == []  # refused twice, nothing stored


class TestFinishedWorkLeavesTheQueue:
    """The queues take their oldest rows after leaving the finished ones out: cases decided and
    refunds paid or denied long ago must not fill a queue's limit and hide what waits."""

    async def test_the_open_case_shows_behind_older_decided_ones(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 20))
        cases = []
        for i in range(3):  # opened on three days (a case opens on its dispute's day), oldest first
            _, case = await disputed(client, bus, operator_id=f"op-wq5{i}", responded_on=f"2025-03-1{i}")
            assert case["opened_on"] == f"2025-03-1{i}"
            cases.append(case["id"])
        for case_id in cases[:2]:
            assert (await client.post(f"/v1/cases/{case_id}/review", headers=MAKER)).status_code == 200
            r = await client.post(
                f"/v1/cases/{case_id}/decision",
                json={"outcome": "sustain", "reasons": "the comps were taxable"},
                headers=MAKER,
            )
            assert r.status_code == 200, r.text
        monkeypatch.setattr(repository, "QUEUE_LIMIT", 1)  # two candidates read, one row shown
        r = await client.get("/v1/worklists/cases", headers=MAKER)
        assert r.status_code == 200, r.text
        assert [(c["id"], c["status"]) for c in r.json()] == [(cases[2], "filed")]
        decided = await client.get("/v1/worklists/cases", params={"status": "decided"}, headers=MAKER)
        assert [(c["id"], c["status"]) for c in decided.json()] == [(cases[0], "decided")]

    async def test_the_open_refund_shows_behind_older_denied_ones(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        refunds = []
        for i in range(3):  # requested on three days, the oldest first
            today_is(monkeypatch, date(2025, 3, 1 + i))
            operator = f"op-wq6{i}"
            account = await overpaid(client, bus, operator)
            r = await client.post(
                f"/v1/accounts/{account}/refunds",
                json={"amount": "1000.00"},
                headers=auth("operator", operator_id=operator),
            )
            assert r.status_code == 201, r.text
            refunds.append(r.json()["refund_id"])
        for refund_id in refunds[:2]:
            assert (await client.post(f"/v1/refunds/{refund_id}/review", headers=MAKER)).status_code == 200
            r = await client.post(
                f"/v1/refunds/{refund_id}/decision", json={"outcome": "deny", "reasons": "x"}, headers=MAKER
            )
            assert r.status_code == 200, r.text
        monkeypatch.setattr(repository, "QUEUE_LIMIT", 1)
        r = await client.get("/v1/worklists/refunds", headers=MAKER)
        assert r.status_code == 200, r.text
        assert [(x["refund_id"], x["status"]) for x in r.json()] == [(refunds[2], "requested")]

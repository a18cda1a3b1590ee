"""Abatements of penalty, interest or fine: request, decide (maker-checker), exact balances.

PR, period 2025-01: tax 9,000.00 due 2025-02-10, declared on time, unpaid. The §46 surcharge
(provisional) is 5% of the unpaid tax from day 31 (2025-03-13), 10% from day 61 (2025-04-12);
§46 interest (provisional) 10% a year on the unpaid tax only.
"""

from __future__ import annotations

from datetime import date

import httpx
import pytest
from assessment_factories import CLOCK, Bus, new_account, rows, statement
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]
MAKER = auth("agency-officer", user_id="u-maker")
CHECKER = auth("agency-officer", user_id="u-checker")  # an officer approves up to the threshold


async def account_with_surcharge(bus: Bus, monkeypatch: pytest.MonkeyPatch, operator_id: str) -> str:
    monkeypatch.setattr(CLOCK, "day", date(2025, 4, 1))
    account = new_account()
    await bus.lodging(account, operator_id=operator_id)
    await bus.declare(account, "2025-01", filer_id=operator_id)
    return account


def abatement_request(
    amount: str, explanation: str, *, component: str = "penalty", ground: str = "reasonable_cause"
) -> dict[str, str]:
    """An abatement request for 2025-01 (by default: of the surcharge, for reasonable cause)."""
    return {
        "period": "2025-01",
        "component": component,
        "amount": amount,
        "ground": ground,
        "explanation": explanation,
    }


async def balance(client: httpx.AsyncClient, account: str, on: str) -> str:
    value: str = (await statement(client, account, on))["periods"][0]["balance"]
    return value


class TestAbatement:
    async def test_partial_abatement_of_the_surcharge(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await account_with_surcharge(bus, monkeypatch, "op-a")
        operator = auth("operator", operator_id="op-a")
        # day 50: surcharge 5% x 9,000.00 = 450.00; interest 9,000 x 10% x 50/365 = 123.29
        assert await balance(client, account, "2025-04-01") == "9573.29"
        too_much = await client.post(
            f"/v1/accounts/{account}/abatements",
            json=abatement_request("450.01", "hurricane"),
            headers=operator,
        )
        assert too_much.status_code == 422
        assert too_much.json()["errors"][0]["pointer"] == "#/body/amount"
        zero = await client.post(
            f"/v1/accounts/{account}/abatements",
            json=abatement_request("0.00", "hurricane"),
            headers=operator,
        )
        # the request table holds only amounts above zero: refused by the schema, not the database
        assert zero.status_code == 422, zero.text
        assert zero.json()["errors"][0]["pointer"] == "#/body/amount"
        r = await client.post(
            f"/v1/accounts/{account}/abatements",
            json=abatement_request("450.00", "hurricane closed the bank"),
            headers=operator,
        )
        assert r.status_code == 201, r.text
        abatement = r.json()
        assert (abatement["status"], abatement["requested_by"]) == ("requested", "client:test-operator-op-a")
        url = f"/v1/abatements/{abatement['id']}/decision"
        bad = await client.post(
            url, json={"outcome": "partial", "amount": "450.00", "reasons": "x"}, headers=MAKER
        )
        assert bad.status_code == 422
        assert bad.json()["errors"][0]["pointer"] == "#/body/amount"
        by_operator = await client.post(url, json={"outcome": "deny", "reasons": "x"}, headers=operator)
        assert by_operator.status_code == 403
        proposed = await client.post(
            url,
            json={"outcome": "partial", "amount": "200.00", "reasons": "bank closed two days"},
            headers=MAKER,
        )
        assert proposed.status_code == 200, proposed.text
        assert proposed.json()["status"] == "decision_proposed"
        proposal_id = proposed.json()["pending_proposal_id"]
        assert await balance(client, account, "2025-04-01") == "9573.29"  # nothing yet

        own = await client.post(f"/v1/proposals/{proposal_id}/approve", json={}, headers=MAKER)
        assert own.status_code == 409
        assert own.json()["errors"][0]["pointer"] == "#/proposal/proposed_by"
        ok = await client.post(f"/v1/proposals/{proposal_id}/approve", json={}, headers=CHECKER)
        assert ok.status_code == 200, ok.text
        decided = (await client.get(f"/v1/abatements/{abatement['id']}", headers=operator)).json()
        assert decided["status"] == "partial"
        assert decided["decision"]["amount"] == "200.00"
        assert (decided["decision"]["decided_by"], decided["decision"]["proposed_by"]) == (
            "u-checker",
            "u-maker",
        )
        twice = await client.post(url, json={"outcome": "deny", "reasons": "x"}, headers=MAKER)
        assert twice.status_code == 409

        # the day before: unchanged (interest 9,000 x 10% x 49/365 = 120.82)
        assert await balance(client, account, "2025-03-31") == "9570.82"
        # from the decision: 450.00 - 200.00 abated; PR interest bears on the tax only
        assert await balance(client, account, "2025-04-01") == "9373.29"
        # day 64: the 10% tier raises the surcharge to 900.00, 200.00 of it abated;
        # interest 9,000 x 10% x 64/365 = 157.81 -> 9,000 + 700.00 + 157.81
        later = await statement(client, account, "2025-04-15", explain=True)
        period = later["periods"][0]
        assert period["balance"] == "9857.81"
        assert period["components"]["penalty"] == {
            "assessed": "900.00",
            "paid": "0.00",
            "outstanding": "700.00",
        }
        assert period["total_adjusted"] == "200.00"
        [fact] = period["adjustments"]
        assert (fact["kind"], fact["component"], fact["amount"], fact["section"]) == (
            "abate",
            "penalty",
            "-200.00",
            "§46",
        )
        assert fact["reason"] == "reasonable_cause: bank closed two days"
        [step] = [s for s in period["explain"]["balance"] if s["rule"] == "rule5.balance.adjustment.abate"]
        assert step["inputs"]["approved_by"] == "u-checker"
        assert await rows(
            db,
            "SELECT event_type FROM outbox WHERE key = :a AND topic = 'assessment.cases' ORDER BY id",
            a=account,
        ) == [
            ("roomtax.assessment.abatement.requested.v1",),
            ("roomtax.assessment.proposal.made.v1",),
            ("roomtax.assessment.proposal.reviewed.v1",),
            ("roomtax.assessment.adjustment.recorded.v1",),
            ("roomtax.assessment.abatement.decided.v1",),
        ]

    async def test_denial_by_one_person_changes_nothing(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await account_with_surcharge(bus, monkeypatch, "op-b")
        r = await client.post(
            f"/v1/accounts/{account}/abatements",
            json=abatement_request(
                "100.00", "the notice went to the wrong address", component="interest", ground="agency_error"
            ),
            headers=MAKER,
        )
        assert r.status_code == 201, r.text
        assert r.json()["requested_by"] == "user:u-maker"
        denied = await client.post(
            f"/v1/abatements/{r.json()['id']}/decision",
            json={"outcome": "deny", "reasons": "the address was the operator's"},
            headers=MAKER,
        )
        assert denied.json()["status"] == "denied"
        assert await balance(client, account, "2025-04-01") == "9573.29"
        assert await rows(db, "SELECT count(*) FROM adjustment_facts WHERE tax_account = :a", a=account) == [
            (0,)
        ]

    async def test_rejected_proposal_leaves_the_request_open(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await account_with_surcharge(bus, monkeypatch, "op-c")
        r = await client.post(
            f"/v1/accounts/{account}/abatements",
            json=abatement_request("450.00", "illness"),
            headers=auth("operator", operator_id="op-c"),
        )
        url = f"/v1/abatements/{r.json()['id']}"
        proposed = await client.post(
            f"{url}/decision", json={"outcome": "full", "reasons": "ok"}, headers=MAKER
        )
        proposal_id = proposed.json()["pending_proposal_id"]
        no_reason = await client.post(f"/v1/proposals/{proposal_id}/reject", json={}, headers=CHECKER)
        assert no_reason.status_code == 422
        assert no_reason.json()["errors"][0]["pointer"] == "#/body/note"
        rejected = await client.post(
            f"/v1/proposals/{proposal_id}/reject", json={"note": "no medical record"}, headers=CHECKER
        )
        assert rejected.json()["status"] == "rejected"
        assert (await client.get(url, headers=MAKER)).json()["status"] == "requested"
        assert await balance(client, account, "2025-04-01") == "9573.29"

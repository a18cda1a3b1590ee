"""Refunds end to end: request -> review -> approve (maker-checker) -> paid (maker-checker).

PR, period 2025-01: tax 900.00 (10,000.00 of room revenue at 9%) due 2025-02-10; 2,000.00 paid
with the declaration on the due date leaves a credit of 1,100.00, refundable for 4 years from
the declaration (PR §42, provisional: 2029-02-10).
"""

from __future__ import annotations

from datetime import date

import httpx
import pytest
from assessment_factories import Bus, new_account, rows, statement
from casework_factories import MAKER, today_is
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]
CHECKER = auth("agency-officer", user_id="u-checker")


async def overpaid(client: httpx.AsyncClient, bus: Bus, operator_id: str) -> str:
    account = new_account()
    await bus.lodging(account, operator_id=operator_id)
    await bus.declare(account, "2025-01", room_revenue="10000.00", filer_id=operator_id)
    await bus.pay(account, "2000.00", date(2025, 2, 10), periods={"2025-01": "2000.00"})
    return account


async def credit(client: httpx.AsyncClient, account: str, on: str) -> tuple[str, str]:
    c = (await statement(client, account, on))["credit"]
    return c["total"], c["refunded"]


async def paid(client: httpx.AsyncClient, refund_id: str, reference: str) -> None:
    r = await client.post(
        f"/v1/refunds/{refund_id}/payment", json={"method": "ach", "reference": reference}, headers=MAKER
    )
    assert r.status_code == 200, r.text
    ok = await client.post(
        f"/v1/proposals/{r.json()['pending_proposal_id']}/approve", json={}, headers=CHECKER
    )
    assert ok.status_code == 200, ok.text


async def postings(db: DB, account: str) -> list[tuple[str, str, str, str | None]]:
    """The account's ``collection.posted`` events, in order: (period, component, amount, refund_id)."""
    return [
        (r[0], r[1], r[2], r[3])
        for r in await rows(
            db,
            "SELECT payload->'data'->>'period', payload->'data'->>'component', "
            "payload->'data'->>'amount', payload->'data'->>'refund_id' FROM outbox "
            "WHERE key = :a AND topic = 'assessment.collections' ORDER BY id",
            a=account,
        )
    ]


async def approved(client: httpx.AsyncClient, account: str, operator_id: str, amount: str) -> str:
    r = await client.post(
        f"/v1/accounts/{account}/refunds",
        json={"amount": amount},
        headers=auth("operator", operator_id=operator_id),
    )
    assert r.status_code == 201, r.text
    refund_id: str = r.json()["refund_id"]
    assert (await client.post(f"/v1/refunds/{refund_id}/review", headers=MAKER)).status_code == 200
    r = await client.post(
        f"/v1/refunds/{refund_id}/decision", json={"outcome": "approve", "reasons": "overpaid"}, headers=MAKER
    )
    assert r.json()["pending_action"] == "refund.approve"
    ok = await client.post(
        f"/v1/proposals/{r.json()['pending_proposal_id']}/approve", json={}, headers=CHECKER
    )
    assert ok.status_code == 200, ok.text
    return refund_id


class TestRefundLifecycle:
    async def test_only_the_paid_refund_leaves_the_account(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 1))
        account = await overpaid(client, bus, "op-r")
        refund_id = await approved(client, account, "op-r", "1000.00")
        shown = (
            await client.get(f"/v1/refunds/{refund_id}", headers=auth("operator", operator_id="op-r"))
        ).json()
        assert (shown["status"], shown["disbursement"]) == ("approved", None)
        assert await credit(client, account, "2025-03-01") == ("1100.00", "0.00")  # approved, not paid

        r = await client.post(
            f"/v1/refunds/{refund_id}/payment", json={"method": "ach", "reference": "ACH-77"}, headers=MAKER
        )
        assert r.status_code == 200, r.text
        proposal_id = r.json()["pending_proposal_id"]
        assert r.json()["pending_action"] == "refund.pay"
        own = await client.post(f"/v1/proposals/{proposal_id}/approve", json={}, headers=MAKER)
        assert own.status_code == 409
        assert own.json()["errors"][0]["pointer"] == "#/proposal/proposed_by"
        ok = await client.post(f"/v1/proposals/{proposal_id}/approve", json={}, headers=CHECKER)
        assert ok.status_code == 200, ok.text
        paid = (await client.get(f"/v1/refunds/{refund_id}", headers=MAKER)).json()
        assert paid["status"] == "paid"
        assert paid["disbursement"] == {"method": "ach", "reference": "ACH-77", "paid_on": "2025-03-01"}
        assert [s["step"] for s in paid["steps"]] == ["under_review", "approved", "paid"]

        assert await credit(client, account, "2025-02-28") == ("1100.00", "0.00")  # the day before
        assert await credit(client, account, "2025-03-01") == ("100.00", "1000.00")
        again = await client.post(
            f"/v1/refunds/{refund_id}/payment", json={"method": "ach", "reference": "ACH-78"}, headers=MAKER
        )
        assert again.status_code == 409
        types = await rows(
            db,
            "SELECT payload->'data'->>'step', event_type FROM outbox WHERE key = :a "
            "AND topic = 'assessment.cases' ORDER BY id",
            a=account,
        )
        assert [t[0] or t[1].split(".")[2] for t in types] == [
            "requested",
            "under_review",
            "proposal",
            "proposal",
            "approved",
            "proposal",
            "proposal",
            "paid",
        ]
        timeline = (await client.get(f"/v1/accounts/{account}/timeline", headers=MAKER)).json()
        refund_kinds = [e["kind"] for e in timeline["entries"] if e["kind"].startswith("refund.")]
        assert refund_kinds == ["refund.requested", "refund.under_review", "refund.approved", "refund.paid"]

    async def test_a_refunded_credit_does_not_pay_a_period_filed_after_the_refund(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """1,000.00 of the 1,100.00 credit is paid out on 2025-03-01; 2025-02 (900.00 of tax) is
        filed on 2025-03-20: only the 100.00 still in the account pays it, 800.00 of tax is owed."""
        today_is(monkeypatch, date(2025, 3, 1))
        account = await overpaid(client, bus, "op-u")
        refund_id = await approved(client, account, "op-u", "1000.00")
        await paid(client, refund_id, "ACH-91")
        today_is(monkeypatch, date(2025, 3, 20))
        await bus.declare(
            account, "2025-02", room_revenue="10000.00", filer_id="op-u", filed_on=date(2025, 3, 20)
        )
        body = await statement(client, account, "2025-03-31")
        february = next(p for p in body["periods"] if p["period"] == "2025-02")
        assert february["components"]["tax"]["assessed"] == "900.00"
        assert february["components"]["tax"]["paid"] == "100.00"
        assert february["components"]["tax"]["outstanding"] == "800.00"
        assert (body["credit"]["total"], body["credit"]["refunded"]) == ("0.00", "1000.00")
        assert await credit(client, account, "2025-03-01") == ("100.00", "1000.00")  # unchanged

    async def test_paying_more_than_the_credit_left_is_refused(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 20))
        account = await overpaid(client, bus, "op-s")
        refund_id = await approved(client, account, "op-s", "1000.00")
        # a later period's tax (900.00, due 2025-03-10) takes the credit down to 200.00
        await bus.declare(account, "2025-02", room_revenue="10000.00", filer_id="op-s")
        assert await credit(client, account, "2025-03-20") == ("200.00", "0.00")
        r = await client.post(
            f"/v1/refunds/{refund_id}/payment", json={"method": "check", "reference": "CHK-1"}, headers=MAKER
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/amount"
        assert await rows(
            db, "SELECT count(*) FROM proposals WHERE action = 'refund.pay' AND tax_account = :a", a=account
        ) == [(0,)]

        other = await client.post(
            f"/v1/accounts/{account}/refunds",
            json={"amount": "150.00"},
            headers=auth("operator", operator_id="op-s"),
        )
        assert other.status_code == 422  # 200.00 of credit, 1,000.00 of it approved for refund

    async def test_denied_refund_frees_the_credit(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 1))
        account = await overpaid(client, bus, "op-t")
        operator = auth("operator", operator_id="op-t")
        r = await client.post(f"/v1/accounts/{account}/refunds", json={"amount": "1100.00"}, headers=operator)
        refund_id = r.json()["refund_id"]
        early = await client.post(
            f"/v1/refunds/{refund_id}/decision", json={"outcome": "deny", "reasons": "x"}, headers=MAKER
        )
        assert early.status_code == 409  # decided once under review
        await client.post(f"/v1/refunds/{refund_id}/review", headers=MAKER)
        denied = await client.post(
            f"/v1/refunds/{refund_id}/decision",
            json={"outcome": "deny", "reasons": "credit owed to 2025-02"},
            headers=MAKER,
        )
        assert denied.json()["status"] == "denied"
        assert await credit(client, account, "2025-03-01") == ("1100.00", "0.00")
        again = await client.post(
            f"/v1/accounts/{account}/refunds", json={"amount": "1100.00"}, headers=operator
        )
        assert again.status_code == 201, again.text


class TestRefundGivesBack:
    """A paid refund of money the funds received is a negative collection naming the refund."""

    async def test_a_refund_of_an_overpayment_posts_nothing(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 1))
        account = await overpaid(client, bus, "op-g")  # 900.00 applied to the tax, 1,100.00 credit
        refund_id = await approved(client, account, "op-g", "1000.00")
        await paid(client, refund_id, "ACH-90")
        # the 1,100.00 never reached the funds: only the 900.00 applied was ever posted
        assert await postings(db, account) == [("2025-01", "tax", "900.00", None)]

    async def test_money_a_restatement_made_credit_stays_posted_until_refunded(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 6, 1))
        account = new_account()
        await bus.lodging(account, operator_id="op-h")
        # PR 2025-03: 100,000.00 x 9% = 9,000.00, paid on the due date, then amended to
        # 50,000.00 x 9% = 4,500.00: 4,500.00 of the payment becomes credit
        first = await bus.declare(account, "2025-03", room_revenue="100000.00", filer_id="op-h")
        await bus.pay(account, "9000.00", date(2025, 4, 10), periods={"2025-03": "9000.00"})
        await bus.declare(
            account,
            "2025-03",
            room_revenue="50000.00",
            version=2,
            filing_id=first.data["filing_id"],
            supersedes=first.data["declaration_id"],
            filed_on=date(2025, 5, 1),
            filer_id="op-h",
        )
        assert await credit(client, account, "2025-06-01") == ("4500.00", "0.00")
        assert await postings(db, account) == [("2025-03", "tax", "9000.00", None)]  # held, not given back

        refund_id = await approved(client, account, "op-h", "900.00")
        assert await postings(db, account) == [("2025-03", "tax", "9000.00", None)]  # approved, not paid
        await paid(client, refund_id, "ACH-91")
        assert await credit(client, account, "2025-06-01") == ("3600.00", "900.00")
        # paid: the 900.00 leaves the funds on the component it was posted to, dated the
        # payment's day (distribution's next run nets it by the same rule)
        assert await postings(db, account) == [
            ("2025-03", "tax", "9000.00", None),
            ("2025-03", "tax", "-900.00", refund_id),
        ]
        [(collected_on,)] = await rows(
            db,
            "SELECT payload->'data'->>'collected_on' FROM outbox WHERE key = :a "
            "AND topic = 'assessment.collections' AND payload->'data'->>'refund_id' = :r",
            a=account,
            r=refund_id,
        )
        assert collected_on == "2025-04-10"

        # the 3,600.00 still held pays a later period: 5,000.00 x 9% = 450.00 moves from 2025-03
        # to 2025-04 (the funds keep it: -450.00 and +450.00), 3,150.00 stays held
        await bus.declare(account, "2025-04", room_revenue="5000.00", filer_id="op-h")
        assert await credit(client, account, "2025-06-01") == ("3150.00", "900.00")
        assert (await postings(db, account))[2:] == [
            ("2025-03", "tax", "-450.00", None),
            ("2025-04", "tax", "450.00", None),
        ]

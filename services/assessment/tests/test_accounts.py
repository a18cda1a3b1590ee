"""Accounts built from filing events: deficiencies, amendments, payments across periods, credits."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
from assessment_factories import (
    ADMIN,
    AUDITOR,
    Bus,
    due,
    new_account,
    posted_by_payment,
    rows,
    statement,
)
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]


async def applied_by_payment(
    client: httpx.AsyncClient, account: str, as_of: str = "2026-11-30"
) -> dict[str, Decimal]:
    body = await statement(client, account, as_of)
    out: dict[str, Decimal] = {}
    for p in body["periods"]:
        for a in p["payments"]:
            out[a["payment_id"]] = out.get(a["payment_id"], Decimal(0)) + Decimal(a["amount"])
    return out


class TestDeficiency:
    async def test_liability_is_taxcore_tax_and_difference_is_a_deficiency_with_reason(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        findings = [
            {
                "code": "tax_understated",
                "line": "tax",
                "message": "declared tax 8000.00; the declaration's lines come to 9000.00",
                "declared": "8000.00",
                "computed": "9000.00",
                "section": "§32, §2(18)",
            }
        ]
        await bus.declare(account, "2025-03", declared_total="8000.00", findings=findings)
        body = await statement(client, account, "2025-04-10")
        period = body["periods"][0]
        assert period["principal"]["tax"] == "9000.00"  # 9% of 100,000.00, not the filer's 8,000
        assert period["deficiency"] == "1000.00"
        assert "tax_understated" in period["deficiency_reasons"][0]
        # a clerical-error finding is assessed without a hearing (PR §32): an automatic notice
        notices = (await client.get("/v1/notices", params={"tax_account": account}, headers=ADMIN)).json()
        assert len(notices["items"]) == 1
        notice = notices["items"][0]
        assert notice["kind"] == "clerical_error"
        assert notice["amounts"]["total"] == "9000.00"  # nothing paid yet, on the filing date
        assert notice["issued_on"] == "2025-04-10"
        assert notice["response_deadline"] == "2025-05-10"
        types = [
            r[0]
            for r in await rows(db, "SELECT event_type FROM outbox WHERE key = :k ORDER BY id", k=account)
        ]
        assert types == ["roomtax.assessment.account.assessed.v1", "roomtax.assessment.notice.issued.v1"]

    async def test_several_filers_add_up(self, client: httpx.AsyncClient, bus: Bus) -> None:
        account = new_account()
        await bus.lodging(account)
        await bus.declare(account, "2025-03", room_revenue="100000.00")
        await bus.declare(
            account, "2025-03", room_revenue="20000.00", filer_kind="facilitator", filer_id="ota-1"
        )
        period = (await statement(client, account, "2025-04-10"))["periods"][0]
        assert period["principal"]["tax"] == "10800.00"
        assert len(period["filings"]) == 2


class TestAmendmentAndRedelivery:
    async def test_amendment_replaces_and_redelivery_changes_nothing(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        first = await bus.declare(account, "2025-03", room_revenue="100000.00")
        pay = await bus.pay(account, "9000.00", due("PR", "2025-03"), periods={"2025-03": "9000.00"})
        amended = await bus.declare(
            account,
            "2025-03",
            room_revenue="50000.00",
            version=2,
            filing_id=first.data["filing_id"],
            supersedes=first.data["declaration_id"],
            filed_on=date(2025, 5, 1),
        )
        body = await statement(client, account, "2025-06-01")
        assert body["periods"][0]["principal"]["tax"] == "4500.00"
        assert body["credit"]["total"] == "4500.00"
        # the 4,500.00 the amendment turned into credit stays posted (held for the funds) until
        # it leaves the account by a paid refund (test_refunds.py::TestRefundGivesBack)
        assert await posted_by_payment(db, account) == {pay: Decimal("9000.00")}
        before = await rows(db, "SELECT count(*) FROM outbox")
        facts_before = await rows(db, "SELECT count(*) FROM liabilities")
        assert await bus.send(amended) == "duplicate"
        assert await bus.send(first) == "duplicate"
        assert await rows(db, "SELECT count(*) FROM outbox") == before
        assert await rows(db, "SELECT count(*) FROM liabilities") == facts_before

    async def test_statement_for_a_past_date_ignores_later_facts(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI")
        first = await bus.declare(account, "2025-01", jurisdiction="VI", room_revenue="10000.00")
        await bus.declare(account, "2025-02", jurisdiction="VI", room_revenue="8000.00")
        pay1 = await bus.pay(account, "500.00", date(2025, 3, 20), jurisdiction="VI")
        past = "2025-06-15"
        computed_then = await statement(client, account, past, explain=True)
        # later facts: a payment, an amendment, a reversal of the first payment, a new period
        await bus.pay(account, "2000.00", date(2025, 7, 1), jurisdiction="VI")
        await bus.declare(
            account,
            "2025-01",
            jurisdiction="VI",
            room_revenue="12000.00",
            version=2,
            filing_id=first.data["filing_id"],
            supersedes=first.data["declaration_id"],
            filed_on=date(2025, 8, 1),
        )
        await bus.reverse(account, pay1, "500.00", date(2025, 9, 1), jurisdiction="VI")
        await bus.declare(account, "2025-06", jurisdiction="VI", room_revenue="9000.00")
        computed_now = await statement(client, account, past, explain=True)
        assert computed_now["periods"] == computed_then["periods"]
        assert computed_now["totals"] == computed_then["totals"]
        assert computed_now["credit"] == computed_then["credit"]
        later = await statement(client, account, "2025-12-31")
        assert later["periods"][0]["principal"]["tax"] == "1500.00"
        assert len(later["periods"]) == 3


class TestCollectionPostings:
    async def test_sum_of_postings_equals_payments_applied_to_the_cent(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI")
        first = await bus.declare(account, "2025-01", jurisdiction="VI", room_revenue="10000.00")
        await bus.declare(account, "2025-02", jurisdiction="VI", room_revenue="7777.77")
        p1 = await bus.pay(account, "333.33", date(2025, 3, 15), jurisdiction="VI")  # undesignated
        p2 = await bus.pay(
            account, "1000.00", date(2025, 4, 20), jurisdiction="VI", periods={"2025-02": "1000.00"}
        )
        p3 = await bus.pay(account, "2500.01", date(2025, 6, 2), jurisdiction="VI")
        await bus.reverse(account, p1, "333.33", date(2025, 7, 1), jurisdiction="VI")
        await bus.declare(
            account,
            "2025-01",
            jurisdiction="VI",
            room_revenue="11000.00",
            version=2,
            filing_id=first.data["filing_id"],
            supersedes=first.data["declaration_id"],
            filed_on=date(2025, 8, 1),
        )
        posted = await posted_by_payment(db, account)
        applied = await applied_by_payment(client, account)
        assert {k: v for k, v in posted.items() if v} == applied
        assert posted[p1] == Decimal("0.00")  # posted, then undone by the reversal's negative postings
        assert p1 not in applied
        body = await statement(client, account, "2026-11-30")
        credit = Decimal(body["credit"]["total"])
        assert sum(posted.values(), Decimal(0)) + credit == Decimal("3500.01")
        # postings per (payment, period, component) add up to what the statement shows applied
        per_key = await rows(
            db,
            "SELECT payment_id, period, component, sum(amount) FROM collection_postings "
            "WHERE tax_account = :a GROUP BY 1, 2, 3 HAVING sum(amount) <> 0",
            a=account,
        )
        shown = {
            (a["payment_id"], p["period"], a["component"]): Decimal(a["amount"])
            for p in body["periods"]
            for a in p["payments"]
        }
        assert {(r[0], r[1], r[2]): r[3] for r in per_key} == shown
        assert {k[0] for k in shown} == {p2, p3}
        ids = [
            r[0]
            for r in await rows(
                db, "SELECT posting_id FROM collection_postings WHERE tax_account = :a", a=account
            )
        ]
        assert len(ids) == len(set(ids))


class TestCreditsAndRefunds:
    async def test_overpayment_pays_later_periods_then_is_refundable_within_pr_42(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        await bus.declare(account, "2025-01", room_revenue="10000.00")  # tax 900.00 due 2025-02-10
        await bus.pay(account, "2000.00", date(2025, 2, 10), periods={"2025-01": "2000.00"})
        body = await statement(client, account, "2025-03-01")
        assert body["credit"]["total"] == "1100.00"
        # paid with the declaration (same day): refundable 4 years from it (PR §42)
        assert body["credit"]["items"][0]["refundable_until"] == "2029-02-10"
        await bus.declare(account, "2025-02", room_revenue="10000.00")  # tax 900.00 due 2025-03-10
        body = await statement(client, account, "2025-04-01")
        assert body["credit"]["total"] == "200.00"
        assert [p["balance"] for p in body["periods"]] == ["0.00", "0.00"]
        operator = auth("operator", operator_id="op-1")
        r = await client.post(
            f"/v1/accounts/{account}/refunds",
            json={"amount": "250.00", "requested_on": "2026-01-05"},
            headers=operator,
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/amount"
        r = await client.post(
            f"/v1/accounts/{account}/refunds",
            json={"amount": "200.00", "requested_on": "2026-01-05"},
            headers=operator,
        )
        assert r.status_code == 201, r.text
        # only a paid refund leaves the account (test_refunds.py pays one)
        assert r.json()["credit"]["total"] == "200.00"
        again = await client.post(
            f"/v1/accounts/{account}/refunds",
            json={"amount": "0.01", "requested_on": "2026-01-05"},
            headers=operator,
        )
        assert again.status_code == 422  # the 200.00 requested is spoken for
        assert (await statement(client, account, "2026-02-01"))["credit"]["refunded"] == "0.00"

    async def test_refund_past_three_years_from_payment_is_refused(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account, registered_on="2022-01-01")
        await bus.pay(account, "300.00", date(2022, 6, 1))  # no declaration: 3 years from payment
        credits = (
            await client.get(
                f"/v1/accounts/{account}/credits", params={"as_of": "2025-06-01"}, headers=AUDITOR
            )
        ).json()
        assert credits["items"][0]["refundable_until"] == "2025-06-01"
        ok = await client.post(
            f"/v1/accounts/{account}/refunds",
            json={"amount": "100.00", "requested_on": "2025-06-01"},
            headers=ADMIN,
        )
        assert ok.status_code == 201, ok.text
        late = await client.post(
            f"/v1/accounts/{account}/refunds",
            json={"amount": "100.00", "requested_on": "2025-06-02"},
            headers=ADMIN,
        )
        assert late.status_code == 422
        assert "§42" in late.json()["detail"]


class TestVisibility:
    async def test_operator_sees_own_account_only_facilitator_none(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account, operator_id="op-a")
        await bus.declare(account, "2025-01")
        own = auth("operator", operator_id="op-a")
        other = auth("operator", operator_id="op-b")
        fac = auth("facilitator", facilitator_id="ota-1")
        url = f"/v1/accounts/{account}/statement"
        assert (await client.get(url, headers=own)).status_code == 200
        for headers in (other, fac):
            r = await client.get(url, headers=headers)
            assert r.status_code == 404
            assert r.headers["content-type"] == "application/problem+json"
        assert (await client.get(url)).status_code == 401
        assert (await client.get(f"/v1/accounts/{new_account()}/statement", headers=ADMIN)).status_code == 404
        bad = await client.get(url, params={"as_of": "2025-13-01"}, headers=ADMIN)
        assert bad.status_code == 422
        assert bad.json()["errors"][0]["pointer"] == "#/query/as_of"


class TestApplicationAcrossPeriods:
    async def test_designated_first_then_oldest_period_first(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        await bus.declare(account, "2025-01", room_revenue="10000.00")  # 900.00 due 2025-02-10
        await bus.declare(account, "2025-02", room_revenue="10000.00")  # 900.00 due 2025-03-10
        await bus.declare(account, "2025-03", room_revenue="10000.00")  # 900.00 due 2025-04-10
        # on 2025-02-10: 900 designated to 2025-03 (not yet due), the other 1000 to the oldest first
        pay = await bus.pay(account, "1900.00", date(2025, 2, 10), periods={"2025-03": "900.00"})
        body = await statement(client, account, "2025-04-10")
        paid = {p["period"]: p["total_paid"] for p in body["periods"]}
        assert paid == {"2025-01": "900.00", "2025-02": "100.00", "2025-03": "900.00"}
        assert {a["payment_id"] for p in body["periods"] for a in p["payments"]} == {pay}
        # 2025-02: 800.00 unpaid since 2025-03-10, 31 days: §46 5% surcharge 40.00,
        # §46 interest 80 x 31/365 = 6.7945 -> 6.79
        feb = body["periods"][1]
        assert (feb["penalties"][0]["amount"], feb["interest"], feb["balance"]) == ("40.00", "6.79", "846.79")

    async def test_partial_reversal_keeps_the_rest(self, client: httpx.AsyncClient, bus: Bus, db: DB) -> None:
        account = new_account()
        await bus.lodging(account)
        await bus.declare(account, "2025-01", room_revenue="10000.00")
        pay = await bus.pay(account, "900.00", date(2025, 2, 10))
        await bus.reverse(account, pay, "400.00", date(2025, 2, 20))
        before = await statement(client, account, "2025-02-19")
        assert before["periods"][0]["balance"] == "0.00"
        after = await statement(client, account, "2025-02-20")
        # 400.00 counts as never paid: interest from the due date, 40 x 10/365 = 1.0959 -> 1.10
        assert after["periods"][0]["total_paid"] == "500.00"
        assert after["periods"][0]["interest"] == "1.10"
        assert await posted_by_payment(db, account) == {pay: Decimal("500.00")}


class TestProjection:
    async def test_an_older_snapshot_does_not_overwrite_a_newer_one(self, bus: Bus, db: DB) -> None:
        from datetime import UTC, datetime, timedelta

        from assessment_factories import cloud_event

        account = new_account()
        newer = await bus.lodging(account, operator_id="op-new")
        stale = cloud_event(
            "roomtax.registry.lodging.updated.v1",
            {**newer.data, "operator_id": "op-old"},
            key=account,
            time=datetime.now(UTC) - timedelta(hours=1),
        )
        assert await bus.send(stale) == "applied"
        assert await rows(db, "SELECT operator_id FROM lodgings WHERE tax_account = :a", a=account) == [
            ("op-new",)
        ]

    async def test_operator_lists_only_its_notices(self, client: httpx.AsyncClient, bus: Bus) -> None:
        mine, theirs = new_account(), new_account()
        await bus.lodging(mine, operator_id="op-m")
        await bus.lodging(theirs, operator_id="op-t")
        for acct in (mine, theirs):
            await bus.declare(acct, "2025-01")
            r = await client.post(
                "/v1/notices",
                json={
                    "tax_account": acct,
                    "period": "2025-01",
                    "reason": "unpaid",
                    "issued_on": "2025-03-01",
                },
                headers=ADMIN,
            )
            assert r.status_code == 201
        listed = (await client.get("/v1/notices", headers=auth("operator", operator_id="op-m"))).json()
        assert [n["tax_account"] for n in listed["items"]] == [mine]
        assert (await client.get("/v1/notices", headers=auth("facilitator", facilitator_id="f"))).json()[
            "items"
        ] == []

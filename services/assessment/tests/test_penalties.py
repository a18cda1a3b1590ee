"""Statutory penalties and interest for a lodging paying 0..366 days late, in both jurisdictions.

Every expected figure is computed by hand below from the statute and the
readings documented in taxcore's parameters (cited), and the service must
produce exactly it through its real consumers and statement endpoint.

PR (Act 272-2003), period 2025-01: room revenue 100,000.00 at 9% (§24(B)) =
tax 9,000.00, due 2025-02-10 (§28(A): the 10th of the following month),
declaration filed on the due date (no §47 fine).
- §46 surcharge (provisional parameter penalties.late_payment_tiers, "replace"):
  5% of the unpaid tax from day 31 (> 30 days late), 10% from day 61.
- §46 interest (provisional: 10% a year, simple, on the tax; actual/actual by
  calendar year): 9,000 x 10% x days / 365 (2025 and 2026 both have 365 days).

VI (33 V.I.C. § 54), period 2025-01: gross room rate 10,000.00 at 12.5%
(§54(b)(1)) = tax 1,250.00, due 2025-03-02 (§54(f): 30 days after Jan 31).
- §54(i)(1)-(5) penalty on the unpaid principal, highest tier reached
  ("replace" reading): 5% from day 1, 15% from day 31, 25% from day 91, 50%
  from day 181, 100% after a year (day 366 here: 2026-03-03).
- §54(i)(6): 1% per month compounding on principal and penalties; interest
  month k ends on the due date + k months; a partial month is prorated by its
  days; a penalty bears interest from the day after it arises; at each month
  end the accrued interest (to the cent) joins the base.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import httpx
import pytest
from assessment_factories import Bus, due, new_account, posted_by_payment, statement
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from taxcore.periods import Period
from taxcore.rules.balance import AccountHistory, compute_balance

DB = async_sessionmaker[AsyncSession]

# days late -> (penalty, interest), computed by hand
PR_CASES = {
    0: ("0.00", "0.00"),
    # §46 interest only: 900 x 1/365 = 2.4657 -> 2.47
    1: ("0.00", "2.47"),
    # 900 x 30/365 = 73.9726 -> 73.97; day 30 is not "more than 30 days"
    30: ("0.00", "73.97"),
    # day 31: 5% x 9,000 = 450.00 (§46 tier P30D); 900 x 31/365 = 76.4384 -> 76.44
    31: ("450.00", "76.44"),
    # day 91 > 60: 10% x 9,000 = 900.00 (§46 tier P60D); 900 x 91/365 = 224.3836 -> 224.38
    91: ("900.00", "224.38"),
    # 900 x 181/365 = 446.3014 -> 446.30
    181: ("900.00", "446.30"),
    # 2025-02-11..2025-12-31 = 324 days /365 + 2026-01-01..2026-02-11 = 42 days /365:
    # 900 x 366/365 = 902.4658 -> 902.47
    366: ("900.00", "902.47"),
}

VI_CASES = {
    0: ("0.00", "0.00"),
    # §54(i)(1) 5% x 1,250 = 62.50 from day 1; interest on 1,250 for day 1 of a 31-day month:
    # 12.50 x 1/31 = 0.4032 -> 0.40
    1: ("62.50", "0.40"),
    # day 1: 12.50/31; days 2-30 on 1,312.50: 13.125 x 29/31; (12.5 + 380.625)/31 = 12.6815 -> 12.68
    30: ("62.50", "12.68"),
    # §54(i)(2) 15% = 187.50 from day 31 (2025-04-02, also month 1's end):
    # (12.5 + 13.125 x 30)/31 = 406.25/31 = 13.1048 -> 13.10
    31: ("187.50", "13.10"),
    # §54(i)(3) 25% = 312.50 from day 91 (2025-06-01):
    # month 1: 13.104839; month 2 (30 d) on 1,250 + 187.50 + 13.10 = 1,450.60: 14.506000;
    # month 3 (31 d), 30 days on 1,437.50 + 27.61 = 1,465.11: 14.651100 x 30/31 = 14.178484
    # total 41.789323 -> 41.79
    91: ("312.50", "41.79"),
    # §54(i)(4) 50% = 625.00 from day 181 (2025-08-30):
    # + month 3 last day on 1,562.50 + 27.61 = 1,590.11: 15.9011/31 = 0.512939 (total 42.302261)
    # + month 4 (30 d) on 1,562.50 + 42.30: 16.048000 (58.350261)
    # + month 5 (31 d) on 1,562.50 + 58.35: 16.208500 (74.558761)
    # + 28 of 31 days on 1,562.50 + 74.56 = 1,637.06: 16.3706 x 28/31 = 14.786348 (89.345109) -> 89.35
    181: ("625.00", "89.35"),
    # §54(i)(5) 100% = 1,250.00 after one year (day 366, 2026-03-03):
    # + 3 of 31 days on 1,875 + 74.56: 1.886671 (91.231780); months to 2026-03-02 on 1,875 + the
    # interest capitalized at the previous month end: 19.6623 (110.894080), 19.8589 (130.752980),
    # 20.0575 (150.810480), 20.2581 (171.068580), 20.4607 (191.529280), 20.6653 (212.194580)
    # + day 366 on 1,875 + 212.19: 20.8719/31 = 0.673287 (212.867867) -> 212.87
    366: ("1250.00", "212.87"),
}

CASES = [("PR", "100000.00", "9000.00", n, *v) for n, v in PR_CASES.items()] + [
    ("VI", "10000.00", "1250.00", n, *v) for n, v in VI_CASES.items()
]


class TestLatePaymentCharges:
    @pytest.mark.parametrize(("jurisdiction", "revenue", "tax", "days", "penalty", "interest"), CASES)
    async def test_exact_statutory_penalty_and_interest(
        self,
        client: httpx.AsyncClient,
        db: DB,
        bus: Bus,
        jurisdiction: str,
        revenue: str,
        tax: str,
        days: int,
        penalty: str,
        interest: str,
    ) -> None:
        account = new_account(jurisdiction)
        await bus.lodging(account, jurisdiction=jurisdiction)
        await bus.declare(account, "2025-01", jurisdiction=jurisdiction, room_revenue=revenue)
        paid_on = due(jurisdiction, "2025-01") + timedelta(days=days)
        owed = Decimal(tax) + Decimal(penalty) + Decimal(interest)

        before = await statement(client, account, paid_on)
        period = before["periods"][0]
        assert period["principal"]["tax"] == tax
        assert period["penalties"][0]["amount"] == penalty
        assert period["interest"] == interest
        assert period["fines"] == "0.00"
        assert period["balance"] == str(owed)
        assert period["days_late"] == days

        # the same figures straight from taxcore's documented rule
        bal = compute_balance(
            AccountHistory(
                jurisdiction=jurisdiction,
                period="2025-01",
                tax=Decimal(tax),
                declaration_filed_on=due(jurisdiction, "2025-01"),
            ),
            as_of=paid_on,
        )
        assert bal.balance == owed

        payment = await bus.pay(
            account, str(owed), paid_on, jurisdiction=jurisdiction, periods={"2025-01": str(owed)}
        )
        after = await statement(client, account, paid_on + timedelta(days=400))
        period = after["periods"][0]
        assert period["balance"] == "0.00"
        assert period["penalties"][0]["amount"] == penalty
        assert period["interest"] == interest
        assert period["components"]["tax"] == {"assessed": tax, "paid": tax, "outstanding": "0.00"}
        assert after["credit"]["total"] == "0.00"
        assert await posted_by_payment(db, account) == {payment: owed}

    async def test_explain_cites_the_statute(self, client: httpx.AsyncClient, bus: Bus) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI")
        await bus.declare(account, "2025-01", jurisdiction="VI", room_revenue="10000.00")
        body = await statement(client, account, "2025-04-02", explain=True)
        steps = body["periods"][0]["explain"]["balance"]
        citations = {s["citation"] for s in steps}
        assert "§54(i)(2)" in citations
        assert "§54(i)(6)" in citations
        liability = body["periods"][0]["explain"]["liabilities"][0]["trace"]
        assert any("§54(b)(1)" in s["citation"] for s in liability)
        assert Period.parse(body["periods"][0]["period"]) == Period(2025, 1)


class TestLateDeclarationFine:
    """PR §47: the operator's declaration stops the fine; an intermediary's schedule does not
    (taxcore ``obligations.declaration_filers``)."""

    async def test_an_intermediarys_on_time_schedule_does_not_cancel_the_operators_fine(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        due_on = due("PR", "2025-01")  # 2025-02-10
        await bus.declare(
            account,
            "2025-01",
            room_revenue="20000.00",
            filer_kind="facilitator",
            filer_id="ota-1",
            filed_on=due_on,
        )
        only_ota = (await statement(client, account, due_on + timedelta(days=4)))["periods"][0]
        assert only_ota["fines"] == "2000.00"  # the operator has not filed: 4 days x $500
        await bus.declare(account, "2025-01", room_revenue="100000.00", filed_on=due_on + timedelta(days=10))
        period = (await statement(client, account, due_on + timedelta(days=30)))["periods"][0]
        assert period["principal"]["tax"] == "10800.00"  # both filers' tax: 1,800 + 9,000
        assert period["fines"] == "5000.00"  # the operator filed 10 days late x $500

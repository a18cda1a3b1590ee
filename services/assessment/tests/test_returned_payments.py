"""A returned payment carries the jurisdiction's returned-payment fee as its own component.

The packaged fee is 0.00 (provisional: our texts set none), so these tests set the
agency's amount, 25.00, the way a deployment would read it from the parameter.
PR, period 2025-01: tax 900.00 due 2025-02-10, paid on the due date, returned 2025-02-20.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
import pytest
from assessment_factories import Bus, cloud_event, new_account, rows, statement
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.casework import fees

DB = async_sessionmaker[AsyncSession]


@pytest.fixture
def fee_25(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        fees.law, "returned_payment_fee", lambda jurisdiction, on, law: (Decimal("25.00"), "§29")
    )


class TestReturnedPaymentFee:
    async def test_fee_from_the_return_date_paid_after_the_tax(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, fee_25: None
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        await bus.declare(account, "2025-01", room_revenue="10000.00")
        paid = await bus.pay(account, "900.00", date(2025, 2, 10), periods={"2025-01": "900.00"})
        await bus.reverse(account, paid, "900.00", date(2025, 2, 20))
        assert (await statement(client, account, "2025-02-19"))["periods"][0]["balance"] == "0.00"
        # day 10 unpaid: §46 interest 900 x 10% x 10/365 = 2.47; fee 25.00 -> 927.47
        period = (await statement(client, account, "2025-02-20"))["periods"][0]
        assert period["balance"] == "927.47"
        assert period["components"]["returned_payment_fee"] == {
            "assessed": "25.00",
            "paid": "0.00",
            "outstanding": "25.00",
        }
        [fact] = period["adjustments"]
        assert (fact["kind"], fact["amount"], fact["section"], fact["approved_by"]) == (
            "returned_payment_fee",
            "25.00",
            "§29",
            "system:returned-payment-fee",
        )
        # 930.00 on 2025-02-25 (day 15): interest 900 x 10% x 15/365 = 3.70, tax 900.00, fee 25.00
        await bus.pay(account, "930.00", date(2025, 2, 25), periods={"2025-01": "930.00"})
        later = await statement(client, account, "2025-03-01")
        assert later["periods"][0]["balance"] == "0.00"
        assert later["credit"]["total"] == "1.30"
        fee_postings = await rows(
            db,
            "SELECT sum(amount) FROM collection_postings WHERE tax_account = :a "
            "AND component = 'returned_payment_fee'",
            a=account,
        )
        assert fee_postings == [(Decimal("25.00"),)]

    async def test_redelivered_reversal_charges_once(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, fee_25: None
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        await bus.declare(account, "2025-01", room_revenue="10000.00")
        paid = await bus.pay(account, "900.00", date(2025, 2, 10), periods={"2025-01": "900.00"})
        data = {
            "reversal_id": "rev-once",
            "payment_id": paid,
            "tax_account": account,
            "jurisdiction": "PR",
            "amount": "900.00",
            "reversed_on": "2025-02-20",
            "reason": "dishonoured cheque",
        }
        event = cloud_event("roomtax.filing.payment.reversed.v1", data, key=account)
        assert await bus.send(event) == "applied"
        assert await bus.send(event) != "applied"  # the inbox drops the redelivery
        replay = cloud_event("roomtax.filing.payment.reversed.v1", data, key=account)  # new event id
        await bus.send(replay)
        facts = await rows(db, "SELECT kind, amount FROM adjustment_facts WHERE tax_account = :a", a=account)
        assert facts == [("returned_payment_fee", Decimal("25.00"))]


class TestFeeOnASettledPeriod:
    """A fee charged after the period was paid in full and filed is collected by later money.

    2025-01 (tax 900.00, filed) is paid on its due date, 2025-02-10. An undesignated 100.00
    on 2025-02-12 finds nothing owed (a credit); a second 900.00 for 2025-01 on 2025-02-13
    also finds it paid (a credit) and is returned on 2025-02-20: the 25.00 fee falls on the
    period it designated. The fee is owed from that day (its own component, paid last); the
    payment of 2025-03-01 is received after it, so it pays it, as taxcore applies money to
    what the period owes that day. The earlier 100.00 stays a credit (money is allocated on
    the day it is received: the ledger's documented reading).
    """

    async def _settled_then_charged(self, bus: Bus, account: str) -> None:
        await bus.lodging(account)
        await bus.declare(account, "2025-01", room_revenue="10000.00", filed_on=date(2025, 2, 10))
        await bus.pay(account, "900.00", date(2025, 2, 10), periods={"2025-01": "900.00"})
        await bus.pay(account, "100.00", date(2025, 2, 12))
        twice = await bus.pay(account, "900.00", date(2025, 2, 13), periods={"2025-01": "900.00"})
        await bus.reverse(account, twice, "900.00", date(2025, 2, 20))

    @pytest.mark.parametrize("designated", [False, True])
    async def test_later_payment_pays_the_fee(
        self, client: httpx.AsyncClient, bus: Bus, fee_25: None, designated: bool
    ) -> None:
        account = new_account()
        await self._settled_then_charged(bus, account)
        charged = await statement(client, account, "2025-02-28")
        assert charged["periods"][0]["balance"] == "25.00"
        assert charged["credit"]["total"] == "100.00"
        await bus.pay(
            account, "25.00", date(2025, 3, 1), periods={"2025-01": "25.00"} if designated else None
        )
        later = await statement(client, account, "2025-03-01")
        [period] = later["periods"]
        assert period["components"]["returned_payment_fee"] == {
            "assessed": "25.00",
            "paid": "25.00",
            "outstanding": "0.00",
        }
        assert period["balance"] == "0.00"
        assert later["credit"]["total"] == "100.00"

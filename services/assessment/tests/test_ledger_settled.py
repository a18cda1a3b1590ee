"""A period paid in full is not walked again only when nothing can arise on it later.

VI (33 V.I.C. § 54), period 2025-01: gross room rate 10,000.00 at 12.5% (§54(b)(1)) = tax
1,250.00, due 2025-03-02 (§54(f)), the return filed on the due date without separate books:
the §54(l) fine of 100.00 per period is assessed from the day after the due date
(penalties.no_books_fine_per_period), after every other component in the application order.
The tax is paid on the due date and an undesignated 40.00 arrives the same day, when nothing
is owed yet (a credit). A payment received later pays the fine owed by then.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import httpx
from assessment_factories import Bus, due, new_account, statement

PERIOD = "2025-01"


class TestBooksFineAfterPaymentInFull:
    async def test_later_payment_pays_the_fine(self, client: httpx.AsyncClient, bus: Bus) -> None:
        account = new_account("VI")
        d = due("VI", PERIOD)
        await bus.lodging(account, jurisdiction="VI")
        lines = {"room_revenue": Decimal("10000.00"), "room_nights": 100, "books_kept": False}
        await bus.declare(account, PERIOD, jurisdiction="VI", lines=lines)
        await bus.pay(account, "1250.00", d, jurisdiction="VI", periods={PERIOD: "1250.00"})
        await bus.pay(account, "40.00", d, jurisdiction="VI")
        assert (await statement(client, account, d))["credit"]["total"] == "40.00"
        fined = await statement(client, account, d + timedelta(days=1))
        assert fined["periods"][0]["balance"] == "100.00"  # 100.00 fine, the tax paid on time
        await bus.pay(account, "100.00", d + timedelta(days=5), jurisdiction="VI")
        later = await statement(client, account, d + timedelta(days=5))
        [period] = later["periods"]
        assert period["components"]["fine"] == {"assessed": "100.00", "paid": "100.00", "outstanding": "0.00"}
        assert period["balance"] == "0.00"
        assert later["credit"]["total"] == "40.00"

"""A decision reducing the VI §54(l) books fine states what it took off, however late the statement.

VI period 2025-01, tax 1,000.00 due 2025-03-02, paid and filed on the due date, no separate
books: the §54(l) fine of 100.00 per period (penalties.no_books_fine_per_period) is assessed
from 2025-03-03. A decision of 2025-04-01 reduces the fines to 40.00: the fine assessed is
40.00 and the decision's effect is -60.00 on every statement from that day (it read 0.00
once the fine had been assessed on more than one day of the account's timeline).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from taxcore.rules.balance import AccountHistory, AdjustmentIn, PaymentIn, compute_balance

HISTORY = AccountHistory(
    jurisdiction="VI",
    period="2025-01",
    tax=Decimal("1000.00"),
    books_kept=False,
    declaration_filed_on=date(2025, 3, 2),
    payments=[PaymentIn(payment_id="p1", received_on=date(2025, 3, 2), amount=Decimal("1000.00"))],
    adjustments=[
        AdjustmentIn(
            fact_id="d1",
            kind="reduce",
            component="fine",
            amount=Decimal("40.00"),
            effective_on=date(2025, 4, 1),
            section="§54(l)",
            reason="books kept in part",
            approved_by="checker",
        )
    ],
)


class TestFineDecision:
    @pytest.mark.parametrize("as_of", [date(2025, 4, 1), date(2025, 6, 1), date(2030, 1, 1)])
    @pytest.mark.parametrize("explain", [False, True])
    def test_effect_is_what_the_decision_took_off(self, as_of: date, explain: bool) -> None:
        balance = compute_balance(HISTORY, as_of=as_of, explain=explain)
        [fine] = [c for c in balance.components if c.component == "fine"]
        assert (fine.assessed, fine.outstanding) == (Decimal("40.00"), Decimal("40.00"))
        [decision] = balance.adjustments
        assert (decision.fact_id, decision.amount, decision.section) == ("d1", Decimal("-60.00"), "§54(l)")
        assert balance.balance == Decimal("40.00")

    def test_the_fine_is_assessed_once(self) -> None:
        balance = compute_balance(HISTORY, as_of=date(2026, 1, 1), explain=True)
        steps = [s for s in balance.trace if s["rule"] == "rule5.balance.no_books_fine"]
        assert [(s["result"], s["citation"]) for s in steps] == [("100.00", "§54(l)")]

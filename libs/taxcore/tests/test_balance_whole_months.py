"""The whole interest months taken in one step give the month-by-month walk's balance, to the cent.

``compute_balance`` accrues a run of whole, quiet interest months (VI §54(i)(6)) in one
loop instead of walking each month end as a day of the ledger. The reference is the walk
of every month end (``_Ledger(..., whole_months=False)``): over random accounts (seeded),
both give the same statement — amounts, applications, adjustments and, when explained,
every trace step — or refuse the same input with the same error.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest

from taxcore.errors import InvalidInput
from taxcore.parameters import default_tree
from taxcore.periods import Period, due_date
from taxcore.rules.balance import AccountHistory, AdjustmentIn, PaymentIn, _Ledger

SEEDS = range(400)


def _cents(rng: random.Random, low: int, high: int) -> Decimal:
    return Decimal(rng.randint(low, high)).scaleb(-2)


def _adjustments(rng: random.Random, due: date, horizon: int) -> list[AdjustmentIn]:
    facts: list[AdjustmentIn] = []
    for i in range(rng.choice([0, 0, 0, 1, 2, 3])):
        kind = rng.choice(["abate", "abate", "write_off", "returned_payment_fee", "reduce", "cancel"])
        on = due + timedelta(days=rng.randint(-5, horizon))
        common: dict[str, Any] = {
            "fact_id": f"f{i}",
            "kind": kind,
            "effective_on": on,
            "section": "§54(i)",
            "reason": "random",
            "approved_by": "tester",
        }
        if kind == "abate":
            component = rng.choice(["penalty", "interest", "fine"])
            common |= {"component": component, "amount": _cents(rng, 1, 20_000)}
        elif kind == "write_off":
            if rng.random() < 0.5:
                common["reversed_on"] = on + timedelta(days=rng.randint(0, 900))
        elif kind == "returned_payment_fee":
            common["amount"] = _cents(rng, 100, 5_000)
        elif kind == "reduce":
            common |= {"component": rng.choice(["tax", "fine"]), "amount": _cents(rng, 0, 50_000)}
        facts.append(AdjustmentIn(**common))
    return facts


def random_account(seed: int) -> tuple[AccountHistory, date]:
    rng = random.Random(seed)
    jurisdiction = "VI" if rng.random() < 0.8 else "PR"
    first = 2017 if jurisdiction == "VI" else 2010
    period = Period(rng.randint(first + 1, 2026), rng.randint(1, 12))
    due = due_date(jurisdiction, period)
    horizon = rng.choice([40, 400, 1_500, 4_000, 7_000])
    tax = _cents(rng, 0, 3_000_000)
    payments = []
    for i in range(rng.choice([0, 1, 1, 2, 3, 5])):
        received = due + timedelta(days=rng.randint(-10, horizon))
        reversed_on = received + timedelta(days=rng.randint(0, 300)) if rng.random() < 0.15 else None
        payments.append(
            PaymentIn(
                payment_id=f"p{i}",
                received_on=received,
                amount=_cents(rng, 1, 4_000_000),
                reversed_on=reversed_on,
            )
        )
    filed = rng.choice([None, due, due + timedelta(days=rng.randint(-5, horizon))])
    noticed = jurisdiction == "PR" and rng.random() < 0.4
    history = AccountHistory(
        jurisdiction=jurisdiction,
        period=str(period),
        tax=tax,
        impact_fee=_cents(rng, 0, 200_000) if jurisdiction == "VI" and rng.random() < 0.3 else Decimal(0),
        declaration_filed_on=filed,
        books_kept=rng.random() < 0.7,
        bond_cover=_cents(rng, 0, 500_000) if jurisdiction == "PR" else Decimal(0),
        deficiency_assessed_on=due + timedelta(days=rng.randint(0, horizon)) if noticed else None,
        payments=payments,
        adjustments=_adjustments(rng, due, horizon),
    )
    return history, due + timedelta(days=rng.randint(0, horizon + 30))


def _statement(history: AccountHistory, as_of: date, *, explain: bool, whole_months: bool) -> dict[str, Any]:
    try:
        ledger = _Ledger(history, as_of, default_tree(), explain=explain, whole_months=whole_months)
        return ledger.run().model_dump()
    except InvalidInput as exc:
        return {"refused": (exc.field, str(exc))}


class TestWholeMonthsInOneStep:
    @pytest.mark.parametrize("seed", SEEDS)
    def test_same_statement_as_the_month_by_month_walk(self, seed: int) -> None:
        history, as_of = random_account(seed)
        walked = _statement(history, as_of, explain=False, whole_months=False)
        assert _statement(history, as_of, explain=False, whole_months=True) == walked

    @pytest.mark.parametrize("seed", SEEDS[:80])
    def test_same_trace_step_by_step(self, seed: int) -> None:
        history, as_of = random_account(seed)
        walked = _statement(history, as_of, explain=True, whole_months=False)
        assert _statement(history, as_of, explain=True, whole_months=True) == walked

    def test_the_random_accounts_take_the_one_step_path(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Not a vacuous comparison: most of the random accounts' months are taken in one step."""
        months = 0
        one_step = _Ledger._accrue_whole_months

        def counted(ledger: _Ledger, first: int, last: int) -> None:
            nonlocal months
            months += last - first + 1
            one_step(ledger, first, last)

        monkeypatch.setattr(_Ledger, "_accrue_whole_months", counted)
        for seed in SEEDS:
            history, as_of = random_account(seed)
            _statement(history, as_of, explain=False, whole_months=True)
        assert months > 10_000  # over 12,000 with these seeds

    def test_an_unpaid_account_over_ten_years(self) -> None:
        """One trace step per interest month still, each citing §54(i)(6); 1% a month compounding."""
        history = AccountHistory(jurisdiction="VI", period="2018-01", tax=Decimal("1000.00"))
        as_of = date(2028, 3, 2)  # 120 interest months after the due date, 2018-03-02
        balance = _Ledger(history, as_of, default_tree(), explain=True).run()
        walked = _Ledger(history, as_of, default_tree(), explain=True, whole_months=False).run()
        assert balance == walked
        interest = [s for s in balance.trace if s["rule"] == "rule5.balance.interest"]
        # 120 months, four of them split by the day a §54(i) tier starts
        assert len(interest) == 124
        assert {s["citation"] for s in interest} == {"§54(i)(6)"}

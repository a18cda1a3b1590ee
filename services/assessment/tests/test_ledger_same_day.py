"""The allocation's same-day shortcut gives exactly the full recomputation, on random accounts.

``_Allocator`` walks taxcore once per period and day and gives a further piece of the same
day what the period owed less what that day's pieces took (``accounts/ledger.py``). These
tests build random accounts in memory (declarations and amendments by several filers,
estimates, payments on few days with and without designations, reversals, paid refunds,
returned-payment fees and decisions) and compare the allocation with the reference that
walks taxcore for every piece, as of several dates: the same pieces (exact Decimal
amounts), credits, refunds, final balances and applications.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal

import pytest

from assessment.accounts.ledger import (
    AccountState,
    BalanceCache,
    Facts,
    account_state,
    current_applications,
    final_balances,
)
from assessment.casework.models import AdjustmentFact, RefundStep
from assessment.models import Estimate, Liability, Payment, PaymentReversal, Refund
from taxcore.parameters import default_tree
from taxcore.periods import Period, due_date

SEEDS = range(160)


def _cents(rng: random.Random, low: int, high: int) -> Decimal:
    return Decimal(rng.randrange(low * 100, high * 100)) / 100


def _fact(
    facts: Facts, fact_id: str, seq: int, period: str, kind: str, component: str, amount: Decimal, on: date
) -> AdjustmentFact:
    return AdjustmentFact(
        id=fact_id,
        seq=seq,
        tax_account=facts.tax_account,
        jurisdiction=facts.jurisdiction,
        period=period,
        kind=kind,
        component=component,
        amount=amount,
        effective_on=on,
        section=kind,
        reason="case work",
        approved_by="u",
    )


def random_facts(seed: int) -> Facts:
    rng = random.Random(seed)
    jurisdiction = rng.choice(["PR", "VI"])
    account = f"{jurisdiction}-{seed:07d}-0"
    facts = Facts(tax_account=account, jurisdiction=jurisdiction, balances=BalanceCache(law=default_tree()))
    first = Period(2024, rng.randrange(1, 13))
    periods = [first]
    for _ in range(rng.randrange(0, 5)):
        periods.append(periods[-1].next())
    start = due_date(jurisdiction, first)
    days = [start + timedelta(days=rng.randrange(-20, 200)) for _ in range(rng.randrange(1, 5))]
    for n, period in enumerate(periods):
        due = due_date(jurisdiction, period)
        if rng.random() < 0.2:
            facts.estimates.append(
                Estimate(
                    id=f"e-{n}",
                    tax_account=account,
                    period=str(period),
                    raised_on=due + timedelta(days=rng.randrange(20, 60)),
                    jurisdiction=jurisdiction,
                    lodging_class="hotel",
                    taxable_base=Decimal("1000.00"),
                    tax=_cents(rng, 50, 900),
                    impact_fee=_cents(rng, 0, 30) if jurisdiction == "VI" else Decimal("0.00"),
                    method="history",
                )
            )
            if rng.random() < 0.5:
                continue  # no declaration: the estimate stands
        filers = [("operator", "op")] + ([("facilitator", "fac")] if rng.random() < 0.3 else [])
        for kind, filer in filers:
            for version in range(1, rng.randrange(2, 4)):
                facts.liabilities.append(
                    Liability(
                        declaration_id=f"d-{n}-{filer}-{version}",
                        filing_id=f"f-{n}-{filer}",
                        version=version,
                        tax_account=account,
                        jurisdiction=jurisdiction,
                        lodging_class="hotel",
                        period=str(period),
                        filer_kind=kind,
                        filer_id=filer,
                        filed_on=due + timedelta(days=rng.randrange(-10, 90) + 30 * (version - 1)),
                        books_kept=rng.random() < 0.9,
                        tax=_cents(rng, 10, 800),
                        impact_fee=_cents(rng, 0, 25) if jurisdiction == "VI" else Decimal("0.00"),
                        deficiency=Decimal("0.00"),
                    )
                )
    for k in range(rng.randrange(1, 14)):
        designations = []
        if rng.random() < 0.4:
            designations = [{"period": str(rng.choice(periods)), "amount": str(_cents(rng, 5, 400))}]
        facts.payments.append(
            Payment(
                payment_id=f"p-{k:02d}",
                tax_account=account,
                jurisdiction=jurisdiction,
                amount=_cents(rng, 1, 500),
                received_on=rng.choice(days),
                designations=designations,
            )
        )
    for k, pay in enumerate(facts.payments):
        if rng.random() < 0.15:
            facts.reversals.append(
                PaymentReversal(
                    reversal_id=f"r-{k}",
                    payment_id=pay.payment_id,
                    tax_account=account,
                    amount=min(pay.amount, _cents(rng, 1, 300)),
                    reversed_on=pay.received_on + timedelta(days=rng.randrange(0, 30)),
                )
            )
            if rng.random() < 0.5:
                on = pay.received_on + timedelta(days=rng.randrange(0, 30))
                fee = ("returned_payment_fee", "returned_payment_fee", Decimal("25.00"), on)
                facts.adjustments.append(_fact(facts, f"fee-{k}", k, str(rng.choice(periods)), *fee))
    if rng.random() < 0.2:
        decision = ("reduce", "tax", _cents(rng, 1, 20), max(days))
        facts.adjustments.append(_fact(facts, "reduce", 100, str(periods[0]), *decision))
    for k in range(rng.choice([0, 0, 1, 2])):
        requested = max(days) + timedelta(days=rng.randrange(1, 60))
        refund = Refund(id=f"rf-{k}", tax_account=account, amount=_cents(rng, 1, 200), requested_on=requested)
        facts.refunds.append(refund)
        if rng.random() < 0.7:
            paid_on = requested + timedelta(days=rng.randrange(0, 20))
            step = {"id": f"rs-{k}", "refund_id": refund.id, "tax_account": account, "step": "paid"}
            facts.refund_steps.append(RefundStep(**step, on=paid_on))
    return facts


def _same(fast: AccountState, full: AccountState) -> None:
    assert fast.pieces == full.pieces
    assert fast.piece_payment == full.piece_payment
    assert fast.credits == full.credits
    assert (fast.refunded, fast.refund_shortfall) == (full.refunded, full.refund_shortfall)
    fast_finals, full_finals = final_balances(fast), final_balances(full)
    assert fast_finals == full_finals
    assert current_applications(fast, fast_finals) == current_applications(full, full_finals)


def test_same_day_pieces_equal_the_full_recomputation_on_random_accounts() -> None:
    same_day_pieces = 0
    for seed in SEEDS:
        facts = random_facts(seed)
        dates = sorted({p.received_on for p in facts.payments})
        for as_of in (None, dates[0], dates[-1], date(2027, 6, 30)):
            fast = account_state(facts, as_of)
            _same(fast, account_state(facts, as_of, same_day=False))
            for pieces in fast.pieces.values():
                days = [on for on, _ in pieces.values()]
                same_day_pieces += len(days) - len(set(days))
    assert same_day_pieces > 100  # the shortcut was taken, not only the walk


@pytest.mark.parametrize("seed", [3, 17])
def test_a_random_account_has_pieces_to_compare(seed: int) -> None:
    """The generator makes accounts whose payments are allocated (not all credit)."""
    state = account_state(random_facts(seed), None)
    assert sum(amount for p in state.pieces.values() for _, amount in p.values()) > 0

"""Properties every balance keeps, for any account history (hypothesis)."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taxcore.periods import Period, due_date
from taxcore.rules.balance import AccountHistory, Balance, PaymentIn, compute_balance

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

cents = st.integers(min_value=0, max_value=5_000_000).map(lambda c: Decimal(c).scaleb(-2))
positive_cents = st.integers(min_value=1, max_value=3_000_000).map(lambda c: Decimal(c).scaleb(-2))


@st.composite
def histories(draw: st.DrawFn) -> AccountHistory:
    jurisdiction = draw(st.sampled_from(["PR", "VI"]))
    period = Period(draw(st.integers(2025, 2028)), draw(st.integers(1, 12)))
    due = due_date(jurisdiction, period)
    days = st.integers(min_value=-10, max_value=500).map(lambda n: due + timedelta(days=n))
    payments = []
    for i in range(draw(st.integers(0, 4))):
        received = draw(days)
        reversed_after = draw(st.one_of(st.none(), st.integers(0, 200)))
        reversed_on = None if reversed_after is None else received + timedelta(days=reversed_after)
        payments.append(
            PaymentIn(
                payment_id=f"p{i}",
                received_on=received,
                amount=draw(positive_cents),
                reversed_on=reversed_on,
            )
        )
    return AccountHistory(
        jurisdiction=jurisdiction,
        period=str(period),
        tax=draw(cents),
        impact_fee=draw(cents) if jurisdiction == "VI" and draw(st.booleans()) else Decimal(0),
        declaration_filed_on=draw(st.one_of(st.none(), days)),
        books_kept=draw(st.booleans()),
        bond_cover=draw(cents),
        deficiency_assessed_on=draw(st.one_of(st.none(), days)),
        payments=payments,
    )


def _due(h: AccountHistory) -> date:
    return due_date(h.jurisdiction, Period.parse(h.period))


def _check_accounts(b: Balance, h: AccountHistory) -> None:
    counted = [
        p
        for p in h.payments
        if p.received_on <= b.as_of and (p.reversed_on is None or p.reversed_on > b.as_of)
    ]
    received = sum((p.amount for p in counted), Decimal(0))
    applied = sum((a.amount for a in b.applications), Decimal(0))
    assert applied == b.total_paid
    assert b.total_paid + b.credit == received
    assert b.balance >= 0
    assert b.credit >= 0
    assert b.balance == 0 or b.credit == 0
    assert b.balance == sum((c.outstanding for c in b.components), Decimal(0))
    for c in b.components:
        assert c.outstanding >= 0, c
        assert c.outstanding == c.assessed - c.paid
    per_payment: dict[str, Decimal] = {}
    for a in b.applications:
        assert a.component in {"tax", "impact_fee", "penalty", "interest", "fine"}
        assert a.amount > 0
        per_payment[a.payment_id] = per_payment.get(a.payment_id, Decimal(0)) + a.amount
    for p in counted:
        assert per_payment.get(p.payment_id, Decimal(0)) <= p.amount


class TestBalanceProperties:
    @SETTINGS
    @given(h=histories(), offset=st.integers(-20, 800))
    def test_applications_add_up(self, h: AccountHistory, offset: int) -> None:
        b = compute_balance(h, as_of=_due(h) + timedelta(days=offset))
        _check_accounts(b, h)

    @SETTINGS
    @given(h=histories(), offset=st.integers(-20, 600), later=st.integers(1, 500))
    def test_never_decreases_while_nothing_is_paid(self, h: AccountHistory, offset: int, later: int) -> None:
        t1 = _due(h) + timedelta(days=offset)
        t2 = t1 + timedelta(days=later)
        quiet = h.model_copy(update={"payments": [p for p in h.payments if not t1 < p.received_on <= t2]})
        b1 = compute_balance(quiet, as_of=t1)
        b2 = compute_balance(quiet, as_of=t2)
        assert b2.balance >= b1.balance
        assert b2.total_assessed >= b1.total_assessed
        for c1, c2 in zip(b1.components, b2.components, strict=True):
            assert c2.assessed >= c1.assessed, (c1, c2)

    @SETTINGS
    @given(h=histories(), offset=st.integers(-20, 800))
    def test_paying_the_balance_leaves_exactly_zero(self, h: AccountHistory, offset: int) -> None:
        as_of = _due(h) + timedelta(days=offset)
        b = compute_balance(h, as_of=as_of)
        if b.balance == 0:
            return
        settled = h.model_copy(
            update={
                "payments": [
                    *h.payments,
                    PaymentIn(payment_id="settle", received_on=as_of, amount=b.balance),
                ]
            }
        )
        after = compute_balance(settled, as_of=as_of)
        assert after.balance == Decimal("0.00")
        assert after.credit == Decimal("0.00")
        assert after.total_assessed == b.total_assessed
        _check_accounts(after, settled)

    @SETTINGS
    @given(h=histories(), offset=st.integers(-20, 800), extra=positive_cents, gap=st.integers(1, 90))
    def test_a_later_payment_does_not_change_a_past_statement(
        self, h: AccountHistory, offset: int, extra: Decimal, gap: int
    ) -> None:
        as_of = _due(h) + timedelta(days=offset)
        more = h.model_copy(
            update={
                "payments": [
                    *h.payments,
                    PaymentIn(payment_id="later", received_on=as_of + timedelta(days=gap), amount=extra),
                ]
            }
        )
        past = compute_balance(h, as_of=as_of).model_dump(exclude={"trace"})
        assert compute_balance(more, as_of=as_of).model_dump(exclude={"trace"}) == past

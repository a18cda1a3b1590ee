"""The returned-payment fee: a reversed payment (dishonoured cheque, failed transfer) is charged
the jurisdiction's ``cases.returned_payment_fee`` (provisional; 0 charges none) as its own
component, on the period the payment had paid, from the day it was returned."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import Facts, account_state
from assessment.casework import facts as adjustments
from assessment.casework import law
from assessment.casework.models import AdjustmentFact
from assessment.models import PaymentReversal

SYSTEM = "system:returned-payment-fee"


def period_paid_by(facts: Facts, payment_id: str, reversal: PaymentReversal) -> str | None:
    """The oldest period the payment paid the day before it was returned (else one it designated)."""
    state = account_state(facts, reversal.reversed_on - timedelta(days=1))
    paid = [
        p
        for p, pieces in sorted(state.pieces.items())
        if any(state.piece_payment.get(piece) == payment_id for piece in pieces)
    ]
    if paid:
        return paid[0]
    payment = next((p for p in facts.payments if p.payment_id == payment_id), None)
    designated = [
        d["period"] for d in (payment.designations if payment else []) if d["period"] in state.periods
    ]
    return designated[0] if designated else None


async def charge_returned_payment_fee(
    session: AsyncSession, reversal: PaymentReversal
) -> AdjustmentFact | None:
    facts = await accounts_repo.load_facts(session, reversal.tax_account)
    if facts is None:  # pragma: no cover - a reversal belongs to a known payment
        return None
    fee, section = law.returned_payment_fee(facts.jurisdiction, reversal.reversed_on, law=facts.law)
    period = period_paid_by(facts, reversal.payment_id, reversal)
    if fee == 0 or period is None:
        return None
    row = AdjustmentFact(
        tax_account=facts.tax_account,
        jurisdiction=facts.jurisdiction,
        period=period,
        kind="returned_payment_fee",
        component=None,
        amount=fee,
        effective_on=reversal.reversed_on,
        section=section,
        reason=f"payment {reversal.payment_id} returned: {reversal.reason}",
        proposed_by=None,
        approved_by=SYSTEM,
        source_kind="reversal",
        source_id=reversal.reversal_id,
    )
    [fact] = await adjustments.record(session, facts, [row], field="amount")
    return fact

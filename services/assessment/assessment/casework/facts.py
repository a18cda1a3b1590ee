"""Adjustment facts: validated by taxcore before they are written, then events and postings.

A fact is checked by computing the account with it on its date and on the latest
date any fact of the account is dated (a later fact must still hold): taxcore's
``InvalidInput`` (an abatement larger than what is outstanding, a reduction above
the assessment) becomes a 422 on the caller's field and nothing is written.
"""

from __future__ import annotations

import uuid
from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts.ledger import Facts, account_state, latest_fact_date, period_statements
from assessment.accounts.service import recompute
from assessment.casework.events import event_id
from assessment.casework.models import AdjustmentFact, AdjustmentReversal
from assessment.rows import from_row
from servicekit.errors import ValidationFailed
from servicekit.outbox import OutboxEvent, emit, emit_many
from taxcore.errors import InvalidInput
from taxcore.events.cases import AdjustmentRecorded, AdjustmentReversed
from taxcore.rules.balance import Balance


def balances_on(facts: Facts, period: str, on: date) -> Balance | None:
    """The period's balance as of ``on`` with the facts as they stand (None: no liability yet)."""
    state = account_state(facts, on)
    if period not in state.periods:
        return None
    for st in period_statements(state, on, explain=False):
        if st.basis.period == period:
            return st.balance
    return None  # pragma: no cover


def check(facts: Facts, periods: set[str], dates: set[date], *, field: str) -> None:
    """Raise a 422 on ``field`` when taxcore refuses the account's facts on any of ``dates``."""
    latest = latest_fact_date(facts)
    for on in sorted(dates | ({latest} if latest is not None else set())):
        try:
            for period in sorted(periods):
                balances_on(facts, period, on)
        except InvalidInput as err:
            raise ValidationFailed.on(field, err.message) from None


async def record(
    session: AsyncSession, facts: Facts, rows: list[AdjustmentFact], *, field: str
) -> list[AdjustmentFact]:
    """Write approved facts (validated first), their events, and re-post the account's collections."""
    for row in rows:
        row.id = row.id or str(uuid.uuid4())
    facts.adjustments.extend(rows)
    try:
        check(facts, {r.period for r in rows}, {r.effective_on for r in rows}, field=field)
    except ValidationFailed:
        del facts.adjustments[-len(rows) :]
        raise
    session.add_all(rows)
    await session.flush()
    await emit_many(
        session,
        [
            OutboxEvent.of(
                from_row(AdjustmentRecorded, row, fact_id=row.id),
                key=facts.tax_account,
                event_id=event_id("adjustment", row.id),
            )
            for row in rows
        ],
    )
    await recompute(session, tax_account=facts.tax_account, facts=facts)
    return rows


async def reverse(
    session: AsyncSession,
    facts: Facts,
    fact: AdjustmentFact,
    *,
    reversed_on: date,
    reason: str,
    proposed_by: str | None,
    approved_by: str,
) -> AdjustmentReversal:
    """Reverse a write-off from ``reversed_on`` (validated like a new fact)."""
    row = AdjustmentReversal(
        fact_id=fact.id,
        tax_account=fact.tax_account,
        reversed_on=reversed_on,
        reason=reason,
        proposed_by=proposed_by,
        approved_by=approved_by,
    )
    facts.adjustment_reversals.append(row)
    try:
        check(facts, {fact.period}, {reversed_on}, field="reversed_on")
    except ValidationFailed:
        facts.adjustment_reversals.pop()
        raise
    session.add(row)
    await session.flush()
    await emit(
        session,
        from_row(AdjustmentReversed, row, period=fact.period),
        key=facts.tax_account,
        event_id=event_id("adjustment-reversal", fact.id),
    )
    await recompute(session, tax_account=facts.tax_account, facts=facts)
    return row

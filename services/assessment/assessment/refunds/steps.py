"""A refund's state, read from its steps (pure), and the event of each step."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts.ledger import Facts
from assessment.casework import law
from assessment.casework.events import event_id
from assessment.casework.models import RefundStep
from assessment.models import Refund
from servicekit.outbox import emit
from taxcore.events.cases import RefundStepRecorded
from taxcore.money import ZERO

FINAL = ("denied", "paid")


def steps_of(facts: Facts, refund_id: str) -> list[RefundStep]:
    return sorted((s for s in facts.refund_steps if s.refund_id == refund_id), key=lambda s: s.seq or 0)


def status(facts: Facts, refund_id: str) -> str:
    steps = steps_of(facts, refund_id)
    return steps[-1].step if steps else "requested"


def open_amount(facts: Facts) -> Decimal:
    """Refunds requested or approved but neither paid nor denied: credit already spoken for."""
    return sum((r.amount for r in facts.refunds if status(facts, r.id) not in FINAL), ZERO)


async def emit_step(
    session: AsyncSession,
    facts: Facts,
    refund: Refund,
    *,
    step: str,
    on: date,
    by: str,
    row: RefundStep | None = None,
) -> None:
    details: dict[str, Any] = row.details if row is not None else {}
    await emit(
        session,
        RefundStepRecorded(
            refund_id=refund.id,
            step_id=row.id if row is not None else refund.id,
            tax_account=refund.tax_account,
            jurisdiction=facts.jurisdiction,
            step=step,
            on=on,
            by=by,
            amount=refund.amount,
            reasons=details.get("reasons"),
            method=details.get("method"),
            reference=details.get("reference"),
            proposed_by=details.get("proposed_by"),
            approved_by=details.get("approved_by"),
            section=law.section(facts.jurisdiction, "refund", on, law=facts.law),
        ),
        key=refund.tax_account,
        event_id=event_id("refund-step", refund.id, step),
    )

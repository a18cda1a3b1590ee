"""Every payment query."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from sqlalchemy import (
    ColumnElement,
    Numeric,
    Select,
    and_,
    cast,
    column,
    exists,
    false,
    func,
    or_,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from filing.models import Lodging, Payment, PaymentReversal
from servicekit.auth import Principal


def visibility(principal: Principal) -> ColumnElement[bool]:
    """Agency: all; operator: payments for its lodgings; facilitator: what it paid."""
    if principal.is_agency:
        return true()
    if principal.role == "operator":
        own = select(Lodging.lodging_id).where(Lodging.operator_id == (principal.operator_id or ""))
        return Payment.lodging_id.in_(own)
    if principal.role == "facilitator":
        return and_(Payment.payer_kind == "facilitator", Payment.payer_id == (principal.facilitator_id or ""))
    return false()


def _with_reversal() -> Select[Payment, PaymentReversal]:
    return select(Payment, PaymentReversal).outerjoin(
        PaymentReversal, PaymentReversal.payment_id == Payment.id
    )


async def get_visible(
    session: AsyncSession, principal: Principal, payment_id: str
) -> tuple[Payment, PaymentReversal | None] | None:
    stmt = _with_reversal().where(visibility(principal), Payment.id == payment_id)
    row = (await session.execute(stmt)).first()
    return None if row is None else (row[0], row[1])


async def by_code(session: AsyncSession, code: str) -> tuple[Payment, PaymentReversal | None] | None:
    row = (await session.execute(_with_reversal().where(Payment.verification_code == code))).first()
    return None if row is None else (row[0], row[1])


async def reversal_of(session: AsyncSession, payment_id: str) -> PaymentReversal | None:
    stmt = select(PaymentReversal).where(PaymentReversal.payment_id == payment_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_page(
    session: AsyncSession,
    principal: Principal,
    *,
    limit: int,
    before: int | None,
    jurisdiction: str | None = None,
    period: str | None = None,
    lodging: str | None = None,
    payer_kind: str | None = None,
    payer_id: str | None = None,
    method: str | None = None,
    status: str | None = None,
) -> Sequence[tuple[Payment, PaymentReversal | None]]:
    stmt = _with_reversal().where(visibility(principal))
    if jurisdiction:
        stmt = stmt.where(Payment.jurisdiction == jurisdiction)
    if period:
        stmt = stmt.where(Payment.periods.contains([{"period": period}]))
    if lodging:
        stmt = stmt.where(or_(Payment.tax_account == lodging, Payment.lodging_id == lodging))
    if payer_kind:
        stmt = stmt.where(Payment.payer_kind == payer_kind)
    if payer_id:
        stmt = stmt.where(Payment.payer_id == payer_id)
    if method:
        stmt = stmt.where(Payment.method == method)
    if status == "reversed":
        stmt = stmt.where(PaymentReversal.id.is_not(None))
    elif status == "received":
        stmt = stmt.where(PaymentReversal.id.is_(None))
    if before is not None:
        stmt = stmt.where(Payment.seq < before)
    stmt = stmt.order_by(Payment.seq.desc()).limit(limit + 1)
    return [(r[0], r[1]) for r in (await session.execute(stmt)).all()]


async def paid_for_period(
    session: AsyncSession, principal: Principal, *, lodging_id: str, period: str
) -> list[tuple[tuple[str, str], Decimal]]:
    """(payer kind, payer id) -> amount designated for ``period``, reversed payments excluded."""
    element = func.jsonb_array_elements(Payment.periods).table_valued(column("value", JSONB)).lateral("e")
    amount = func.sum(cast(element.c.value["amount"].astext, Numeric(18, 2)))
    stmt = (
        select(Payment.payer_kind, Payment.payer_id, amount)
        .select_from(Payment)
        .join(element, true())
        .where(
            visibility(principal),
            Payment.lodging_id == lodging_id,
            element.c.value["period"].astext == period,
            ~exists().where(PaymentReversal.payment_id == Payment.id),
        )
        .group_by(Payment.payer_kind, Payment.payer_id)
        .order_by(Payment.payer_kind.desc(), Payment.payer_id)
    )
    return [((r[0], r[1]), r[2]) for r in (await session.execute(stmt)).all()]

"""Payment use-cases: record a payment, reverse it, issue its receipt.

Payments are never edited: a bounced check is a reversal, a new record that
references the payment, allowed once.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from filing.declarations.schemas import Filer
from filing.lodging_periods import parse_period
from filing.models import Lodging, Payment, PaymentReversal
from filing.payments import receipts, repository
from filing.payments.schemas import METHOD_LABELS, PaymentCreate, ReversalCreate
from filing.projection import repository as projection
from filing.settings import FilingSettings
from servicekit.auth import Principal
from servicekit.db import new_id
from servicekit.errors import Conflict, Forbidden, ValidationFailed
from servicekit.outbox import emit
from servicekit.rows import from_row
from taxcore.errors import TaxcoreError
from taxcore.events import filing as ev
from taxcore.parameters import ParameterTree
from taxcore.periods import Period


def legal_basis(jurisdiction: str, on: date, *, law: ParameterTree) -> str:
    """The statute a receipt cites (taxcore ``agency.statute``: PR §28(C); VI §54)."""
    try:
        return str(law.value(jurisdiction, "agency.statute", on))
    except TaxcoreError:
        return "room occupancy tax"


async def _payer(
    session: AsyncSession, principal: Principal, lodging: Lodging, body: PaymentCreate, received_on: date
) -> Filer:
    if principal.role == "agency-admin":
        if body.payer is None:
            raise ValidationFailed.on("payer", "the agency records a payment on behalf of a payer: say which")
        payer = body.payer
    elif body.payer is not None:
        raise Forbidden(
            "only the agency records a payment on behalf of another payer",
            errors=[{"pointer": "#/body/payer", "detail": "agency-admin only"}],
        )
    elif principal.role == "operator":
        payer = Filer(kind="operator", id=principal.operator_id or "")
    elif principal.role == "facilitator":
        payer = Filer(kind="facilitator", id=principal.facilitator_id or "")
    else:
        raise Forbidden(f"role {principal.role!r} may not record payments")
    if payer.kind == "operator" and payer.id != lodging.operator_id:
        raise ValidationFailed.on("payer.id", "is not the lodging's operator")
    if payer.kind == "facilitator":
        for i, item in enumerate(body.periods):
            period = Period.parse(item.period)
            if not await projection.is_authorized(
                session, lodging_id=lodging.lodging_id, facilitator_id=payer.id, period=period
            ):
                raise ValidationFailed.on(f"periods[{i}].period", "outside the facilitator's authorization")
        if not body.periods and not await projection.is_authorized(
            session, lodging_id=lodging.lodging_id, facilitator_id=payer.id, period=Period.of(received_on)
        ):
            # a payment designating no period is for the lodging as it stands today
            raise ValidationFailed.on("periods", "the facilitator is not authorized by this lodging now")
    return payer


async def record_payment(
    session: AsyncSession,
    *,
    principal: Principal,
    lodging: Lodging,
    body: PaymentCreate,
    settings: FilingSettings,
    today: date,
) -> Payment:
    received_on = body.received_on or today
    if received_on > today:
        raise ValidationFailed.on("received_on", "is in the future")
    if received_on != today and not principal.can_write_all:
        raise Forbidden(
            "only the agency records a payment received on another day",
            errors=[{"pointer": "#/body/received_on", "detail": "agency-admin only"}],
        )
    if body.amount <= 0:
        raise ValidationFailed.on("amount", "must be more than zero")
    seen: set[str] = set()
    designated = Decimal(0)
    for i, item in enumerate(body.periods):
        period = parse_period(item.period, field=f"periods[{i}].period")
        if item.period in seen:
            raise ValidationFailed.on(f"periods[{i}].period", "listed twice")
        seen.add(item.period)
        if item.amount <= 0:
            raise ValidationFailed.on(f"periods[{i}].amount", "must be more than zero")
        if period > Period.of(today):
            raise ValidationFailed.on(f"periods[{i}].period", "has not begun")
        if period.last_day < lodging.registered_on:
            raise ValidationFailed.on(f"periods[{i}].period", "is before the lodging's registration")
        designated += item.amount
    if designated > body.amount:
        raise ValidationFailed.on(
            "periods", f"designates {designated}, more than the payment's {body.amount}"
        )
    payer = await _payer(session, principal, lodging, body, received_on)
    payment_id = new_id()
    payment = Payment(
        id=payment_id,
        lodging_id=lodging.lodging_id,
        tax_account=lodging.tax_account,
        jurisdiction=lodging.jurisdiction,
        amount=body.amount,
        method=body.method,
        reference=body.reference,
        received_on=received_on,
        payer_kind=payer.kind,
        payer_id=payer.id,
        periods=[{"period": p.period, "amount": str(p.amount)} for p in body.periods],
        verification_code=receipts.verification_code(settings.receipt_secret, payment_id),
        submitted_by=principal.client_id,
    )
    session.add(payment)
    await session.flush()
    periods = [ev.PeriodAmount(period=p.period, amount=p.amount) for p in body.periods]
    received = from_row(ev.PaymentReceived, payment, payment_id=payment.id, periods=periods)
    await emit(session, received, key=lodging.tax_account)
    return payment


async def reverse_payment(
    session: AsyncSession, *, principal: Principal, payment: Payment, body: ReversalCreate, today: date
) -> PaymentReversal:
    reversed_on = body.reversed_on or today
    if reversed_on > today:
        raise ValidationFailed.on("reversed_on", "is in the future")
    if reversed_on < payment.received_on:
        raise ValidationFailed.on("reversed_on", "is before the payment was received")
    if await repository.reversal_of(session, payment.id) is not None:
        raise Conflict(f"payment {payment.id} is already reversed; a payment is reversed once")
    reversal = PaymentReversal(
        payment_id=payment.id,
        tax_account=payment.tax_account,
        jurisdiction=payment.jurisdiction,
        amount=payment.amount,
        reversed_on=reversed_on,
        reason=body.reason,
        submitted_by=principal.client_id,
    )
    session.add(reversal)
    await session.flush()
    reversed_ = from_row(ev.PaymentReversed, reversal, reversal_id=reversal.id)
    await emit(session, reversed_, key=reversal.tax_account)
    return reversal


def unallocated(payment: Payment) -> Decimal:
    return payment.amount - sum((Decimal(p["amount"]) for p in payment.periods), Decimal(0))


def reversal_out(r: PaymentReversal | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "id": r.id,
        "payment_id": r.payment_id,
        "tax_account": r.tax_account,
        "amount": r.amount,
        "reversed_on": r.reversed_on,
        "reason": r.reason,
        "submitted_by": r.submitted_by,
        "created_at": r.created_at,
    }


def payment_out(p: Payment, r: PaymentReversal | None) -> dict[str, Any]:
    return {
        "id": p.id,
        "tax_account": p.tax_account,
        "lodging_id": p.lodging_id,
        "jurisdiction": p.jurisdiction,
        "amount": p.amount,
        "method": p.method,
        "reference": p.reference,
        "received_on": p.received_on,
        "payer": {"kind": p.payer_kind, "id": p.payer_id},
        "periods": p.periods,
        "unallocated": unallocated(p),
        "status": "reversed" if r else "received",
        "reversal": reversal_out(r),
        "submitted_by": p.submitted_by,
        "created_at": p.created_at,
    }


def receipt(
    p: Payment,
    r: PaymentReversal | None,
    *,
    lodging_name: str,
    payer_name: str | None,
    settings: FilingSettings,
    issued_at: datetime,
    law: ParameterTree,
) -> dict[str, Any]:
    return {
        "receipt_number": p.id,
        "agency": settings.agency_name(p.jurisdiction, p.received_on, law=law),
        "jurisdiction": p.jurisdiction,
        "legal_basis": legal_basis(p.jurisdiction, p.received_on, law=law),
        "tax_account": p.tax_account,
        "lodging_name": lodging_name,
        "payer": {"kind": p.payer_kind, "id": p.payer_id},
        "payer_name": payer_name,
        "amount": p.amount,
        "method": p.method,
        "method_label": METHOD_LABELS[p.method],
        "reference": p.reference,
        "received_on": p.received_on,
        "periods": p.periods,
        "unallocated": unallocated(p),
        "status": "reversed" if r else "received",
        "reversal": reversal_out(r),
        "verification_code": p.verification_code,
        "verify_url": f"{settings.public_base_url.rstrip('/')}/v1/receipts/verify/{p.verification_code}",
        "issued_at": issued_at,
    }

"""Event handlers: the registry projection and the facts that come from filing.

Each handler runs inside the consumer's transaction, after the inbox row, so a
redelivered event never reaches it; the handlers are also idempotent on their
own (unique ids), so a replay through another consumer name changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from assessment import law
from assessment.accounts import repository
from assessment.accounts.service import recompute_after_batch
from assessment.casework.fees import charge_returned_payment_fee
from assessment.models import (
    BondDrawRequest,
    BondDrawView,
    BondView,
    Liability,
    LodgingView,
    Payment,
    PaymentReversal,
)
from assessment.notices.service import issue_notice
from servicekit.outbox import emit
from taxcore.events import CloudEvent
from taxcore.events.assessment import AccountAssessed
from taxcore.events.filing import DeclarationFiled, PaymentReceived, PaymentReversed
from taxcore.events.registry import BondDrawn, BondPosted, LodgingSnapshot
from taxcore.money import ZERO, fmt
from taxcore.periods import Period, due_date
from taxcore.rules.declaration import DeclarationInput, DeclarationResult, compute_allowed

# --------------------------------------------------------------------------- registry


async def on_lodging(session: AsyncSession, event: CloudEvent) -> None:
    """Keep the latest snapshot (an older snapshot delivered late does not overwrite a newer one)."""
    snap = LodgingSnapshot.model_validate(event.data)
    row = await session.get(LodgingView, snap.tax_account, with_for_update=True)
    if row is not None and row.snapshot_at > event.time:
        return
    values = {
        "lodging_id": snap.lodging_id,
        "jurisdiction": snap.jurisdiction,
        "lodging_class": snap.lodging_class,
        "casino": snap.casino,
        "name": snap.name,
        "municipality": snap.municipality,
        "room_count": snap.room_count,
        "operator_id": snap.operator_id,
        "registered_on": snap.registered_on,
        "statuses": [s.model_dump(mode="json") for s in snap.statuses],
        "attributes": [a.model_dump(mode="json") for a in snap.attribute_history()],
        "snapshot_at": event.time,
    }
    if row is None:
        session.add(LodgingView(tax_account=snap.tax_account, **values))
    else:
        for k, v in values.items():
            setattr(row, k, v)
    await session.flush()
    await repository.lock_account(session, snap.tax_account)
    await recompute_after_batch(session, snap.tax_account)


async def on_bond(session: AsyncSession, event: CloudEvent) -> None:
    bond = BondPosted.model_validate(event.data)
    row = await session.get(BondView, bond.bond_id, with_for_update=True)
    if row is not None and row.snapshot_at > event.time:
        return
    values = {
        "tax_account": bond.tax_account,
        "kind": bond.kind,
        "amount": bond.amount,
        "effective_on": bond.effective_on,
        "expires_on": bond.expires_on,
        "status": bond.status,
        "snapshot_at": event.time,
    }
    if row is None:
        session.add(BondView(bond_id=bond.bond_id, **values))
    else:
        for k, v in values.items():
            setattr(row, k, v)
    await session.flush()


async def on_bond_drawn(session: AsyncSession, event: CloudEvent) -> None:
    """A bond draw is money the agency collected: a payment designated to the notice's period."""
    draw = BondDrawn.model_validate(event.data)
    if await session.get(BondDrawView, draw.draw_id) is not None:
        return
    session.add(
        BondDrawView(
            draw_id=draw.draw_id,
            bond_id=draw.bond_id,
            tax_account=draw.tax_account,
            amount=draw.amount,
            drawn_on=draw.drawn_on,
            request_event_id=draw.request_event_id,
        )
    )
    await session.flush()
    if draw.request_event_id is None:
        return
    request = (
        await session.execute(
            select(BondDrawRequest).where(BondDrawRequest.event_id == draw.request_event_id)
        )
    ).scalar_one_or_none()
    if request is None:
        return
    await repository.lock_account(session, draw.tax_account)
    lodging = await session.get(LodgingView, draw.tax_account)
    session.add(
        Payment(
            payment_id=f"bond-draw-{draw.draw_id}",
            tax_account=draw.tax_account,
            # the account number starts with the jurisdiction code (registry's documented format)
            jurisdiction=lodging.jurisdiction if lodging else draw.tax_account.split("-", 1)[0],
            amount=draw.amount,
            method="bond_draw",
            received_on=draw.drawn_on,
            payer_kind="agency",
            payer_id=draw.bond_id,
            designations=[{"period": request.period, "amount": fmt(draw.amount)}],
            source="bond_draw",
        )
    )
    await session.flush()
    await recompute_after_batch(session, draw.tax_account)


# --------------------------------------------------------------------------- filing


def recompute_declaration(inp: DeclarationInput) -> DeclarationResult:
    """taxcore's figures from the declared lines.

    A claim the statute does not allow (an exemption without its evidence) is
    disallowed rather than refused, as taxcore's check does: the agency
    assesses the corrected tax.
    """
    return compute_allowed(inp)


def _deficiency(data: DeclarationFiled, result: DeclarationResult) -> tuple[Decimal, str | None]:
    computed = result.tax + result.impact_fee
    if data.declared_total is not None:
        declared = data.declared_total
    elif data.declared_tax is not None:
        declared = data.declared_tax + (data.impact_fee if result.impact_fee else ZERO)
    else:
        declared = ZERO
    deficiency = computed - declared
    reasons = [f"{f.code} on {f.line}: {f.message} ({f.section})" for f in data.findings]
    if result.tax != data.tax or result.impact_fee != data.impact_fee:
        reasons.append(
            f"recomputed by taxcore: tax {fmt(result.tax)}, impact fee {fmt(result.impact_fee)} "
            f"(the event said {fmt(data.tax)}, {fmt(data.impact_fee)})"
        )
    if deficiency != 0 and not reasons:
        reasons.append(f"declared {fmt(declared)}; the declaration's lines come to {fmt(computed)}")
    if deficiency == 0 and not data.findings:
        return deficiency, None
    return deficiency, "; ".join(reasons) or None


async def on_declaration(session: AsyncSession, event: CloudEvent) -> None:
    """A declaration version: taxcore's tax is the liability; the difference is a deficiency."""
    data = DeclarationFiled.model_validate(event.data)
    await repository.lock_account(session, data.tax_account)
    existing = (
        await session.execute(select(Liability.id).where(Liability.declaration_id == data.declaration_id))
    ).first()
    if existing is not None:
        return
    inp = DeclarationInput.model_validate(data.input)
    result = recompute_declaration(inp)
    deficiency, reason = _deficiency(data, result)
    row = Liability(
        declaration_id=data.declaration_id,
        filing_id=data.filing_id,
        version=data.version,
        supersedes=data.supersedes,
        tax_account=data.tax_account,
        lodging_id=data.lodging_id,
        jurisdiction=data.jurisdiction,
        lodging_class=data.lodging_class,
        period=data.period,
        filer_kind=data.filer_kind,
        filer_id=data.filer_id,
        filed_on=data.filed_on,
        books_kept=data.books_kept and inp.books_kept,
        input=data.input,
        taxable_base=result.taxable_base,
        tax=result.tax,
        impact_fee=result.impact_fee,
        declared_tax=data.declared_tax,
        declared_total=data.declared_total,
        deficiency=deficiency,
        deficiency_reason=reason,
        findings=[f.model_dump(mode="json") for f in data.findings],
        trace=result.explain(),
        event_id=event.id,
    )
    session.add(row)
    await session.flush()
    latest = await repository.latest_period_amounts(session, data.tax_account, data.period)
    await emit(
        session,
        event_type="roomtax.assessment.account.assessed.v1",
        key=data.tax_account,
        data=AccountAssessed(
            tax_account=data.tax_account,
            jurisdiction=data.jurisdiction,
            lodging_class=data.lodging_class,
            period=data.period,
            basis="declaration",
            source_id=data.declaration_id,
            due_date=due_date(data.jurisdiction, Period.parse(data.period)),
            assessed_on=data.filed_on,
            tax=sum((tax for tax, _ in latest), ZERO),
            impact_fee=sum((fee for _, fee in latest), ZERO),
            declared_total=data.declared_total,
            deficiency=deficiency,
            reasons=[reason] if reason else [],
            section=law.LIABILITY_SECTION[data.jurisdiction],
        ),
    )
    clerical = [f for f in data.findings if f.code in law.CLERICAL_CODES]
    if clerical and deficiency > 0:
        facts = await repository.load_facts(session, data.tax_account)
        assert facts is not None
        await issue_notice(
            session,
            facts,
            period=data.period,
            kind="clerical_error",
            reason="Mathematical or clerical error assessed without a hearing: "
            + "; ".join(f"{f.message} ({f.section})" for f in clerical),
            issued_on=data.filed_on,
            issued_by="assessment",
            source_declaration_id=data.declaration_id,
        )
    await recompute_after_batch(session, data.tax_account)


async def on_payment(session: AsyncSession, event: CloudEvent) -> None:
    data = PaymentReceived.model_validate(event.data)
    await repository.lock_account(session, data.tax_account)
    if await session.get(Payment, data.payment_id) is not None:
        return
    session.add(
        Payment(
            payment_id=data.payment_id,
            tax_account=data.tax_account,
            jurisdiction=data.jurisdiction,
            amount=data.amount,
            method=data.method,
            received_on=data.received_on,
            payer_kind=data.payer_kind,
            payer_id=data.payer_id,
            designations=[{"period": p.period, "amount": fmt(p.amount)} for p in data.periods],
            source="filing",
        )
    )
    await session.flush()
    await recompute_after_batch(session, data.tax_account)


async def on_reversal(session: AsyncSession, event: CloudEvent) -> None:
    data = PaymentReversed.model_validate(event.data)
    await repository.lock_account(session, data.tax_account)
    if await session.get(PaymentReversal, data.reversal_id) is not None:
        return
    reversal = PaymentReversal(
        reversal_id=data.reversal_id,
        payment_id=data.payment_id,
        tax_account=data.tax_account,
        amount=data.amount,
        reversed_on=data.reversed_on,
        reason=data.reason,
    )
    session.add(reversal)
    await session.flush()
    if await charge_returned_payment_fee(session, reversal) is None:  # the fee recomputes the account
        await recompute_after_batch(session, data.tax_account)


def event_time(event: CloudEvent) -> datetime:
    return event.time

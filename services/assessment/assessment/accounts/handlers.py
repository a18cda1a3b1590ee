"""Event handlers: the registry projection and the facts that come from filing.

Each handler runs inside the consumer's transaction, after the inbox row, so a
redelivered event never reaches it; the handlers are also idempotent on their
own (unique ids), so a replay through another consumer name changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from assessment import law
from assessment.accounts import repository
from assessment.accounts.service import recompute_after_batch
from assessment.casework.fees import charge_returned_payment_fee
from assessment.crosschecks import service as crosschecks
from assessment.crosschecks.service import check_when_the_lodging_arrives, run_crosschecks
from assessment.models import (
    BondDrawView,
    BondView,
    LodgingView,
    Payment,
    PaymentReversal,
)
from assessment.notices import repository as notices
from assessment.notices.service import issue_notice
from assessment.plans import service as plans
from servicekit.consumer import handles
from servicekit.outbox import emit
from servicekit.projections import lodging_values, upsert_latest
from servicekit.runtime import Runtime
from taxcore.events import CloudEvent
from taxcore.events.assessment import AccountAssessed
from taxcore.events.filing import DeclarationAmended, DeclarationFiled, PaymentReceived, PaymentReversed
from taxcore.events.registry import (
    BondDrawn,
    BondPosted,
    LodgingAttributesChanged,
    LodgingRegistered,
    LodgingSnapshot,
    LodgingStatusChanged,
    LodgingUpdated,
)
from taxcore.money import ZERO, fmt
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date
from taxcore.rules.declaration import DeclarationInput, DeclarationResult, compute_allowed

# --------------------------------------------------------------------------- registry


@handles(LodgingRegistered, LodgingUpdated, LodgingStatusChanged, LodgingAttributesChanged)
async def on_lodging(
    session: AsyncSession, snap: LodgingSnapshot, event: CloudEvent, runtime: Runtime
) -> None:
    """Keep the latest snapshot (an older snapshot delivered late does not overwrite a newer one)."""
    values = {
        **lodging_values(snap),
        "municipality": snap.municipality,
        "room_count": snap.room_count,
        "address": snap.address.model_dump(mode="json") if snap.address is not None else None,
        "preferred_language": snap.preferred_language,
        "snapshot_at": event.time,
    }
    if not await upsert_latest(session, LodgingView, values, key=["tax_account"], as_of="snapshot_at"):
        return  # an older snapshot delivered late
    await repository.lock_account(session, snap.tax_account)
    await recompute_after_batch(session, tax_account=snap.tax_account)
    await repository.write_held(session)  # the batch's returns, if it holds any of this account
    await check_when_the_lodging_arrives(session, tax_account=snap.tax_account, law=runtime.law)


@handles(BondPosted)
async def on_bond(session: AsyncSession, bond: BondPosted, event: CloudEvent, runtime: Runtime) -> None:
    kept = ("bond_id", "tax_account", "kind", "amount", "effective_on", "expires_on", "status")
    values = {**{name: getattr(bond, name) for name in kept}, "snapshot_at": event.time}
    await upsert_latest(session, BondView, values, key=["bond_id"], as_of="snapshot_at")


@handles(BondDrawn)
async def on_bond_drawn(session: AsyncSession, draw: BondDrawn, event: CloudEvent, runtime: Runtime) -> None:
    """A bond draw is money the agency collected: a payment designated to the notice's period."""
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
    request = await notices.draw_request_of_event(session, draw.request_event_id)
    if request is None:
        return
    await repository.lock_account(session, draw.tax_account)
    lodging = await session.get(LodgingView, draw.tax_account)
    payment_id = f"bond-draw-{draw.draw_id}"
    session.add(
        Payment(
            payment_id=payment_id,
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
    await recompute_after_batch(session, tax_account=draw.tax_account, payment_id=payment_id)


# --------------------------------------------------------------------------- filing


_DECLARATIONS = {DeclarationFiled.event_type, DeclarationAmended.event_type}


async def prepare_filing_batch(session: AsyncSession, events: Sequence[CloudEvent]) -> None:
    """Before a batch of filing events: every account it touches locked, and what its
    handlers look up (recorded or not, the lodging) fetched for the whole batch at once.
    The handlers do not depend on it (they lock and look up again what was not fetched)."""

    def field(event: CloudEvent, name: str) -> str | None:
        value = event.data.get(name)
        return value if isinstance(value, str) else None

    accounts = [a for e in events if (a := field(e, "tax_account"))]
    declared = [e for e in events if e.type in _DECLARATIONS]
    declarations = [d for e in declared if (d := field(e, "declaration_id"))]
    periods = [(a, p) for e in declared if (a := field(e, "tax_account")) and (p := field(e, "period"))]
    payments = [p for e in events if e.type == PaymentReceived.event_type and (p := field(e, "payment_id"))]
    await repository.prepare_batch(
        session, tax_accounts=accounts, declarations=declarations, payments=payments, periods=periods
    )
    if periods:  # what the cross-checks of its returns read (its lodgings are in the session now)
        # the peers of a group only for an operator return (anything not an intermediary's)
        returns = [
            (a, p)
            for e in declared
            if field(e, "filer_kind") != "facilitator"
            and (a := field(e, "tax_account"))
            and (p := field(e, "period"))
        ]
        await crosschecks.prepare_batch(session, periods=periods, returns=returns)
    money = (PaymentReceived.event_type, PaymentReversed.event_type)
    paying = [a for e in events if e.type in money and (a := field(e, "tax_account"))]
    if paying:
        await plans.prepare_batch(session, tax_accounts=sorted(set(paying)))


def recompute_declaration(inp: DeclarationInput, *, law: ParameterTree) -> DeclarationResult:
    """taxcore's figures from the declared lines.

    A claim the statute does not allow (an exemption without its evidence) is
    disallowed rather than refused, as taxcore's check does: the agency
    assesses the corrected tax.
    """
    return compute_allowed(inp, parameters=law)


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


@handles(DeclarationFiled, DeclarationAmended)
async def on_declaration(
    session: AsyncSession, data: DeclarationFiled, event: CloudEvent, runtime: Runtime
) -> None:
    """A declaration version: taxcore's tax is the liability; the difference is a deficiency."""
    await repository.lock_account(session, data.tax_account)
    if await repository.liability_recorded(session, data.declaration_id):
        return
    inp = DeclarationInput.model_validate(data.input)
    result = recompute_declaration(inp, law=runtime.law)
    deficiency, reason = _deficiency(data, result)
    await repository.add_liability(  # held until the batch's liabilities are written at once
        session,
        {
            "declaration_id": data.declaration_id,
            "filing_id": data.filing_id,
            "version": data.version,
            "supersedes": data.supersedes,
            "tax_account": data.tax_account,
            "lodging_id": data.lodging_id,
            "jurisdiction": data.jurisdiction,
            "lodging_class": data.lodging_class,
            "period": data.period,
            "filer_kind": data.filer_kind,
            "filer_id": data.filer_id,
            "filed_on": data.filed_on,
            "books_kept": data.books_kept and inp.books_kept,
            "input": data.input,
            "taxable_base": result.taxable_base,
            "tax": result.tax,
            "impact_fee": result.impact_fee,
            "declared_tax": data.declared_tax,
            "declared_total": data.declared_total,
            "deficiency": deficiency,
            "deficiency_reason": reason,
            "findings": [f.model_dump(mode="json") for f in data.findings],
            "trace": result.explain(),
            "event_id": event.id,
        },
    )
    latest = await repository.latest_period_amounts(session, data.tax_account, data.period)
    await emit(
        session,
        AccountAssessed(
            tax_account=data.tax_account,
            jurisdiction=data.jurisdiction,
            lodging_class=data.lodging_class,
            period=data.period,
            basis="declaration",
            source_id=data.declaration_id,
            due_date=due_date(data.jurisdiction, Period.parse(data.period), parameters=runtime.law),
            assessed_on=data.filed_on,
            tax=sum((tax for tax, _ in latest), ZERO),
            impact_fee=sum((fee for _, fee in latest), ZERO),
            declared_total=data.declared_total,
            deficiency=deficiency,
            reasons=[reason] if reason else [],
            section=law.LIABILITY_SECTION.of(runtime.law, data.jurisdiction),
        ),
        key=data.tax_account,
    )
    clerical = [f for f in data.findings if f.code in law.CLERICAL_CODES]
    if clerical and deficiency > 0:
        facts = await repository.load_facts(session, data.tax_account)
        assert facts is not None
        await issue_notice(
            session,
            facts=facts,
            period=data.period,
            kind="clerical_error",
            reason="Mathematical or clerical error assessed without a hearing: "
            + "; ".join(f"{f.message} ({f.section})" for f in clerical),
            issued_on=data.filed_on,
            issued_by="assessment",
            source_declaration_id=data.declaration_id,
        )
    await recompute_after_batch(session, tax_account=data.tax_account)
    # the cross-checks compare an operator's return with the intermediaries' (none: nothing to check)
    if await repository.operator_filed(session, data.tax_account, data.period):
        await run_crosschecks(  # from what the batch's set-up read, and the returns added since
            session,
            tax_account=data.tax_account,
            period=data.period,
            checked_on=data.filed_on,
            law=runtime.law,
        )


@handles(PaymentReceived)
async def on_payment(
    session: AsyncSession, data: PaymentReceived, event: CloudEvent, runtime: Runtime
) -> None:
    await repository.lock_account(session, data.tax_account)
    if await repository.payment_recorded(session, data.payment_id):
        return
    await repository.add_payment(  # held until the batch's payments are written at once
        session,
        {
            "payment_id": data.payment_id,
            "tax_account": data.tax_account,
            "jurisdiction": data.jurisdiction,
            "amount": data.amount,
            "method": data.method,
            "received_on": data.received_on,
            "payer_kind": data.payer_kind,
            "payer_id": data.payer_id,
            "designations": [{"period": p.period, "amount": fmt(p.amount)} for p in data.periods],
            "source": "filing",
        },
    )
    await recompute_after_batch(session, tax_account=data.tax_account, payment_id=data.payment_id)
    await plans.on_payment(session, tax_account=data.tax_account, on=data.received_on)  # installments it paid


@handles(PaymentReversed)
async def on_reversal(
    session: AsyncSession, data: PaymentReversed, event: CloudEvent, runtime: Runtime
) -> None:
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
        await recompute_after_batch(session, tax_account=data.tax_account, payment_id=data.payment_id)
    # the installments the returned money had paid are unpaid again
    await plans.on_payment(session, tax_account=data.tax_account, on=data.reversed_on)

"""notify's projection of the registry, from its events (``registry.lodgings``,
``registry.parties``), and of the filings and payments it needs for reminders and
receipts. Every handler is an upsert (an older snapshot never replaces a newer one), so
a replay changes nothing; the consumer's inbox drops redeliveries anyway.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from notify.models import Authorization, Lodging, Party
from notify.projection import repository
from servicekit.projections import lodging_values, upsert_authorization, upsert_latest, upsert_party
from taxcore.events import CloudEvent
from taxcore.events import filing as fe
from taxcore.events import registry as ev


async def project_lodging(session: AsyncSession, event: CloudEvent) -> ev.LodgingSnapshot:
    snap = ev.LodgingSnapshot.model_validate(event.data)
    language = getattr(snap, "preferred_language", None) or event.data.get("preferred_language")
    values = {
        **lodging_values(snap),
        "language": str(language) if language else None,
        "as_of": event.time,
    }
    await upsert_latest(session, Lodging, values, key=["lodging_id"], as_of="as_of")
    return snap


async def project_authorization(session: AsyncSession, event: CloudEvent) -> None:
    auth = ev.AuthorizationGranted.model_validate(event.data)
    await upsert_authorization(session, Authorization, auth, event)


async def project_operator(session: AsyncSession, event: CloudEvent) -> None:
    op = ev.OperatorRegistered.model_validate(event.data)
    values = {"kind": "operator", "party_id": op.operator_id, "name": op.name, "email": op.email}
    await upsert_party(session, Party, values, event)


async def project_facilitator(session: AsyncSession, event: CloudEvent) -> None:
    fac = ev.FacilitatorRegistered.model_validate(event.data)
    values = {"kind": "facilitator", "party_id": fac.facilitator_id, "name": fac.name, "email": fac.email}
    await upsert_party(session, Party, values, event)


async def project_declaration(session: AsyncSession, event: CloudEvent) -> fe.DeclarationFiled:
    decl = fe.DeclarationFiled.model_validate(event.data)
    await repository.record_filing(
        session,
        tax_account=decl.tax_account,
        period=decl.period,
        filer_kind=decl.filer_kind,
        filed_on=decl.filed_on,
    )
    return decl


async def project_payment(session: AsyncSession, event: CloudEvent) -> None:
    pay = fe.PaymentReceived.model_validate(event.data)
    values = pay.model_dump(mode="json")
    values.update(amount=pay.amount, received_on=pay.received_on)
    await repository.record_payment(session, values)

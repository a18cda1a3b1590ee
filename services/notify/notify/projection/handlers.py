"""notify's projection of the registry, from its events (``registry.lodgings``,
``registry.parties``), and of the filings and payments it needs for reminders and
receipts. Every handler is an upsert (an older snapshot never replaces a newer one), so
a replay changes nothing; the consumer's inbox drops redeliveries anyway.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from notify.models import Authorization, Lodging, Party
from notify.projection import repository
from taxcore.events import CloudEvent
from taxcore.events import filing as fe
from taxcore.events import registry as ev


async def project_lodging(session: AsyncSession, event: CloudEvent) -> ev.LodgingSnapshot:
    snap = ev.LodgingSnapshot.model_validate(event.data)
    language = getattr(snap, "preferred_language", None) or event.data.get("preferred_language")
    values = {
        "lodging_id": snap.lodging_id,
        "tax_account": snap.tax_account,
        "jurisdiction": snap.jurisdiction,
        "name": snap.name,
        "operator_id": snap.operator_id,
        "registered_on": snap.registered_on,
        "lodging_class": snap.lodging_class,
        "casino": snap.casino,
        "statuses": [s.model_dump(mode="json") for s in snap.statuses],
        "attributes": [a.model_dump(mode="json") for a in snap.attribute_history()],
        "language": str(language) if language else None,
        "as_of": event.time,
    }
    await repository.upsert_newer(session, Lodging, ["lodging_id"], values)
    return snap


async def project_authorization(session: AsyncSession, event: CloudEvent) -> None:
    auth = ev.AuthorizationGranted.model_validate(event.data)
    await repository.upsert_newer(
        session, Authorization, ["authorization_id"], {**auth.model_dump(), "as_of": event.time}
    )


async def project_operator(session: AsyncSession, event: CloudEvent) -> None:
    op = ev.OperatorRegistered.model_validate(event.data)
    values = {"kind": "operator", "party_id": op.operator_id, "name": op.name, "email": op.email}
    await repository.upsert_newer(session, Party, ["kind", "party_id"], {**values, "as_of": event.time})


async def project_facilitator(session: AsyncSession, event: CloudEvent) -> None:
    fac = ev.FacilitatorRegistered.model_validate(event.data)
    values = {"kind": "facilitator", "party_id": fac.facilitator_id, "name": fac.name, "email": fac.email}
    await repository.upsert_newer(session, Party, ["kind", "party_id"], {**values, "as_of": event.time})


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

"""The registry projection: lodgings, facilitator authorizations, certificates and the
names of operators and facilitators (for receipts).

Built from the registry's events on ``registry.lodgings`` (keyed by tax account,
so one lodging's events arrive in order) and ``registry.parties`` (keyed by the party's
id). Lodging events carry a full snapshot; every handler is an upsert, so applying an
event twice changes nothing (the consumer inbox already drops redeliveries; the ``as_of``
guard also ignores an older snapshot replayed after a newer one).
"""

from __future__ import annotations

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from filing.models import Authorization, Certificate, Lodging, Party
from servicekit.consumer import AnyHandler, handler_map, handles
from servicekit.projections import lodging_values, upsert_authorization, upsert_latest, upsert_party
from servicekit.runtime import Runtime
from taxcore.events import CloudEvent
from taxcore.events import registry as ev


@handles(ev.LodgingRegistered, ev.LodgingUpdated, ev.LodgingStatusChanged, ev.LodgingAttributesChanged)
async def on_lodging_snapshot(
    session: AsyncSession, snap: ev.LodgingSnapshot, event: CloudEvent, runtime: Runtime
) -> None:
    values = {**lodging_values(snap), "municipality": snap.municipality, "as_of": event.time}
    await upsert_latest(session, Lodging, values, key=["lodging_id"], as_of="as_of")


@handles(ev.AuthorizationGranted, ev.AuthorizationEnded)
async def on_authorization(
    session: AsyncSession, auth: ev.AuthorizationGranted, event: CloudEvent, runtime: Runtime
) -> None:
    await upsert_authorization(session, Authorization, auth, event)


@handles(ev.CertificateIssued)
async def on_certificate_issued(
    session: AsyncSession, cert: ev.CertificateIssued, event: CloudEvent, runtime: Runtime
) -> None:
    stmt = insert(Certificate).values(**cert.model_dump()).on_conflict_do_nothing()
    await session.execute(stmt)


async def _party(session: AsyncSession, kind: str, party_id: str, name: str, event: CloudEvent) -> None:
    await upsert_party(session, Party, {"kind": kind, "party_id": party_id, "name": name}, event)


@handles(ev.OperatorRegistered)
async def on_operator_registered(
    session: AsyncSession, op: ev.OperatorRegistered, event: CloudEvent, runtime: Runtime
) -> None:
    await _party(session, "operator", op.operator_id, op.name, event)


@handles(ev.FacilitatorRegistered)
async def on_facilitator_registered(
    session: AsyncSession, fac: ev.FacilitatorRegistered, event: CloudEvent, runtime: Runtime
) -> None:
    await _party(session, "facilitator", fac.facilitator_id, fac.name, event)


HANDLERS: dict[str, AnyHandler] = handler_map(
    [
        on_lodging_snapshot,
        on_authorization,
        on_certificate_issued,
        on_operator_registered,
        on_facilitator_registered,
    ]
)

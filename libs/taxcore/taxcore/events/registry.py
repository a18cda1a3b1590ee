"""Registry events: who must collect the tax, and who may file for whom.

Lodging events carry a full snapshot so a projection needs no other call.
Keyed by the lodging's tax account number (topic ``registry.lodgings``);
operator/facilitator/client events are keyed by their id; a revocation
(topic ``registry.revocations``) by the revoked client's or person's id.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal
from typing import Literal

from taxcore.events import EventData, contract

LODGINGS = "registry.lodgings"
PARTIES = "registry.parties"
CLIENTS = "registry.clients"
REVOCATIONS = "registry.revocations"


class StatusPeriod(EventData):
    status: str  # active | suspended | closed
    effective_from: date


def status_on(history: Iterable[tuple[date, str]], on: date) -> str:
    """A lodging's status on ``on`` from its effective-dated history of (effective_from, status).

    Active from registration until the first change; entries of one day apply in order.
    """
    status = "active"
    for effective_from, entry in sorted(history, key=lambda item: item[0]):
        if effective_from <= on:
            status = entry
    return status


class LodgingSnapshot(EventData):
    lodging_id: str
    tax_account: str
    jurisdiction: str
    lodging_class: str
    casino: bool
    name: str
    municipality: str
    room_count: int
    operator_id: str
    registered_on: date
    statuses: list[StatusPeriod]


@contract("roomtax.registry.lodging.registered.v1", LODGINGS)
class LodgingRegistered(LodgingSnapshot):
    pass


@contract("roomtax.registry.lodging.updated.v1", LODGINGS)
class LodgingUpdated(LodgingSnapshot):
    pass


@contract("roomtax.registry.lodging.status_changed.v1", LODGINGS)
class LodgingStatusChanged(LodgingSnapshot):
    pass


@contract("roomtax.registry.authorization.granted.v1", LODGINGS)
class AuthorizationGranted(EventData):
    authorization_id: str
    lodging_id: str
    tax_account: str
    facilitator_id: str
    starts_on: date
    ends_on: date | None


@contract("roomtax.registry.authorization.ended.v1", LODGINGS)
class AuthorizationEnded(AuthorizationGranted):
    pass


@contract("roomtax.registry.bond.posted.v1", LODGINGS)
class BondPosted(EventData):
    bond_id: str
    lodging_id: str
    tax_account: str
    kind: str
    amount: Decimal
    issuer: str
    effective_on: date
    expires_on: date
    status: str


@contract("roomtax.registry.bond.drawn.v1", LODGINGS)
class BondDrawn(EventData):
    draw_id: str
    bond_id: str
    tax_account: str
    amount: Decimal
    drawn_on: date
    reason: str
    request_event_id: str | None
    remaining: Decimal


@contract("roomtax.registry.certificate.issued.v1", LODGINGS)
class CertificateIssued(EventData):
    certificate_id: str
    lodging_id: str
    tax_account: str
    kind: str
    certificate_number: str
    production: str
    valid_from: date
    valid_to: date


@contract("roomtax.registry.operator.registered.v1", PARTIES)
class OperatorRegistered(EventData):
    operator_id: str
    name: str
    email: str | None


@contract("roomtax.registry.facilitator.registered.v1", PARTIES)
class FacilitatorRegistered(EventData):
    facilitator_id: str
    name: str
    email: str | None


@contract("roomtax.registry.client.changed.v1", CLIENTS)
class ClientChanged(EventData):
    client_id: str
    role: str
    operator_id: str | None
    facilitator_id: str | None
    change: str  # created | rotated | revoked


@contract("roomtax.registry.access.revoked.v1", REVOCATIONS)
class AccessRevoked(EventData):
    """A client (``kind="client"``) or a person (``kind="user"``) lost access at ``revoked_at``.

    Every service refuses the tokens issued to it before ``revoked_at`` from the moment
    it learns of the event: an access token lives up to ``token_ttl_seconds`` and is
    verified locally, so without this event a revoked caller would keep working until
    its token expires. Tokens issued later (a person whose access is restored) pass.
    """

    kind: Literal["client", "user"]
    subject_id: str
    revoked_at: datetime
    reason: str | None = None

"""Registry events: who must collect the tax, and who may file for whom.

Lodging events carry a full snapshot so a projection needs no other call.
Keyed by the lodging's tax account number (topic ``registry.lodgings``);
operator/facilitator/client events are keyed by their id; a revocation
(topic ``registry.revocations``) by the revoked client's or person's id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Literal, Protocol

from pydantic import Field

from taxcore.events import EventData, contract
from taxcore.money import Money
from taxcore.periods import Period

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


class AttributePeriod(EventData):
    """A lodging's rate-bearing attributes in force from ``effective_from`` (append-only history).

    The rate is the one "for the period of occupancy" (PR §2(16)): the class (PR §24(B))
    and the casino licence decide it, so a computation for a period uses the values in
    force then (:func:`attributes_for_period`), never today's.
    """

    effective_from: date
    lodging_class: str
    casino: bool


def attributes_on(
    history: Iterable[AttributePeriod], on: date, *, default: AttributePeriod
) -> AttributePeriod:
    """The attributes in force on ``on``: the latest entry effective on or before it.

    ``default`` (the registration values) applies before the first entry and to a
    snapshot published before attributes were effective-dated (empty history).
    """
    current = default
    for entry in sorted(history, key=lambda item: item.effective_from):
        if entry.effective_from <= on:
            current = entry
    return current


def attributes_for_period(
    history: Iterable[AttributePeriod], period: Period, *, default: AttributePeriod
) -> AttributePeriod:
    """The attributes of a monthly return: those in force on the period's last day.

    The registry accepts a change only from a period's first day (one return, one rate:
    PR §28(B), VI §54(f)), so every day of a period from registration has the same values.
    """
    return attributes_on(history, period.last_day, default=default)


class LodgingHistory(Protocol):
    """A service's projection of a lodging snapshot: the statuses and attributes as JSON rows."""

    @property
    def jurisdiction(self) -> str: ...
    @property
    def registered_on(self) -> date: ...
    @property
    def lodging_class(self) -> str: ...
    @property
    def casino(self) -> bool: ...
    @property
    def statuses(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def attributes(self) -> Sequence[Mapping[str, Any]]: ...


def status_history(lodging: LodgingHistory) -> list[tuple[date, str]]:
    """A projected lodging's status history as (effective_from, status)."""
    return [(date.fromisoformat(str(s["effective_from"])), str(s["status"])) for s in lodging.statuses]


def attributes_in(lodging: LodgingHistory, period: Period) -> AttributePeriod:
    """A projected lodging's class and casino licence in force in ``period`` (PR §2(16)):
    :func:`attributes_for_period` of its history, the registration values built only when
    no entry is in force (a lodging's history starts at its registration: every return of
    a 10,000-row schedule would build them for nothing)."""
    history = [AttributePeriod.model_validate(a) for a in lodging.attributes]
    on = period.last_day
    if len(history) == 1 and history[0].effective_from <= on:
        return history[0]  # what attributes_on gives for one entry in force (most lodgings)
    if any(entry.effective_from <= on for entry in history):
        return attributes_on(history, on, default=history[0])  # the default is not reached
    return AttributePeriod(
        effective_from=lodging.registered_on, lodging_class=lodging.lodging_class, casino=lodging.casino
    )


class MailingAddress(EventData):
    line1: str
    line2: str | None = None
    municipality: str
    postal_code: str | None = None


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
    #: effective-dated class and casino licence; ``lodging_class``/``casino`` above are the
    #: latest recorded values (empty in snapshots published before the history existed)
    attributes: list[AttributePeriod] = Field(default_factory=list)
    #: the mailing address official documents are sent to (line1, line2, municipality,
    #: postal_code); None in snapshots published before documents existed
    address: MailingAddress | None = None
    #: the language of the lodging's official documents; None: the jurisdiction's default
    #: (taxcore ``agency.default_language``: PR Spanish, VI English)
    preferred_language: Literal["en", "es"] | None = None

    def registered_attributes(self) -> AttributePeriod:
        return AttributePeriod(
            effective_from=self.registered_on, lodging_class=self.lodging_class, casino=self.casino
        )

    def attribute_history(self) -> list[AttributePeriod]:
        return list(self.attributes) or [self.registered_attributes()]


@contract("roomtax.registry.lodging.registered.v1", LODGINGS)
class LodgingRegistered(LodgingSnapshot):
    pass


@contract("roomtax.registry.lodging.updated.v1", LODGINGS)
class LodgingUpdated(LodgingSnapshot):
    pass


@contract("roomtax.registry.lodging.status_changed.v1", LODGINGS)
class LodgingStatusChanged(LodgingSnapshot):
    pass


@contract("roomtax.registry.lodging.attributes_changed.v1", LODGINGS)
class LodgingAttributesChanged(LodgingSnapshot):
    """A class or casino change recorded from an effective date (the new entry is the last)."""


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
    amount: Money
    issuer: str
    effective_on: date
    expires_on: date
    status: str


@contract("roomtax.registry.bond.drawn.v1", LODGINGS)
class BondDrawn(EventData):
    draw_id: str
    bond_id: str
    tax_account: str
    amount: Money
    drawn_on: date
    reason: str
    request_event_id: str | None
    remaining: Money


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
    """A client (``kind="client"``), a person (``kind="user"``) or one sign-in session of a
    person (``kind="session"``, the ``sid`` claim of its tokens) lost access at ``revoked_at``.

    Every service refuses the tokens issued to it before ``revoked_at`` from the moment
    it learns of the event: an access token lives up to ``token_ttl_seconds`` and is
    verified locally, so without this event a revoked caller would keep working until
    its token expires. Tokens issued later (a person whose access is restored) pass.
    """

    kind: Literal["client", "user", "session"]
    subject_id: str
    revoked_at: datetime
    reason: str | None = None


USERS = "registry.users"


@contract("roomtax.registry.user.changed.v1", USERS)
class UserChanged(EventData):
    """A person's account (agency staff, or an operator's or facilitator's user) changed.

    No e-mail address or password material travels: consumers learn who may act, not how
    to reach or impersonate them. ``by`` is the actor who made the change.
    """

    user_id: str
    role: str
    operator_id: str | None
    facilitator_id: str | None
    change: str  # created | disabled | password_changed
    by: str

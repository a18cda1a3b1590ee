"""Projections of another service's aggregates: the latest snapshot wins.

A service keeps a local copy of what another publishes as full snapshots (the registry's
lodgings, bonds, authorizations, party names). Events of one key arrive in order, but a
replay or a second consumer can deliver an older snapshot after a newer one, so a row is
written only when the event is not older than what is stored.

The column sets several services keep of the same snapshot are declarative mixins here
(``LodgingColumns``, ``AuthorizationColumns``, ``PartyColumns``, ``PaymentColumns``): each service still
declares its own table (``class Lodging(LodgingColumns, Base)`` with its ``__tablename__``
and its key columns) in its own database, created by its own migrations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Boolean, Date, DateTime, Text
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from servicekit.db import Money
from taxcore.events import CloudEvent
from taxcore.events import registry as ev


async def upsert_latest(
    session: AsyncSession,
    model: type[DeclarativeBase],
    values: Mapping[str, Any],
    *,
    key: Sequence[str],
    as_of: str,
) -> bool:
    """Insert the row, or update it unless the stored one is newer (by the ``as_of`` column).

    One statement (``INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE stored.as_of <=
    new.as_of``), which locks the row like ``SELECT ... FOR UPDATE`` would. ``values``
    holds every column to write, the key included. Returns whether the row was written
    (False: an older snapshot, ignored).
    """
    table = model.__table__
    stmt = insert(model).values(**values)
    upsert = stmt.on_conflict_do_update(
        index_elements=[table.c[k] for k in key],
        set_={k: stmt.excluded[k] for k in values if k not in key},
        where=table.c[as_of] <= stmt.excluded[as_of],
    ).returning(table.c[key[0]])
    return (await session.execute(upsert)).first() is not None


class LodgingColumns:
    """The registry's lodging snapshot (``LodgingSnapshot``) as every projection of it keeps it.

    Keyed by the lodging id, its tax account number unique; a service keyed otherwise
    declares ``lodging_id`` and ``tax_account`` again, and each adds what more it keeps
    (the time of the snapshot, by the name its ``upsert_latest`` compares).
    """

    lodging_id: Mapped[str] = mapped_column(Text, primary_key=True)
    tax_account: Mapped[str] = mapped_column(Text, unique=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    lodging_class: Mapped[str] = mapped_column(Text)
    casino: Mapped[bool] = mapped_column(Boolean, default=False)
    name: Mapped[str] = mapped_column(Text)
    operator_id: Mapped[str] = mapped_column(Text, index=True)
    registered_on: Mapped[date] = mapped_column(Date)
    statuses: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    #: class and casino licence, effective-dated (``taxcore.events.registry.AttributePeriod`` as JSON)
    attributes: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)


def lodging_values(snap: ev.LodgingSnapshot) -> dict[str, Any]:
    """The ``LodgingColumns`` of a snapshot and its two keys, as ``upsert_latest`` values."""
    return {
        "lodging_id": snap.lodging_id,
        "tax_account": snap.tax_account,
        "jurisdiction": snap.jurisdiction,
        "lodging_class": snap.lodging_class,
        "casino": snap.casino,
        "name": snap.name,
        "operator_id": snap.operator_id,
        "registered_on": snap.registered_on,
        "statuses": [s.model_dump(mode="json") for s in snap.statuses],
        "attributes": [a.model_dump(mode="json") for a in snap.attribute_history()],
    }


class AuthorizationColumns:
    """A lodging lets a facilitator file and remit for it between two dates (the registry's
    ``AuthorizationGranted``/``AuthorizationEnded`` snapshot)."""

    authorization_id: Mapped[str] = mapped_column(Text, primary_key=True)
    lodging_id: Mapped[str] = mapped_column(Text, index=True)
    tax_account: Mapped[str] = mapped_column(Text)
    facilitator_id: Mapped[str] = mapped_column(Text, index=True)
    starts_on: Mapped[date] = mapped_column(Date)
    ends_on: Mapped[date | None] = mapped_column(Date)
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))


async def upsert_authorization(
    session: AsyncSession,
    model: type[DeclarativeBase],
    auth: ev.AuthorizationGranted,
    event: CloudEvent,
) -> None:
    """Keep the latest snapshot of an authorization in ``model`` (an ``AuthorizationColumns`` table)."""
    values = {**auth.model_dump(), "as_of": event.time}
    await upsert_latest(session, model, values, key=["authorization_id"], as_of="as_of")


class PaymentColumns:
    """A payment filing received (``PaymentReceived``), as each service that keeps payments
    stores it; each adds how it keeps the designated periods."""

    payment_id: Mapped[str] = mapped_column(Text, primary_key=True)
    tax_account: Mapped[str] = mapped_column(Text, index=True)
    jurisdiction: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Money)
    method: Mapped[str] = mapped_column(Text)
    received_on: Mapped[date] = mapped_column(Date)
    payer_kind: Mapped[str] = mapped_column(Text)
    payer_id: Mapped[str] = mapped_column(Text)


class PartyColumns:
    """An operator or facilitator the registry registered (keyed by kind and id), and its name."""

    kind: Mapped[str] = mapped_column(Text, primary_key=True)  # operator | facilitator
    party_id: Mapped[str] = mapped_column(Text, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))


async def upsert_party(
    session: AsyncSession,
    model: type[DeclarativeBase],
    values: Mapping[str, Any],
    event: CloudEvent,
) -> None:
    """Keep the latest snapshot of a party in ``model`` (a ``PartyColumns`` table); ``values``
    holds ``kind``, ``party_id``, ``name`` and whatever more the table keeps."""
    await upsert_latest(
        session, model, {**values, "as_of": event.time}, key=["kind", "party_id"], as_of="as_of"
    )

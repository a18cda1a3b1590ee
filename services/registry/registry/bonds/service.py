"""Bonds (PR §27) and draws on them (PR §33)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from registry.bonds import repository
from registry.bonds.schemas import BondCreate
from registry.models import Bond, BondDraw, Lodging
from servicekit.errors import Conflict, ValidationFailed
from servicekit.outbox import emit
from servicekit.rows import from_row
from taxcore.events import registry as ev
from taxcore.money import ZERO


def drawn(bond: Bond) -> Decimal:
    return sum((d.amount for d in bond.draws), start=ZERO)


async def _bond_event(session: AsyncSession, lodging: Lodging, bond: Bond) -> None:
    """The bond as it now stands (posted, released or cancelled), for the projections."""
    account = lodging.tax_account
    snapshot = from_row(ev.BondPosted, bond, bond_id=bond.id, lodging_id=lodging.id, tax_account=account)
    await emit(session, snapshot, key=account)


async def post_bond(session: AsyncSession, *, lodging: Lodging, data: BondCreate) -> Bond:
    clash = await repository.active_overlapping(session, lodging.id, data.effective_on, data.expires_on)
    if clash is not None:
        raise Conflict(
            f"overlaps active bond {clash.id} ({clash.effective_on} to {clash.expires_on}); "
            "release it first or start after it expires",
            errors=[{"pointer": "#/body/effective_on", "detail": "overlaps an active bond"}],
        )
    bond = Bond(
        lodging_id=lodging.id,
        kind=data.kind,
        amount=data.amount,
        issuer=data.issuer,
        reference=data.reference,
        effective_on=data.effective_on,
        expires_on=data.expires_on,
        status="active",
        draws=[],
    )
    session.add(bond)
    await session.flush()
    await session.refresh(bond)
    await _bond_event(session, lodging, bond)
    return bond


async def change_status(session: AsyncSession, *, lodging: Lodging, bond: Bond, status: str) -> Bond:
    if bond.status != "active":
        raise Conflict(
            f"the bond is already {bond.status}",
            errors=[{"pointer": "#/body/status", "detail": "bond not active"}],
        )
    bond.status = status
    await session.flush()
    await _bond_event(session, lodging, bond)
    return bond


async def record_draw(
    session: AsyncSession,
    *,
    lodging: Lodging,
    bond: Bond,
    amount: Decimal,
    drawn_on: date,
    reason: str,
    request_event_id: str | None = None,
) -> BondDraw:
    """Record a draw; never more than what remains of the bond."""
    remaining = bond.amount - drawn(bond)
    if amount > remaining:
        raise ValidationFailed.on("amount", f"exceeds what remains of the bond ({remaining})")
    if not (bond.effective_on <= drawn_on):
        raise ValidationFailed.on("drawn_on", "is before the bond took effect")
    draw = BondDraw(
        bond_id=bond.id, amount=amount, drawn_on=drawn_on, reason=reason, request_event_id=request_event_id
    )
    bond.draws.append(draw)
    session.add(draw)
    await session.flush()
    await session.refresh(draw)
    await emit(
        session,
        ev.BondDrawn(
            draw_id=draw.id,
            bond_id=bond.id,
            tax_account=lodging.tax_account,
            amount=amount,
            drawn_on=drawn_on,
            reason=reason,
            request_event_id=request_event_id,
            remaining=remaining - amount,
        ),
        key=lodging.tax_account,
    )
    return draw

"""Event handlers of the bonds domain: assessment asks for bond draws (PR §33)."""

from __future__ import annotations

from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from registry.bonds import repository as bonds
from registry.bonds.service import drawn, record_draw
from registry.lodgings import repository as lodgings
from registry.lodgings.service import bond_draw_citation
from servicekit.consumer import handles
from servicekit.runtime import Runtime
from taxcore.events import CloudEvent
from taxcore.events.assessment import BondDrawRequested


@handles(BondDrawRequested)
async def on_bond_draw_requested(
    session: AsyncSession, req: BondDrawRequested, event: CloudEvent, runtime: Runtime
) -> None:
    """Record the draw on the lodging's bond valid on the request date, up to what remains.

    Idempotent twice over: the consumer inbox, and the unique ``request_event_id``.
    A lodging with no valid bond gets no draw (the deficiency stays on its account).
    """
    if await bonds.draw_requested(session, event.id):
        return
    lodging = await lodgings.by_tax_account(session, req.tax_account)
    if lodging is None:
        raise LookupError(f"bond draw requested for unknown account {req.tax_account}")
    bond = await bonds.active_overlapping(session, lodging.id, req.requested_on, req.requested_on)
    if bond is None:
        return
    amount, on = min(req.amount, bond.amount - drawn(bond)), req.requested_on
    if amount <= 0:
        return
    await record_draw(
        session,
        lodging=lodging,
        bond=bond,
        amount=amount,
        drawn_on=min(req.requested_on, date.max),
        reason=" ".join(
            filter(None, (bond_draw_citation(lodging.jurisdiction, on, law=runtime.law), "notice"))
        )
        + f" {req.notice_id} for {req.period}: {req.reason}",
        request_event_id=event.id,
    )

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, and_, exists, false, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import AccountSequence, Authorization, Lodging, LodgingAttribute, LodgingStatus
from servicekit.auth import Principal


def visible_to(principal: Principal) -> Select[Lodging]:
    """Lodgings a caller may see: agency all; operator its own; facilitator those that authorized it."""
    stmt = select(Lodging)
    if principal.is_agency:
        return stmt
    if principal.role == "operator":
        return stmt.where(Lodging.operator_id == (principal.operator_id or ""))
    if principal.role == "facilitator":
        return stmt.where(
            exists().where(
                and_(
                    Authorization.lodging_id == Lodging.id,
                    Authorization.facilitator_id == (principal.facilitator_id or ""),
                )
            )
        )
    return stmt.where(false())


async def get_visible(session: AsyncSession, principal: Principal, lodging_id: str) -> Lodging | None:
    stmt = visible_to(principal).where(or_(Lodging.id == lodging_id, Lodging.tax_account == lodging_id))
    return (await session.execute(stmt)).scalar_one_or_none()


async def by_tax_account(session: AsyncSession, tax_account: str) -> Lodging | None:
    stmt = select(Lodging).where(Lodging.tax_account == tax_account)
    return (await session.execute(stmt)).scalar_one_or_none()


async def next_serial(session: AsyncSession, jurisdiction: str) -> int:
    """Allocate the next serial of the jurisdiction's tax account numbers (PR §26).

    One statement: the first registration of a jurisdiction inserts its counter, every
    later one increments it. ``INSERT ... ON CONFLICT DO UPDATE`` waits for a concurrent
    transaction that holds the row (or is inserting it) and then increments what that one
    committed, so concurrent registrations get distinct, consecutive serials (a
    ``SELECT ... FOR UPDATE`` locks nothing while the row does not exist yet: two first
    registrations both inserted it and one failed on the primary key, a 409). The
    increment commits or rolls back with the lodging, so no serial is skipped.
    """
    table = AccountSequence.__table__
    first = insert(AccountSequence).values(jurisdiction=jurisdiction, last_serial=1)
    increment = first.on_conflict_do_update(
        index_elements=[table.c.jurisdiction], set_={"last_serial": table.c.last_serial + 1}
    ).returning(table.c.last_serial)
    serial: int = (await session.execute(increment)).scalar_one()
    return serial


async def list_page(
    session: AsyncSession,
    principal: Principal,
    *,
    limit: int,
    after: list[str] | None,
    jurisdiction: str | None,
    lodging_class: str | None,
    operator_id: str | None,
    q: str | None = None,
    tax_accounts: Sequence[str] = (),
) -> Sequence[Lodging]:
    stmt = visible_to(principal)
    if tax_accounts:
        stmt = stmt.where(Lodging.tax_account.in_(list(tax_accounts)))
    if q:
        # a search box: part of the name, the tax account or the municipality, any case
        like = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        stmt = stmt.where(
            or_(
                Lodging.name.ilike(like, escape="\\"),
                Lodging.tax_account.ilike(like, escape="\\"),
                Lodging.municipality.ilike(like, escape="\\"),
            )
        )
    if jurisdiction:
        stmt = stmt.where(Lodging.jurisdiction == jurisdiction)
    if lodging_class:
        stmt = stmt.where(Lodging.lodging_class == lodging_class)
    if operator_id:
        stmt = stmt.where(Lodging.operator_id == operator_id)
    if after:
        stmt = stmt.where(Lodging.tax_account > after[0])
    stmt = stmt.order_by(Lodging.tax_account).limit(limit + 1)
    return (await session.execute(stmt)).scalars().all()


def add_status(session: AsyncSession, lodging: Lodging, status: LodgingStatus) -> None:
    lodging.statuses.append(status)
    session.add(status)


def add_attribute(session: AsyncSession, lodging: Lodging, attribute: LodgingAttribute) -> None:
    lodging.attributes.append(attribute)
    session.add(attribute)

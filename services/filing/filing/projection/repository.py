"""Queries over the registry projection, and who may see or file for a lodging."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, Select, Text, and_, any_, exists, false, literal, or_, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from filing.models import Authorization, Certificate, Lodging, Party
from servicekit.auth import Principal
from taxcore import obligations
from taxcore.events import registry as ev
from taxcore.periods import Period


def _texts(values: Sequence[str]) -> ColumnElement[list[str]]:
    """One array parameter (``= ANY(:p)``) instead of one parameter per value."""
    return literal(sorted(set(values)), ARRAY(Text()))


def by_ref(ref: str) -> ColumnElement[bool]:
    """A lodging named by its tax account number or its id."""
    return or_(Lodging.tax_account == ref, Lodging.lodging_id == ref)


def covers(period: Period) -> ColumnElement[bool]:
    """An authorization in force on at least one day of ``period``."""
    return and_(
        Authorization.starts_on <= period.last_day,
        or_(Authorization.ends_on.is_(None), Authorization.ends_on >= period.first_day),
    )


def visible_lodgings(principal: Principal) -> Select[Lodging]:
    """Agency: every lodging; operator: its own; facilitator: those that ever authorized it."""
    stmt = select(Lodging)
    if principal.is_agency:
        return stmt
    if principal.role == "operator":
        return stmt.where(Lodging.operator_id == (principal.operator_id or ""))
    if principal.role == "facilitator":
        return stmt.where(
            exists().where(
                Authorization.lodging_id == Lodging.lodging_id,
                Authorization.facilitator_id == (principal.facilitator_id or ""),
            )
        )
    return stmt.where(false())


async def get_visible(session: AsyncSession, principal: Principal, ref: str) -> Lodging | None:
    return (await session.execute(visible_lodgings(principal).where(by_ref(ref)))).scalar_one_or_none()


async def get(session: AsyncSession, ref: str) -> Lodging | None:
    return (await session.execute(select(Lodging).where(by_ref(ref)))).scalar_one_or_none()


async def is_authorized(
    session: AsyncSession, *, lodging_id: str, facilitator_id: str, period: Period
) -> bool:
    stmt = select(Authorization.authorization_id).where(
        Authorization.lodging_id == lodging_id,
        Authorization.facilitator_id == facilitator_id,
        covers(period),
    )
    return (await session.execute(stmt.limit(1))).first() is not None


async def lodgings_for_facilitator(
    session: AsyncSession, *, facilitator_id: str, accounts: Sequence[str], period: Period
) -> dict[str, tuple[Lodging, bool]]:
    """Tax account -> (lodging, authorized on ``period``) for the lodgings that ever
    authorized the facilitator, in one query (a schedule's whole document at once)."""
    authorized = (
        exists()
        .where(
            Authorization.lodging_id == Lodging.lodging_id,
            Authorization.facilitator_id == facilitator_id,
            covers(period),
        )
        .label("authorized")
    )
    ever = exists().where(
        Authorization.lodging_id == Lodging.lodging_id, Authorization.facilitator_id == facilitator_id
    )
    stmt = select(Lodging, authorized).where(Lodging.tax_account == any_(_texts(accounts)), ever)
    return {row[0].tax_account: (row[0], bool(row[1])) for row in (await session.execute(stmt)).all()}


async def certificates_valid_in(
    session: AsyncSession, lodging_ids: Sequence[str], period: Period
) -> dict[str, set[tuple[str, str]]]:
    """Lodging id -> {(kind, certificate number)} valid on at least one day of ``period``."""
    if not lodging_ids:
        return {}
    stmt = select(Certificate.lodging_id, Certificate.kind, Certificate.certificate_number).where(
        Certificate.lodging_id == any_(_texts(lodging_ids)),
        Certificate.valid_from <= period.last_day,
        Certificate.valid_to >= period.first_day,
    )
    out: dict[str, set[tuple[str, str]]] = {}
    for lodging_id, kind, number in (await session.execute(stmt)).all():
        out.setdefault(lodging_id, set()).add((kind, number))
    return out


async def in_jurisdiction(session: AsyncSession, jurisdiction: str) -> Sequence[Lodging]:
    stmt = select(Lodging).where(Lodging.jurisdiction == jurisdiction).order_by(Lodging.tax_account)
    return (await session.execute(stmt)).scalars().all()


def statuses_during(lodging: Lodging, period: Period) -> set[str]:
    """Every status the lodging had on some day of ``period`` (taxcore.obligations)."""
    return obligations.statuses_during(
        ev.status_history(lodging), period, registered_on=lodging.registered_on
    )


async def party_name(session: AsyncSession, kind: str, party_id: str) -> str | None:
    """The registered name of an operator or facilitator (None until its event arrives)."""
    stmt = select(Party.name).where(Party.kind == kind, Party.party_id == party_id)
    return (await session.execute(stmt)).scalar_one_or_none()

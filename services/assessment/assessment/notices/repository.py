"""Queries of deficiency notices, their responses and the bond draws asked for them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from sqlalchemy import false, select
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.models import BondDrawRequest, BondDrawView, BondView, LodgingView, Notice, NoticeResponse
from servicekit.auth import Principal


async def notice(session: AsyncSession, notice_id: str) -> Notice | None:
    return await session.get(Notice, notice_id)


async def visible_page(
    session: AsyncSession,
    principal: Principal,
    *,
    tax_account: str | None,
    limit: int,
    after: list[str] | None,
) -> Sequence[Notice]:
    """Notices by issue date the caller may see (agency: all; an operator: its lodgings'), a page past
    ``after``."""
    stmt = select(Notice).order_by(Notice.issued_on, Notice.id).limit(limit + 1)
    if tax_account:
        stmt = stmt.where(Notice.tax_account == tax_account)
    if not principal.is_agency:
        owner = principal.operator_id if principal.role == "operator" else None
        mine = LodgingView.operator_id == owner if owner else false()
        owned = select(LodgingView.tax_account).where(mine)
        stmt = stmt.where(Notice.tax_account.in_(owned))
    if after:
        stmt = stmt.where((Notice.issued_on, Notice.id) > (after[0], after[1]))  # type: ignore[operator]
    return (await session.execute(stmt)).scalars().all()


async def responses_of(session: AsyncSession, notice_id: str) -> list[NoticeResponse]:
    stmt = (
        select(NoticeResponse)
        .where(NoticeResponse.notice_id == notice_id)
        .order_by(NoticeResponse.responded_on, NoticeResponse.created_at)
    )
    return list((await session.execute(stmt)).scalars().all())


async def draw_request(session: AsyncSession, notice_id: str) -> BondDrawRequest | None:
    return await session.get(BondDrawRequest, notice_id)


async def draw_request_of_event(session: AsyncSession, event_id: str) -> BondDrawRequest | None:
    stmt = select(BondDrawRequest).where(BondDrawRequest.event_id == event_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def lapsed_without_request(session: AsyncSession, as_of: date) -> Sequence[Notice]:
    """Notices whose response term ended before ``as_of`` and that have no bond draw request yet."""
    stmt = (
        select(Notice)
        .where(Notice.response_deadline < as_of)
        .where(~select(BondDrawRequest.notice_id).where(BondDrawRequest.notice_id == Notice.id).exists())
        .order_by(Notice.issued_on, Notice.id)
    )
    return (await session.execute(stmt)).scalars().all()


async def active_bonds_on(session: AsyncSession, tax_account: str, on: date) -> Sequence[BondView]:
    stmt = (
        select(BondView)
        .where(
            BondView.tax_account == tax_account,
            BondView.status == "active",
            BondView.effective_on <= on,
            BondView.expires_on >= on,
        )
        .order_by(BondView.effective_on)
    )
    return (await session.execute(stmt)).scalars().all()


async def draws_of(session: AsyncSession, tax_account: str) -> list[BondDrawView]:
    stmt = select(BondDrawView).where(BondDrawView.tax_account == tax_account)
    return list((await session.execute(stmt)).scalars().all())

"""Queries of exemption certificates."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import ExemptionCertificate


async def number_taken(session: AsyncSession, certificate_number: str) -> bool:
    number = ExemptionCertificate.certificate_number
    stmt = select(ExemptionCertificate.id).where(number == certificate_number)
    return (await session.execute(stmt)).first() is not None


async def of_lodging(session: AsyncSession, lodging_id: str) -> Sequence[ExemptionCertificate]:
    stmt = (
        select(ExemptionCertificate)
        .where(ExemptionCertificate.lodging_id == lodging_id)
        .order_by(ExemptionCertificate.valid_from)
    )
    return (await session.execute(stmt)).scalars().all()

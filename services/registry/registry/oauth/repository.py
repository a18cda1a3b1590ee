"""Queries of API clients."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from registry.models import OAuthClient


async def client(session: AsyncSession, client_id: str) -> OAuthClient | None:
    return await session.get(OAuthClient, client_id)


async def name_taken(session: AsyncSession, name: str) -> bool:
    return (await session.execute(select(OAuthClient).where(OAuthClient.name == name))).first() is not None


async def all_clients(session: AsyncSession) -> Sequence[OAuthClient]:
    return (await session.execute(select(OAuthClient).order_by(OAuthClient.created_at))).scalars().all()

"""Consumer handlers of the webhooks domain."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from notify.webhooks import service
from taxcore.events import CloudEvent


async def fan_out_handler(session: AsyncSession, event: CloudEvent) -> None:
    """A consumer handler for an event notify only forwards to its subscribers."""
    await service.fan_out(session, event=event)

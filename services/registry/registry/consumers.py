"""Registry consumers: assessment asks for bond draws (PR §33)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from registry.bonds.handlers import on_bond_draw_requested
from servicekit.consumer import EventConsumer
from servicekit.settings import ServiceSettings
from taxcore.events.assessment import NOTICES


def consumers(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession]
) -> list[EventConsumer]:
    return [
        EventConsumer(
            name="registry-bond-draws",
            bootstrap=settings.kafka_bootstrap,
            topics=[NOTICES],
            sessionmaker=sessionmaker,
            handlers=[on_bond_draw_requested],
        )
    ]

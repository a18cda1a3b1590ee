"""Registry consumers: assessment asks for bond draws (PR §33)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from registry.bonds.handlers import on_bond_draw_requested
from servicekit.consumer import EventConsumer
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings
from taxcore.events.assessment import NOTICES


def consumers(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession], runtime: Runtime
) -> list[EventConsumer]:
    return [
        EventConsumer(
            name="registry-bond-draws",
            bootstrap=settings.kafka_bootstrap,
            topics=[NOTICES],
            sessionmaker=sessionmaker,
            runtime=runtime,
            handlers=[on_bond_draw_requested],
        )
    ]

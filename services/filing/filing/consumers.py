"""Filing consumers: the registry projection (who exists, who may file for whom, and the
names of operators and facilitators)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from filing.projection.handlers import HANDLERS
from servicekit.consumer import EventConsumer
from servicekit.revocations import revocation_consumer
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings
from taxcore.events.registry import LODGINGS, PARTIES

PROJECTION = "filing-registry-projection"


def registry_projection(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession], runtime: Runtime | None = None
) -> EventConsumer:
    return EventConsumer(
        name=PROJECTION,
        bootstrap=settings.kafka_bootstrap,
        topics=[LODGINGS, PARTIES],
        sessionmaker=sessionmaker,
        handlers=HANDLERS,
        runtime=runtime,
    )


def consumers(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession], runtime: Runtime
) -> list[EventConsumer]:
    return [
        registry_projection(settings, sessionmaker, runtime),
        revocation_consumer(settings, sessionmaker, runtime),
    ]

"""Distribution consumes assessment's ``collection.posted`` into the collections ledger."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from distribution.ledger.handlers import on_collection_posted
from servicekit.consumer import PROMPT_FETCH_MAX_WAIT_MS, EventConsumer
from servicekit.revocations import revocation_consumer
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings
from taxcore.events.assessment import COLLECTIONS

#: events per transaction: an account's events in one batch are recomputed once
BATCH_SIZE = 200


def collections_consumer(
    sessionmaker: async_sessionmaker[AsyncSession], *, bootstrap: str, runtime: Runtime | None, **options: Any
) -> EventConsumer:
    """The ``collection.posted`` consumer (``options``: the tests' and benches' attempts, delays)."""
    return EventConsumer(
        name="distribution-collections",
        bootstrap=bootstrap,
        topics=[COLLECTIONS],
        sessionmaker=sessionmaker,
        runtime=runtime,
        batch_size=BATCH_SIZE,
        handlers=[on_collection_posted],
        fetch_max_wait_ms=PROMPT_FETCH_MAX_WAIT_MS,  # on the event-lag goals of issue 12
        parse_contracts=True,  # each record parsed straight into CollectionPosted, in one pass
        **options,
    )


def consumers(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession], runtime: Runtime
) -> list[EventConsumer]:
    return [
        collections_consumer(sessionmaker, bootstrap=settings.kafka_bootstrap, runtime=runtime),
        revocation_consumer(settings, sessionmaker, runtime),
    ]

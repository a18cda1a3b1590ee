"""Distribution consumes assessment's ``collection.posted`` into the collections ledger."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from distribution.ledger.service import record_collection
from servicekit.consumer import EventConsumer
from servicekit.revocations import revocation_consumer
from servicekit.settings import ServiceSettings
from taxcore.events import CloudEvent
from taxcore.events.assessment import COLLECTIONS, CollectionPosted

COLLECTION_POSTED = "roomtax.assessment.collection.posted.v1"


async def on_collection_posted(session: AsyncSession, event: CloudEvent) -> None:
    await record_collection(session, event_id=event.id, posting=CollectionPosted.model_validate(event.data))


#: events per transaction: an account's events in one batch are recomputed once
BATCH_SIZE = 200


def consumers(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession]
) -> list[EventConsumer]:
    return [
        EventConsumer(
            name="distribution-collections",
            bootstrap=settings.kafka_bootstrap,
            topics=[COLLECTIONS],
            sessionmaker=sessionmaker,
            batch_size=BATCH_SIZE,
            handlers={COLLECTION_POSTED: on_collection_posted},
        ),
        revocation_consumer(settings, sessionmaker),
    ]

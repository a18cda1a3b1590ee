"""Event handlers of the ledger: assessment's ``collection.posted`` into the collections ledger."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from distribution.ledger.service import record_collection
from servicekit.consumer import handles
from servicekit.runtime import Runtime
from taxcore.events import CloudEvent
from taxcore.events.assessment import CollectionPosted

COLLECTION_POSTED = CollectionPosted.event_type


@handles(CollectionPosted)
async def on_collection_posted(
    session: AsyncSession, posting: CollectionPosted, event: CloudEvent, runtime: Runtime
) -> None:
    await record_collection(session, event_id=event.id, posting=posting, law=runtime.law)

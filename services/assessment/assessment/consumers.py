"""Assessment consumers: the registry's lodgings and bonds, filing's declarations and payments."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.accounts import handlers as intake
from assessment.accounts.ledger import BalanceCache
from assessment.accounts.repository import attach
from assessment.casework.handlers import on_authorization
from servicekit.consumer import PROMPT_FETCH_MAX_WAIT_MS, AnyHandler, EventConsumer, handler_map
from servicekit.revocations import revocation_consumer
from servicekit.runtime import Runtime
from servicekit.settings import ServiceSettings
from taxcore.events.filing import DECLARATIONS, PAYMENTS
from taxcore.events.registry import LODGINGS

REGISTRY_HANDLERS: dict[str, AnyHandler] = handler_map(
    [intake.on_lodging, intake.on_bond, intake.on_bond_drawn, on_authorization]
)

FILING_HANDLERS: dict[str, AnyHandler] = handler_map(
    [intake.on_declaration, intake.on_payment, intake.on_reversal]
)


#: events per transaction: an account's events in one batch are recomputed once
BATCH_SIZE = 200


def consumers(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession], runtime: Runtime
) -> list[EventConsumer]:
    """The worker's consumers; its sessions share one cache of taxcore balances (the worker owns it)."""
    attach(sessionmaker, BalanceCache(law=runtime.law), runtime)
    return [
        EventConsumer(
            name="assessment-registry",
            bootstrap=settings.kafka_bootstrap,
            topics=[LODGINGS],
            sessionmaker=sessionmaker,
            runtime=runtime,
            batch_size=BATCH_SIZE,
            handlers=REGISTRY_HANDLERS,
        ),
        EventConsumer(
            name="assessment-filing",
            bootstrap=settings.kafka_bootstrap,
            topics=[DECLARATIONS, PAYMENTS],
            sessionmaker=sessionmaker,
            runtime=runtime,
            batch_size=BATCH_SIZE,
            handlers=FILING_HANDLERS,
            prepare=intake.prepare_filing_batch,
            fetch_max_wait_ms=PROMPT_FETCH_MAX_WAIT_MS,  # on the event-lag goals of issue 12
        ),
        revocation_consumer(settings, sessionmaker, runtime),
    ]

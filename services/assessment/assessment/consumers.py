"""Assessment consumers: the registry's lodgings and bonds, filing's declarations and payments."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment import intake
from assessment.casework.intake import on_authorization
from servicekit.consumer import EventConsumer, Handler
from servicekit.revocations import revocation_consumer
from servicekit.settings import ServiceSettings
from taxcore.events.filing import DECLARATIONS, PAYMENTS
from taxcore.events.registry import LODGINGS

REGISTRY_HANDLERS: dict[str, Handler] = {
    "roomtax.registry.lodging.registered.v1": intake.on_lodging,
    "roomtax.registry.lodging.updated.v1": intake.on_lodging,
    "roomtax.registry.lodging.status_changed.v1": intake.on_lodging,
    "roomtax.registry.lodging.attributes_changed.v1": intake.on_lodging,
    "roomtax.registry.bond.posted.v1": intake.on_bond,
    "roomtax.registry.bond.drawn.v1": intake.on_bond_drawn,
    "roomtax.registry.authorization.granted.v1": on_authorization,
    "roomtax.registry.authorization.ended.v1": on_authorization,
}

FILING_HANDLERS: dict[str, Handler] = {
    "roomtax.filing.declaration.filed.v1": intake.on_declaration,
    "roomtax.filing.declaration.amended.v1": intake.on_declaration,
    "roomtax.filing.payment.received.v1": intake.on_payment,
    "roomtax.filing.payment.reversed.v1": intake.on_reversal,
}


#: events per transaction: an account's events in one batch are recomputed once
BATCH_SIZE = 200


def consumers(
    settings: ServiceSettings, sessionmaker: async_sessionmaker[AsyncSession]
) -> list[EventConsumer]:
    return [
        EventConsumer(
            name="assessment-registry",
            bootstrap=settings.kafka_bootstrap,
            topics=[LODGINGS],
            sessionmaker=sessionmaker,
            batch_size=BATCH_SIZE,
            handlers=REGISTRY_HANDLERS,
        ),
        EventConsumer(
            name="assessment-filing",
            bootstrap=settings.kafka_bootstrap,
            topics=[DECLARATIONS, PAYMENTS],
            sessionmaker=sessionmaker,
            batch_size=BATCH_SIZE,
            handlers=FILING_HANDLERS,
        ),
        revocation_consumer(settings, sessionmaker),
    ]

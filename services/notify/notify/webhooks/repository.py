"""Every query over subscriptions, received events, deliveries and their attempts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, any_, func, literal, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from notify.models import Delivery, DeliveryAttempt, ReceivedEvent, Subscription
from notify.webhooks.tenancy import Owner
from servicekit.db import new_id


def _visible(owner: Owner | None) -> list[object]:
    """None: the agency's readers see every subscription; else the owner's own."""
    base: list[object] = [Subscription.deleted_at.is_(None)]
    if owner is not None:
        base += [Subscription.owner_kind == owner.kind, Subscription.owner_id == owner.id]
    return base


async def get_subscription(
    session: AsyncSession, owner: Owner | None, subscription_id: str
) -> Subscription | None:
    stmt = select(Subscription).where(Subscription.id == subscription_id, *_visible(owner))  # type: ignore[arg-type]
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_subscriptions(
    session: AsyncSession, owner: Owner | None, *, limit: int, after: tuple[str, str] | None
) -> Sequence[Subscription]:
    stmt = select(Subscription).where(*_visible(owner))  # type: ignore[arg-type]
    if after is not None:
        stmt = stmt.where(
            or_(
                Subscription.created_at > datetime.fromisoformat(after[0]),
                and_(Subscription.created_at == datetime.fromisoformat(after[0]), Subscription.id > after[1]),
            )
        )
    stmt = stmt.order_by(Subscription.created_at, Subscription.id).limit(limit + 1)
    return (await session.execute(stmt)).scalars().all()


async def all_subscriptions(session: AsyncSession) -> Sequence[Subscription]:
    """Every subscription, deleted ones too, locked (a rotation waits; so does another worker)."""
    stmt = select(Subscription).order_by(Subscription.id).with_for_update()
    return (await session.execute(stmt)).scalars().all()


async def active_for(session: AsyncSession, event_type: str) -> Sequence[Subscription]:
    stmt = select(Subscription).where(
        Subscription.status == "active",
        Subscription.deleted_at.is_(None),
        literal(event_type) == any_(Subscription.event_types),
    )
    return (await session.execute(stmt)).scalars().all()


async def store_event(session: AsyncSession, event: ReceivedEvent) -> None:
    values = {
        "event_id": event.event_id,
        "event_type": event.event_type,
        "tax_account": event.tax_account,
        "body": event.body,
        "awaiting_lodging": event.awaiting_lodging,
    }
    await session.execute(insert(ReceivedEvent).values(**values).on_conflict_do_nothing())


async def awaiting_events(session: AsyncSession, tax_account: str) -> Sequence[ReceivedEvent]:
    stmt = select(ReceivedEvent).where(
        ReceivedEvent.awaiting_lodging.is_(True), ReceivedEvent.tax_account == tax_account
    )
    return (await session.execute(stmt.order_by(ReceivedEvent.received_at))).scalars().all()


async def add_delivery(
    session: AsyncSession, *, subscription_id: str, event_id: str, event_type: str
) -> None:
    stmt = insert(Delivery).values(
        id=new_id(),
        subscription_id=subscription_id,
        event_id=event_id,
        event_type=event_type,
        status="pending",
        attempts=0,
    )
    await session.execute(stmt.on_conflict_do_nothing())


async def deliveries_of(
    session: AsyncSession, subscription_id: str, *, limit: int, after: tuple[str, str] | None
) -> Sequence[Delivery]:
    stmt = select(Delivery).where(Delivery.subscription_id == subscription_id)
    if after is not None:
        at = datetime.fromisoformat(after[0])
        stmt = stmt.where(
            or_(Delivery.created_at < at, and_(Delivery.created_at == at, Delivery.id < after[1]))
        )
    stmt = stmt.order_by(Delivery.created_at.desc(), Delivery.id.desc()).limit(limit + 1)
    return (await session.execute(stmt)).scalars().all()


async def attempts_of(session: AsyncSession, delivery_ids: Sequence[str]) -> dict[str, list[DeliveryAttempt]]:
    if not delivery_ids:
        return {}
    stmt = (
        select(DeliveryAttempt)
        .where(DeliveryAttempt.delivery_id.in_(list(delivery_ids)))
        .order_by(DeliveryAttempt.id)
    )
    out: dict[str, list[DeliveryAttempt]] = {}
    for attempt in (await session.execute(stmt)).scalars().all():
        out.setdefault(attempt.delivery_id, []).append(attempt)
    return out


async def get_delivery(session: AsyncSession, subscription_id: str, delivery_id: str) -> Delivery | None:
    stmt = select(Delivery).where(Delivery.id == delivery_id, Delivery.subscription_id == subscription_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def claim_due(session: AsyncSession, *, limit: int, lease_seconds: float) -> Sequence[Delivery]:
    """Due pending deliveries of active subscriptions, leased to this worker (SKIP LOCKED):
    their next attempt moves ``lease_seconds`` ahead, so a worker that dies mid-send leaves
    them to another after the lease."""
    stmt = (
        select(Delivery)
        .join(Subscription, Subscription.id == Delivery.subscription_id)
        .where(
            Delivery.status == "pending",
            Delivery.next_attempt_at <= func.clock_timestamp(),
            Subscription.status == "active",
            Subscription.deleted_at.is_(None),
        )
        .order_by(Delivery.next_attempt_at)
        .limit(limit)
        .with_for_update(of=Delivery, skip_locked=True)
    )
    rows = (await session.execute(stmt)).scalars().all()
    if rows:
        await session.execute(
            update(Delivery)
            .where(Delivery.id.in_([r.id for r in rows]))
            .values(
                next_attempt_at=func.clock_timestamp() + func.make_interval(0, 0, 0, 0, 0, 0, lease_seconds)
            )
        )
    return rows


async def event_body(session: AsyncSession, event_id: str) -> str:
    return str(
        (
            await session.execute(select(ReceivedEvent.body).where(ReceivedEvent.event_id == event_id))
        ).scalar_one()
    )


async def add_attempt(session: AsyncSession, attempt: DeliveryAttempt) -> None:
    session.add(attempt)
    await session.flush()

"""Webhook use-cases: subscribe, rotate, enable, delete, redeliver; the fan-out of each
received event to the subscriptions allowed to read it; and the outcome of an attempt
(exponential backoff, giving up after the retry window, disabling with a notice)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from notify.mail import service as mail
from notify.models import Delivery, DeliveryAttempt, ReceivedEvent, Subscription
from notify.projection import repository as projection
from notify.settings import NotifySettings
from notify.webhooks import repository, sealing, signing, tenancy
from notify.webhooks.targets import TargetRefused, check_target
from servicekit.auth import Principal
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from taxcore.events import CONTRACTS, CloudEvent
from taxcore.events import filing as fe

REVERSED = fe.PaymentReversed.event_type
WRITERS = frozenset({"agency-admin", "operator", "facilitator"})


def owner_of(principal: Principal) -> tenancy.Owner:
    """The party a caller's subscriptions belong to (the agency's integrations: ``agency``)."""
    if principal.role == "operator" and principal.operator_id:
        return tenancy.Owner("operator", principal.operator_id)
    if principal.role == "facilitator" and principal.facilitator_id:
        return tenancy.Owner("facilitator", principal.facilitator_id)
    if principal.is_agency:
        return tenancy.Owner("agency", "agency")
    raise Forbidden("this token is bound to no party")


def reader_scope(principal: Principal) -> tenancy.Owner | None:
    """Whose subscriptions a caller sees: the agency sees all (None), a party its own."""
    return None if principal.is_agency else owner_of(principal)


def writer_scope(principal: Principal) -> tenancy.Owner | None:
    if principal.role not in WRITERS:
        raise Forbidden(f"role {principal.role!r} may not change webhooks")
    return None if principal.can_write_all else owner_of(principal)


async def subscription(
    session: AsyncSession, *, scope: tenancy.Owner | None, subscription_id: str
) -> Subscription:
    found = await repository.get_subscription(session, scope, subscription_id)
    if found is None:
        raise NotFound(f"no webhook {subscription_id}")
    return found


def check_event_types(event_types: Sequence[str]) -> list[str]:
    for i, event_type in enumerate(event_types):
        if event_type not in tenancy.SUBSCRIBABLE:
            raise ValidationFailed.on(
                f"event_types[{i}]", f"unknown event type {event_type!r} (see GET /v1/webhooks/event-types)"
            )
    return sorted(set(event_types))


async def check_url(url: str, settings: NotifySettings) -> None:
    try:
        await check_target(
            url,
            require_https=settings.webhook_require_https,
            allow_private=settings.webhook_allow_private_targets,
        )
    except TargetRefused as exc:
        raise ValidationFailed.on("url", str(exc)) from exc


async def subscribe(
    session: AsyncSession,
    *,
    principal: Principal,
    url: str,
    event_types: Sequence[str],
    description: str | None,
    settings: NotifySettings,
) -> Subscription:
    if principal.role not in WRITERS:
        raise Forbidden(f"role {principal.role!r} may not change webhooks")
    owner = owner_of(principal)
    types = check_event_types(event_types)
    await check_url(url, settings)
    sub = Subscription(
        owner_kind=owner.kind,
        owner_id=owner.id,
        url=url,
        event_types=types,
        description=description,
        secret=box_of(settings).seal(signing.new_secret()),
        status="active",
        created_by=principal.actor,
    )
    session.add(sub)
    await session.flush()
    await session.refresh(sub)
    return sub


async def rotate_secret(
    session: AsyncSession, *, sub: Subscription, settings: NotifySettings, now: datetime
) -> Subscription:
    hours = settings.webhook_previous_secret_hours
    sub.previous_secret = sub.secret if hours > 0 else None
    sub.previous_secret_expires_at = now + timedelta(hours=hours) if hours > 0 else None
    sub.secret = box_of(settings).seal(signing.new_secret())
    await session.flush()
    return sub


def box_of(settings: NotifySettings) -> sealing.SecretBox:
    return sealing.box_for(settings.webhook_secret_keys)


def signing_secrets(sub: Subscription, *, settings: NotifySettings, now: datetime) -> list[str]:
    """The secrets a delivery is signed with, opened: the current one, and the previous one
    during a rotation's grace period."""
    box = box_of(settings)
    keys = [box.open(sub.secret)]
    if sub.previous_secret and sub.previous_secret_expires_at and sub.previous_secret_expires_at > now:
        keys.append(box.open(sub.previous_secret))
    return keys


async def reseal_secrets(session: AsyncSession, *, settings: NotifySettings) -> int:
    """Seal again with the newest key every stored secret that is not (written before
    sealing, or under a key being retired); how many columns changed."""
    box, changed = box_of(settings), 0
    for sub in await repository.all_subscriptions(session):
        for column in ("secret", "previous_secret"):
            stored = getattr(sub, column)
            fresh = box.resealed(stored) if stored else None
            if fresh is not None:
                setattr(sub, column, fresh)
                changed += 1
    await session.flush()
    return changed


async def enable(session: AsyncSession, *, sub: Subscription) -> Subscription:
    sub.status, sub.disabled_reason, sub.disabled_at = "active", None, None
    await session.flush()
    return sub


async def delete(session: AsyncSession, *, sub: Subscription, now: datetime) -> None:
    sub.deleted_at = now
    await session.flush()


async def redeliver(session: AsyncSession, *, sub: Subscription, delivery_id: str, now: datetime) -> Delivery:
    """Queue one more attempt of a delivery now (a fresh retry window from now)."""
    if sub.status != "active":
        raise Conflict("the webhook is disabled: POST /v1/webhooks/{id}/enable first")
    delivery = await repository.get_delivery(session, sub.id, delivery_id)
    if delivery is None:
        raise NotFound(f"no delivery {delivery_id}")
    delivery.status, delivery.next_attempt_at, delivery.first_attempt_at = "pending", now, None
    await session.flush()
    return delivery


def event_types_catalogue() -> list[tuple[str, str, str]]:
    return [
        (t, CONTRACTS[t][0], rule.value) for t, rule in sorted(tenancy.SUBSCRIBABLE.items()) if t in CONTRACTS
    ]


# --- fan-out ---


def body_of(event: CloudEvent) -> str:
    """The webhook body: the CloudEvent as JSON (without the outbox's internal sequence)."""
    return json.dumps(event.model_dump(mode="json", exclude={"sequence"}), separators=(",", ":"))


async def fan_out(session: AsyncSession, *, event: CloudEvent) -> int:
    """Store a subscribable event and queue it for every subscription allowed to read it;
    returns how many deliveries were queued."""
    if event.type not in tenancy.SUBSCRIBABLE:
        return 0
    tax_account = event.data.get("tax_account")
    account = str(tax_account) if tax_account else None
    lodging = await projection.lodging_by_account(session, account) if account else None
    awaiting = account is not None and lodging is None and tenancy.needs_lodging(event.type)
    stored = ReceivedEvent(
        event_id=event.id,
        event_type=event.type,
        tax_account=account,
        body=body_of(event),
        awaiting_lodging=awaiting,
    )
    await repository.store_event(session, stored)
    data = await _with_payer(session, event)
    return await _queue(
        session, event.id, event.type, data, operator_id=lodging.operator_id if lodging else None
    )


async def _with_payer(session: AsyncSession, event: CloudEvent) -> dict[str, Any]:
    """A reversal names its payment, not the payer: take the payer from the payment."""
    if event.type != REVERSED or "payment_id" not in event.data:
        return event.data
    payment = await projection.payment(session, str(event.data["payment_id"]))
    if payment is None:
        return event.data
    return {**event.data, "payer_kind": payment.payer_kind, "payer_id": payment.payer_id}


async def _queue(
    session: AsyncSession, event_id: str, event_type: str, data: dict[str, object], *, operator_id: str | None
) -> int:
    queued = 0
    for sub in await repository.active_for(session, event_type):
        owner = tenancy.Owner(sub.owner_kind, sub.owner_id)
        if tenancy.may_receive(owner, event_type, data, operator_id=operator_id):
            await repository.add_delivery(
                session, subscription_id=sub.id, event_id=event_id, event_type=event_type
            )
            queued += 1
    return queued


async def release_awaiting(session: AsyncSession, *, tax_account: str, operator_id: str) -> int:
    """The lodging's snapshot arrived: queue the events that waited for it (the unique
    (subscription, event) key makes the agency's and facilitators' second pass a no-op)."""
    queued = 0
    for stored in await repository.awaiting_events(session, tax_account):
        data = await _with_payer(session, CloudEvent.model_validate_json(stored.body))
        queued += await _queue(session, stored.event_id, stored.event_type, data, operator_id=operator_id)
        stored.awaiting_lodging = False
    await session.flush()
    return queued


# --- outcome of an attempt ---


@dataclass(frozen=True, slots=True)
class Outcome:
    status_code: int | None
    error: str | None
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def next_delay(attempts: int, settings: NotifySettings) -> float:
    """Seconds before attempt ``attempts + 1``: base, doubled each time, capped."""
    return float(
        min(settings.webhook_retry_base_seconds * 2 ** (attempts - 1), settings.webhook_retry_max_seconds)
    )


async def record_outcome(
    session: AsyncSession,
    *,
    delivery: Delivery,
    sub: Subscription,
    outcome: Outcome,
    at: datetime,
    settings: NotifySettings,
) -> None:
    manual = delivery.first_attempt_at is None and delivery.attempts > 0
    await repository.add_attempt(
        session,
        DeliveryAttempt(
            delivery_id=delivery.id,
            attempted_at=at,
            status_code=outcome.status_code,
            error=outcome.error,
            duration_ms=outcome.duration_ms,
            manual=manual,
        ),
    )
    delivery.attempts += 1
    delivery.first_attempt_at = delivery.first_attempt_at or at
    delivery.last_status_code, delivery.last_error = outcome.status_code, outcome.error
    if outcome.ok:
        delivery.status, delivery.delivered_at = "delivered", at
    elif (at - delivery.first_attempt_at).total_seconds() >= settings.webhook_give_up_after_seconds:
        delivery.status = "failed"
        await _disable(
            session,
            sub,
            at=at,
            reason=_give_up_reason(delivery, outcome, settings),
            settings=settings,
        )
    else:
        delivery.next_attempt_at = at + timedelta(seconds=next_delay(delivery.attempts, settings))
    await session.flush()


def _give_up_reason(delivery: Delivery, outcome: Outcome, settings: NotifySettings) -> str:
    seconds = settings.webhook_give_up_after_seconds
    span = (
        f"{seconds / 86400:g} days"
        if seconds >= 86400
        else f"{seconds / 3600:g} hours"
        if seconds >= 3600
        else f"{seconds:g} seconds"
    )
    return f"delivery {delivery.id} kept failing for {span}: {outcome.error or outcome.status_code}"


async def _disable(
    session: AsyncSession, sub: Subscription, *, at: datetime, reason: str, settings: NotifySettings
) -> None:
    if sub.status == "disabled":
        return
    sub.status, sub.disabled_reason, sub.disabled_at = "disabled", reason, at
    await mail.webhook_disabled(session, sub=sub, settings=settings, on=at.date())

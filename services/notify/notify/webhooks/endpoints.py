"""``/v1/webhooks``: subscribe endpoints to event types, see their delivery log, redeliver.

Who: an operator's and a facilitator's clients manage their own party's webhooks; the
agency's admin manages the agency's integrations (and may act on any); the agency's
read-only roles see every webhook and change none. Another party's webhook is a 404.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request, Response

from notify.models import Delivery as DeliveryRow
from notify.models import Subscription
from notify.settings import NotifySettings
from notify.webhooks import repository, service
from notify.webhooks.schemas import (
    Attempt,
    Delivery,
    EventType,
    EventTypes,
    SecretRotated,
    Webhook,
    WebhookCreate,
    WebhookCreated,
)
from servicekit.app import router as make_router
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Conflict, Forbidden, NotFound, Unauthorized, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_cursor, paginate
from servicekit.runtime import RuntimeDep

router = make_router(prefix="/v1/webhooks", tags=["webhooks"])
ERRORS = {**Unauthorized.openapi(), **Forbidden.openapi(), **NotFound.openapi()}
WebhookId = Annotated[str, Path(description="the webhook's id", max_length=64)]


def settings_of(request: Request) -> NotifySettings:
    settings: NotifySettings = request.app.state.settings
    return settings


def to_out(sub: Subscription) -> Webhook:
    return Webhook(
        id=sub.id,
        url=sub.url,
        event_types=list(sub.event_types),
        description=sub.description,
        status=sub.status,
        disabled_reason=sub.disabled_reason,
        disabled_at=sub.disabled_at,
        owner_kind=sub.owner_kind,
        owner_id=sub.owner_id,
        created_at=sub.created_at,
        created_by=sub.created_by,
    )


@router.get(
    "/event-types",
    responses=Unauthorized.openapi(),
    summary="What may be subscribed",
)
async def event_types(_: PrincipalDep) -> EventTypes:
    return EventTypes(
        items=[
            EventType(type=t, topic=topic, who_receives=rule)
            for t, topic, rule in service.event_types_catalogue()
        ]
    )


@router.post(
    "",
    status_code=201,
    responses={**ERRORS, **ValidationFailed.openapi()},
    summary="Subscribe an endpoint to event types (the signing secret is shown only in this answer)",
)
async def create_webhook(
    body: WebhookCreate, request: Request, session: SessionDep, principal: PrincipalDep
) -> WebhookCreated:
    sub = await service.subscribe(
        session,
        principal=principal,
        url=body.url,
        event_types=body.event_types,
        description=body.description,
        settings=settings_of(request),
    )
    return WebhookCreated(
        **to_out(sub).model_dump(), secret=service.box_of(settings_of(request)).open(sub.secret)
    )


@router.get("", responses=ERRORS, summary="The caller's webhooks (the agency: all)")
async def list_webhooks(
    session: SessionDep, principal: PrincipalDep, limit: LimitQuery = 50, cursor: CursorQuery = None
) -> Page[Webhook]:
    after = decode_cursor(cursor, arity=2)
    rows = await repository.list_subscriptions(
        session, service.reader_scope(principal), limit=limit, after=(after[0], after[1]) if after else None
    )
    return paginate(rows, limit=limit, key=lambda s: (s.created_at.isoformat(), s.id), to_item=to_out)


@router.get("/{webhook_id}", responses=ERRORS, summary="One webhook")
async def get_webhook(webhook_id: WebhookId, session: SessionDep, principal: PrincipalDep) -> Webhook:
    return to_out(
        await service.subscription(session, scope=service.reader_scope(principal), subscription_id=webhook_id)
    )


@router.delete(
    "/{webhook_id}", status_code=204, responses=ERRORS, summary="Unsubscribe (no further deliveries)"
)
async def delete_webhook(
    webhook_id: WebhookId, session: SessionDep, principal: PrincipalDep, runtime: RuntimeDep
) -> Response:
    sub = await service.subscription(
        session, scope=service.writer_scope(principal), subscription_id=webhook_id
    )
    await service.delete(session, sub=sub, now=runtime.now())
    return Response(status_code=204)


@router.post(
    "/{webhook_id}/rotate-secret",
    responses=ERRORS,
    summary="A new signing secret (shown once); the previous one keeps signing for a grace period",
)
async def rotate_secret(
    webhook_id: WebhookId, request: Request, session: SessionDep, principal: PrincipalDep, runtime: RuntimeDep
) -> SecretRotated:
    sub = await service.subscription(
        session, scope=service.writer_scope(principal), subscription_id=webhook_id
    )
    sub = await service.rotate_secret(session, sub=sub, settings=settings_of(request), now=runtime.now())
    return SecretRotated(
        id=sub.id,
        secret=service.box_of(settings_of(request)).open(sub.secret),
        previous_secret_expires_at=sub.previous_secret_expires_at,
    )


@router.post(
    "/{webhook_id}/enable",
    responses=ERRORS,
    summary="Enable a disabled webhook again",
)
async def enable_webhook(webhook_id: WebhookId, session: SessionDep, principal: PrincipalDep) -> Webhook:
    sub = await service.subscription(
        session, scope=service.writer_scope(principal), subscription_id=webhook_id
    )
    return to_out(await service.enable(session, sub=sub))


def delivery_out(row: DeliveryRow, attempts: list[Attempt]) -> Delivery:
    return Delivery(
        id=row.id,
        event_id=row.event_id,
        event_type=row.event_type,
        status=row.status,
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at if row.status == "pending" else None,
        last_status_code=row.last_status_code,
        last_error=row.last_error,
        delivered_at=row.delivered_at,
        created_at=row.created_at,
        log=attempts,
    )


@router.get(
    "/{webhook_id}/deliveries",
    responses=ERRORS,
    summary="The webhook's delivery log, newest first, each with its attempts",
)
async def list_deliveries(
    webhook_id: WebhookId,
    session: SessionDep,
    principal: PrincipalDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
) -> Page[Delivery]:
    sub = await service.subscription(
        session, scope=service.reader_scope(principal), subscription_id=webhook_id
    )
    after = decode_cursor(cursor, arity=2)
    rows = await repository.deliveries_of(
        session, sub.id, limit=limit, after=(after[0], after[1]) if after else None
    )
    attempts = await repository.attempts_of(session, [r.id for r in rows])

    def item(row: DeliveryRow) -> Delivery:
        log = [
            Attempt(
                attempted_at=a.attempted_at,
                status_code=a.status_code,
                error=a.error,
                duration_ms=a.duration_ms,
                manual=a.manual,
            )
            for a in attempts.get(row.id, [])
        ]
        return delivery_out(row, log)

    return paginate(rows, limit=limit, key=lambda r: (r.created_at.isoformat(), r.id), to_item=item)


@router.post(
    "/{webhook_id}/deliveries/{delivery_id}/redeliver",
    status_code=202,
    responses={**ERRORS, **Conflict.openapi()},
    summary="Send a delivery again now (manual redelivery)",
)
async def redeliver(
    webhook_id: WebhookId,
    delivery_id: Annotated[str, Path(max_length=64)],
    session: SessionDep,
    principal: PrincipalDep,
    runtime: RuntimeDep,
) -> Delivery:
    sub = await service.subscription(
        session, scope=service.writer_scope(principal), subscription_id=webhook_id
    )
    row = await service.redeliver(session, sub=sub, delivery_id=delivery_id, now=runtime.now())
    return delivery_out(row, [])

"""The webhook delivery loop (notify's worker): POST each due delivery, signed.

At least once: a delivery is leased (its next attempt moved ahead) in one transaction,
sent, and its outcome recorded in another; a worker that dies in between leaves it to
be sent again after the lease. 2xx is success; anything else, a timeout or a refused
target is a failure retried with exponential backoff (:func:`service.next_delay`) until
``webhook_give_up_after_seconds`` after the first attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from notify.models import Delivery, Subscription
from notify.settings import NotifySettings
from notify.webhooks import repository, service, signing
from notify.webhooks.targets import TargetRefused, check_target
from servicekit.runtime import Clock, Runtime

log = logging.getLogger("notify.webhooks")
LEASE_SECONDS = 120.0
USER_AGENT = "Roomtax-Webhooks/1"


async def attempt(
    client: httpx.AsyncClient,
    sub: Subscription,
    delivery: Delivery,
    body: str,
    settings: NotifySettings,
    *,
    now: datetime,
) -> service.Outcome:
    started = time.monotonic()
    raw = body.encode()
    try:
        await check_target(
            sub.url,
            require_https=settings.webhook_require_https,
            allow_private=settings.webhook_allow_private_targets,
        )
        headers = {
            "Content-Type": "application/cloudevents+json",
            "User-Agent": USER_AGENT,
            signing.HEADER: signing.sign(service.signing_secrets(sub, settings=settings, now=now), raw),
            "Roomtax-Delivery": delivery.id,
            "Roomtax-Event-Type": delivery.event_type,
        }
        # streamed and never read: only the status matters, and a receiver's body may be large
        async with client.stream("POST", sub.url, content=raw, headers=headers) as response:
            code: int | None = response.status_code
        error = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
    except TargetRefused as exc:
        code, error = None, f"target refused: {exc}"
    except httpx.HTTPError as exc:
        code, error = None, f"{type(exc).__name__}: {exc}"[:2000] or type(exc).__name__
    return service.Outcome(code, error, int((time.monotonic() - started) * 1000))


async def deliver_due(
    sessionmaker: async_sessionmaker[AsyncSession],
    settings: NotifySettings,
    client: httpx.AsyncClient,
    *,
    clock: Clock,
    limit: int = 50,
) -> int:
    """Attempt every due delivery (concurrently, at ``clock``'s instant); returns how many were attempted."""
    async with sessionmaker() as session, session.begin():
        claimed = list(await repository.claim_due(session, limit=limit, lease_seconds=LEASE_SECONDS))
        work = []
        for delivery in claimed:
            sub = await session.get(Subscription, delivery.subscription_id)
            assert sub is not None
            work.append((delivery, sub, await repository.event_body(session, delivery.event_id)))
    now = clock.now()
    outcomes = await asyncio.gather(
        *(attempt(client, sub, d, body, settings, now=now) for d, sub, body in work)
    )
    async with sessionmaker() as session, session.begin():  # the batch's outcomes: one transaction
        for (delivery, _, _), outcome in zip(work, outcomes, strict=True):
            row = await session.get(Delivery, delivery.id, with_for_update=True)
            sub = await session.get(Subscription, delivery.subscription_id, with_for_update=True)
            if row is None or sub is None or row.status != "pending":
                continue
            await service.record_outcome(
                session, delivery=row, sub=sub, outcome=outcome, at=clock.now(), settings=settings
            )
            if not outcome.ok:
                log.info("webhook delivery %s to %s failed: %s", delivery.id, sub.id, outcome.error)
    return len(claimed)


async def run_deliveries(
    settings: NotifySettings,
    sessionmaker: async_sessionmaker[AsyncSession],
    stop: asyncio.Event,
    runtime: Runtime,
) -> None:
    """Worker background task: seal the stored secrets with the newest key, then deliver
    webhooks until ``stop``."""
    try:
        async with sessionmaker() as session, session.begin():
            resealed = await service.reseal_secrets(session, settings=settings)
        if resealed:
            log.info("webhook secrets: %d sealed again with the newest key", resealed)
    except Exception:  # noqa: BLE001 - the database may be down: the next start seals them
        log.exception("webhook secrets: could not seal the stored secrets again")
    async with httpx.AsyncClient(timeout=settings.webhook_timeout_seconds, follow_redirects=False) as client:
        while not stop.is_set():
            attempted = 0
            try:
                attempted = await deliver_due(sessionmaker, settings, client, clock=runtime.clock)
            except Exception:  # noqa: BLE001 - the database may be down: look again later
                log.exception("webhook deliveries: could not look for due deliveries")
            if not attempted:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=settings.webhook_poll_seconds)

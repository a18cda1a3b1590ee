"""The mail sender: claims queued e-mails (SKIP LOCKED, leased) and sends them by SMTP.

Each message carries a ``Message-ID`` derived from its ``message_key``, so a resend
after a crash between the SMTP answer and our commit is recognisably the same message.
A temporary failure is retried with a doubling delay up to ``mail_max_attempts``; the
outcome (``sent``, ``failed`` and the last error) stays on the row.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from datetime import datetime, timedelta
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

import aiosmtplib
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from notify.mail import repository
from notify.models import Email
from notify.settings import NotifySettings
from servicekit.runtime import Clock, Runtime

log = logging.getLogger("notify.mail")
LEASE_SECONDS = 120.0
#: SMTP line endings; headers folded only beyond RFC 5322's 998 characters (a subject
#: folded at 78 reaches some clients with a leading space)
POLICY = policy.SMTP.clone(max_line_length=998)


def message_id(key: str) -> str:
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@roomtax.notify>"


def build(email: Email, settings: NotifySettings, *, now: datetime) -> EmailMessage:
    msg = EmailMessage(policy=POLICY)
    msg["From"] = settings.mail_from
    msg["To"] = email.to_address or ""
    msg["Subject"] = email.subject
    msg["Message-ID"] = message_id(email.message_key)
    msg["Date"] = format_datetime(now)
    msg["X-Roomtax-Kind"] = email.kind
    msg.set_content(email.body)
    msg["Content-Language"] = email.language  # after set_content, which resets Content-*
    return msg


async def deliver(msg: EmailMessage, settings: NotifySettings) -> None:
    """Send as flattened here (aiosmtplib would re-fold the headers at 78 characters)."""
    await aiosmtplib.send(
        msg.as_bytes(policy=POLICY),
        sender=parseaddr(str(msg["From"]))[1],
        recipients=[parseaddr(str(msg["To"]))[1]],
        hostname=settings.smtp_host,
        port=settings.smtp_port,
        username=settings.smtp_username,
        password=settings.smtp_password,
        start_tls=settings.smtp_starttls,
        use_tls=settings.smtp_tls,
        timeout=30,
    )


async def send_due(
    sessionmaker: async_sessionmaker[AsyncSession], settings: NotifySettings, *, clock: Clock, limit: int = 20
) -> int:
    """Send what is due now (``clock``'s instant); returns how many messages were attempted."""
    async with sessionmaker() as session, session.begin():
        claimed = list(await repository.claim_due(session, limit=limit, lease_seconds=LEASE_SECONDS))
    for email in claimed:
        error: str | None = None
        try:
            await deliver(build(email, settings, now=clock.now()), settings)
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:2000]
        async with sessionmaker() as session, session.begin():
            row = await session.get(Email, email.id, with_for_update=True)
            if row is None:
                continue
            row.attempts += 1
            if error is None:
                row.status, row.sent_at, row.last_error = "sent", clock.now(), None
            else:
                row.last_error = error
                if row.attempts >= settings.mail_max_attempts:
                    row.status = "failed"
                else:
                    delay = settings.mail_retry_base_seconds * 2 ** (row.attempts - 1)
                    row.next_attempt_at = clock.now() + timedelta(seconds=delay)
                log.warning("e-mail %s not sent (attempt %d): %s", row.message_key, row.attempts, error)
    return len(claimed)


async def run_sender(
    settings: NotifySettings,
    sessionmaker: async_sessionmaker[AsyncSession],
    stop: asyncio.Event,
    runtime: Runtime,
) -> None:
    """Worker background task: send queued e-mails until ``stop``."""
    while not stop.is_set():
        sent = 0
        try:
            sent = await send_due(sessionmaker, settings, clock=runtime.clock)
        except Exception:  # noqa: BLE001 - the database may be down: look again later
            log.exception("mail sender: could not look for due e-mails")
        if not sent:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=settings.mail_poll_seconds)

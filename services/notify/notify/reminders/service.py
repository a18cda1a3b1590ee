"""Due-date reminders: ``reminder_days_before`` days before a lodging's due date, when
nothing that meets its declaration obligation was filed, one e-mail to its operator.

Once per lodging-period: the message key is ``reminder:<tax account>:<period>`` (a
unique key of ``emails``), so a job that runs twice, or on every day of the window,
queues it once. Never to one that has filed: a lodging-period with a declaration by a
filer kind that meets the obligation (``taxcore.obligations.satisfies_declaration``:
an intermediary's schedule does not) is skipped, and a reminder still queued when the
return arrives is cancelled (:func:`notify.mail.service.cancel_reminder`). Only periods
the lodging must file (``taxcore.obligations.must_file_lodging``) are reminded.

The window is ``[due - N days, due]``: a day the job could not run is caught up the
next day, never after the due date.
"""

from __future__ import annotations

import asyncio
import os
import socket
from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from notify.mail import service as mail
from notify.projection import repository as projection
from notify.settings import NotifySettings
from servicekit.runtime import Runtime
from servicekit.schedule import DailySchedule, scheduled_daily
from taxcore import obligations
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date

JOB = "notify.reminders"


def periods_to_remind(
    jurisdiction: str, on: date, days_before: int, *, law: ParameterTree
) -> list[tuple[Period, date]]:
    """The periods whose due date falls within ``days_before`` days from ``on`` (inclusive)."""
    out = []
    for back in range(1, 4):  # a due date is at most a few months after its period
        period = Period.of(on).add_months(-back)
        due = due_date(jurisdiction, period, parameters=law)
        if 0 <= (due - on).days <= days_before:
            out.append((period, due))
    return out


async def send_reminders(
    session: AsyncSession, *, on: date, settings: NotifySettings, law: ParameterTree
) -> int:
    """Queue the day's reminders; returns how many were queued now."""
    if settings.reminder_days_before <= 0:
        return 0
    queued = 0
    lodgings = await projection.all_lodgings(session)
    windows = {
        j: periods_to_remind(j, on, settings.reminder_days_before, law=law)
        for j in {lo.jurisdiction for lo in lodgings}
    }
    filed = await projection.filed_periods(session, sorted({str(p) for w in windows.values() for p, _ in w}))
    for lodging in lodgings:
        for period, due in windows[lodging.jurisdiction]:
            kinds = filed.get((lodging.tax_account, str(period)), set())
            if any(
                obligations.satisfies_declaration(lodging.jurisdiction, period, k, parameters=law)
                for k in kinds
            ):
                continue
            if not obligations.must_file_lodging(lodging, period, parameters=law):
                continue
            queued += await mail.remind(session, lodging=lodging, period=period, due=due, settings=settings)
    return queued


async def reminders_job(
    settings: NotifySettings,
    sessionmaker: async_sessionmaker[AsyncSession],
    stop: asyncio.Event,
    runtime: Runtime,
) -> None:
    """Worker background task: the reminders once a day at ``reminders_at``, across replicas."""
    engine = sessionmaker.kw["bind"]

    async def work(on: date) -> None:
        async with sessionmaker() as session, session.begin():
            await send_reminders(session, on=on, settings=settings, law=runtime.law)

    await scheduled_daily(
        engine,
        stop,
        job=JOB,
        schedule=DailySchedule(settings.reminders_at, settings.reminders_timezone),
        runner=f"{socket.gethostname()}:{os.getpid()}",
        work=work,
        retry_seconds=settings.reminders_retry_seconds,
        now=runtime.clock.now,
    )

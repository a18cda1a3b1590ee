"""Jobs: estimated assessments of non-filers, lapsed notices, and the daily run of both.

Non-filers (PR §32; VI §54(d) and 33 V.I.C. § 45): for every lodging of the
projection, every monthly period from its registration whose due date is
before ``as_of``, that the lodging must file (``taxcore.obligations.must_file``,
the rule filing's compliance report applies too), and for which no
declaration is known on ``as_of``, gets one estimated assessment computed by
taxcore's ``estimate_assessment`` with the class and casino licence in force in
that period (PR §2(16)) from the lodging's filed history (the
summed taxable bases of its earlier periods). One estimate per period, ever
(a unique key), so running the job again for the same or a later date raises
no second estimate; a declaration filed later supersedes it (the estimate row
stays, the statement shows it as superseded).
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment import law as statutes
from assessment.accounts import repository as accounts_repo
from assessment.accounts.ledger import BalanceCache
from assessment.accounts.repository import BALANCES, attach
from assessment.accounts.service import recompute, refresh_summary
from assessment.models import Estimate
from assessment.notices.service import request_lapsed_draws
from assessment.plans import service as plans
from assessment.settings import AssessmentSettings
from servicekit.outbox import emit
from servicekit.runtime import Runtime
from servicekit.schedule import DailySchedule, scheduled_daily
from taxcore.errors import TaxcoreError
from taxcore.events import registry as registry_events
from taxcore.events.assessment import AccountAssessed
from taxcore.obligations import must_file_lodging
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date
from taxcore.rules.estimate import estimate_assessment


@dataclass(frozen=True, slots=True)
class NonFilersRun:
    """What one run raised (an estimate per lodging-period) and what it could not estimate, why."""

    as_of: date
    raised: list[dict[str, str]]
    skipped: list[dict[str, str]]


async def estimate_non_filers(
    session: AsyncSession, *, as_of: date, industry_cost: Decimal | None, law: ParameterTree
) -> NonFilersRun:
    lodgings = await accounts_repo.all_lodgings(session)
    raised: list[dict[str, str]] = []
    skipped: list[dict[str, str]] = []
    for lodging in lodgings:
        jur = lodging.jurisdiction
        filed = await accounts_repo.filed_periods(session, lodging.tax_account, on=as_of)
        estimated = await accounts_repo.estimated_periods(session, lodging.tax_account)
        period = Period.of(lodging.registered_on)
        changed = False
        while True:
            try:
                due = due_date(jur, period, parameters=law)
            except TaxcoreError as exc:
                skipped.append(
                    {"tax_account": lodging.tax_account, "period": str(period), "reason": exc.message}
                )
                break
            if due >= as_of:
                break
            p = str(period)
            if p not in filed and p not in estimated and must_file_lodging(lodging, period, parameters=law):
                history = await accounts_repo.latest_bases_before(session, lodging.tax_account, p, as_of)
                in_force = registry_events.attributes_in(lodging, period)  # the period's class, not today's
                try:
                    est = estimate_assessment(
                        jurisdiction=jur,
                        lodging_class=in_force.lodging_class,
                        casino=in_force.casino,
                        period=p,
                        history=history,
                        room_count=lodging.room_count,
                        industry_cost=industry_cost,
                        parameters=law,
                    )
                except TaxcoreError as exc:
                    skipped.append({"tax_account": lodging.tax_account, "period": p, "reason": exc.message})
                    period = period.next()
                    continue
                if not changed:
                    await accounts_repo.lock_account(session, lodging.tax_account)
                    changed = True
                row = Estimate(
                    tax_account=lodging.tax_account,
                    period=p,
                    raised_on=as_of,
                    jurisdiction=jur,
                    lodging_class=in_force.lodging_class,
                    taxable_base=est.taxable_base,
                    tax=est.tax,
                    impact_fee=est.impact_fee,
                    method=est.method,
                    trace=est.explain(),
                )
                session.add(row)
                await session.flush()
                await emit(
                    session,
                    AccountAssessed(
                        tax_account=lodging.tax_account,
                        jurisdiction=jur,
                        lodging_class=in_force.lodging_class,
                        period=p,
                        basis="estimate",
                        source_id=row.id,
                        due_date=due,
                        assessed_on=as_of,
                        tax=est.tax,
                        impact_fee=est.impact_fee,
                        reasons=[f"no declaration filed by {as_of.isoformat()}; estimated by {est.method}"],
                        section=statutes.ESTIMATE_SECTION.of(law, jur),
                    ),
                    key=lodging.tax_account,
                )
                raised.append(
                    {
                        "tax_account": lodging.tax_account,
                        "period": p,
                        "estimate_id": row.id,
                        "tax": str(est.tax),
                        "impact_fee": str(est.impact_fee),
                    }
                )
            period = period.next()
        if changed:
            await recompute(session, tax_account=lodging.tax_account)
    return NonFilersRun(as_of=as_of, raised=raised, skipped=skipped)


#: accounts refreshed per transaction by :func:`refresh_all_summaries`: each is refreshed under
#: its lock, held to its transaction's end; one transaction for every account would hold them
#: all (a consumer batch of any of them waiting for the whole job) and take one advisory lock
#: per account (PostgreSQL's shared lock table holds max_locks_per_transaction x connections,
#: 6,400 by default: 100,000 accounts would not fit)
REFRESH_CHUNK = 100


async def refresh_all_summaries(
    sessionmaker: async_sessionmaker[AsyncSession], *, as_of: date, chunk: int = REFRESH_CHUNK
) -> int:
    """Re-materialize every account's summaries as of ``as_of``, each under the account's lock
    (``lock_account``, in sorted order as a consumer batch takes its accounts' locks): a batch's
    recomputation drops the rows of periods no longer known by what it read of them under that
    lock (``upsert_summaries(gone=...)``), so a row written without it between that read and the
    batch's upsert would not be dropped. ``chunk`` accounts per transaction (a refresh is a
    materialization: one stopped half-way leaves each account as it was or refreshed, and the
    next run refreshes all again). The number of accounts refreshed."""
    async with sessionmaker() as session:
        accounts = await accounts_repo.all_tax_accounts(session)
    count = 0
    for start in range(0, len(accounts), chunk):
        async with sessionmaker() as session, session.begin():
            for tax_account in accounts[start : start + chunk]:
                await accounts_repo.lock_account(session, tax_account)
                facts = await accounts_repo.load_facts(session, tax_account)
                if facts is not None:
                    await refresh_summary(session, facts=facts, as_of=as_of)
                    count += 1
    return count


async def run_daily(
    sessionmaker: async_sessionmaker[AsyncSession],
    settings: AssessmentSettings,
    on: date,
    *,
    law: ParameterTree,
) -> None:
    async with sessionmaker() as session, session.begin():
        await estimate_non_filers(session, as_of=on, industry_cost=settings.estimate_industry_cost, law=law)
    async with sessionmaker() as session, session.begin():
        await plans.run(session, as_of=on)  # a plan defaulted today lets its periods' collection resume
    async with sessionmaker() as session, session.begin():
        await request_lapsed_draws(session, as_of=on, law=law)
    await refresh_all_summaries(sessionmaker, as_of=on)


DAILY_JOB = "assessment.daily"


async def daily_jobs(
    settings: AssessmentSettings,
    sessionmaker: async_sessionmaker[AsyncSession],
    stop: asyncio.Event,
    runtime: Runtime,
) -> None:
    """Worker background task: the daily jobs once a day at ``daily_jobs_at``, across replicas.

    Every replica runs this; one of them (the advisory-lock leader) runs the day's jobs,
    recorded in ``job_runs`` (servicekit.schedule). They run as of the scheduled day (of the
    runtime's clock), under the runtime's law.
    """
    engine = sessionmaker.kw["bind"]
    if BALANCES not in sessionmaker.kw.get("info", {}):  # a worker without consumers owns its cache here
        attach(sessionmaker, BalanceCache(law=runtime.law), runtime)

    async def work(on: date) -> None:
        await run_daily(sessionmaker, settings, on, law=runtime.law)

    await scheduled_daily(
        engine,
        stop,
        job=DAILY_JOB,
        schedule=DailySchedule(settings.daily_jobs_at, settings.daily_jobs_timezone),
        runner=f"{socket.gethostname()}:{os.getpid()}",
        work=work,
        retry_seconds=settings.daily_jobs_retry_seconds,
        now=runtime.clock.now,
    )

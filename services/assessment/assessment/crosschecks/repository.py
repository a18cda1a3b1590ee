"""Every query of the cross-checks: the lodging-period's latest versions, peers' ADRs, findings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from sqlalchemy import Numeric, Select, and_, exists, func, select
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.crosschecks.models import CrosscheckFinding, CrosscheckRun
from assessment.models import Liability, LodgingView
from taxcore.periods import Period


def _latest_versions() -> Select[Liability]:
    """Each filing's latest version (one row per filer and lodging-period)."""
    return (
        select(Liability)
        .ext(distinct_on(Liability.filing_id))
        .order_by(Liability.filing_id, Liability.version.desc())
    )


async def latest_filings(session: AsyncSession, tax_account: str, period: str) -> list[Liability]:
    stmt = _latest_versions().where(Liability.tax_account == tax_account, Liability.period == period)
    return list((await session.execute(stmt)).scalars().all())


async def peer_adrs(
    session: AsyncSession, lodging: LodgingView, period: str, lodging_class: str
) -> list[Decimal]:
    """Average daily rates of the other lodgings' operator returns (latest versions) for the period,
    same class in the period and same municipality. Starts from the municipality's lodgings and
    reaches their returns by (tax account, period), so the cost follows the peers, not the period."""
    latest = (
        select(Liability.input)
        .select_from(LodgingView)
        .join(
            Liability,
            and_(
                Liability.tax_account == LodgingView.tax_account,
                Liability.period == period,
                Liability.filer_kind == "operator",
            ),
        )
        .where(
            LodgingView.jurisdiction == lodging.jurisdiction,
            LodgingView.municipality == lodging.municipality,
            LodgingView.tax_account != lodging.tax_account,
            Liability.lodging_class == lodging_class,
        )
        .ext(distinct_on(Liability.filing_id))
        .order_by(Liability.filing_id, Liability.version.desc())
        .subquery()
    )
    nights = latest.c.input["room_nights"].astext.cast(Numeric)
    revenue = latest.c.input["room_revenue"].astext.cast(Numeric)
    stmt = select(func.round(revenue / nights, 2)).where(nights > 0)
    return [Decimal(v) for v in (await session.execute(stmt)).scalars().all()]


async def account_of_declaration(session: AsyncSession, declaration_id: str) -> str | None:
    stmt = select(Liability.tax_account).where(Liability.declaration_id == declaration_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def unchecked_periods(session: AsyncSession, tax_account: str) -> list[tuple[str, date]]:
    """The account's lodging-periods with an operator return that no run checked (it arrived
    before the lodging did), each with the filing date of its last return, oldest first."""
    unchecked = and_(
        Liability.filer_kind == "operator",
        ~exists().where(CrosscheckRun.declaration_id == Liability.declaration_id),
    )
    stmt = (
        select(Liability.period, func.max(Liability.filed_on))
        .where(Liability.tax_account == tax_account)
        .group_by(Liability.period)
        .having(func.bool_or(unchecked))
        .order_by(Liability.period)
    )
    return [(period, filed_on) for period, filed_on in (await session.execute(stmt)).all()]


async def run_exists(session: AsyncSession, declaration_id: str, key: str) -> bool:
    stmt = select(CrosscheckRun.id).where(
        CrosscheckRun.declaration_id == declaration_id, CrosscheckRun.intermediaries_key == key
    )
    return (await session.execute(stmt)).first() is not None


async def latest_run(session: AsyncSession, *, tax_account: str, period: str) -> CrosscheckRun | None:
    """The lodging-period's latest run (None: never checked)."""
    stmt = (
        select(CrosscheckRun)
        .where(CrosscheckRun.tax_account == tax_account, CrosscheckRun.period == period)
        .order_by(CrosscheckRun.seq.desc())
        .limit(1)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def account_runs(session: AsyncSession, tax_account: str) -> list[CrosscheckRun]:
    """Every run on the account's lodging-periods, in write order."""
    stmt = select(CrosscheckRun).where(CrosscheckRun.tax_account == tax_account).order_by(CrosscheckRun.seq)
    return list((await session.execute(stmt)).scalars().all())


async def findings_of_runs(session: AsyncSession, run_ids: list[str]) -> dict[str, list[CrosscheckFinding]]:
    out: dict[str, list[CrosscheckFinding]] = {r: [] for r in run_ids}
    stmt = (
        select(CrosscheckFinding).where(CrosscheckFinding.run_id.in_(run_ids)).order_by(CrosscheckFinding.seq)
    )
    for f in (await session.execute(stmt)).scalars().all():
        out[f.run_id].append(f)
    return out


def _latest_runs(*where: object) -> Select[str]:
    return (
        select(CrosscheckRun.id)
        .where(*where)  # type: ignore[arg-type]
        .ext(distinct_on(CrosscheckRun.tax_account, CrosscheckRun.period))
        .order_by(CrosscheckRun.tax_account, CrosscheckRun.period, CrosscheckRun.seq.desc())
    )


async def current_findings(
    session: AsyncSession,
    *,
    tax_account: str | None = None,
    period: str | None = None,
    jurisdiction: str | None = None,
    rule: str | None = None,
    limit: int = 500,
) -> list[CrosscheckFinding]:
    """The findings of each lodging-period's latest run."""
    where = []
    if tax_account is not None:
        where.append(CrosscheckRun.tax_account == tax_account)
    if period is not None:
        where.append(CrosscheckRun.period == period)
    if jurisdiction is not None:
        where.append(CrosscheckRun.jurisdiction == jurisdiction)
    stmt = select(CrosscheckFinding).where(CrosscheckFinding.run_id.in_(_latest_runs(*where)))
    if rule is not None:
        stmt = stmt.where(CrosscheckFinding.rule == rule)
    stmt = stmt.order_by(CrosscheckFinding.tax_account, CrosscheckFinding.period, CrosscheckFinding.seq)
    return list((await session.execute(stmt.limit(limit))).scalars().all())


async def latest_run_findings(session: AsyncSession, declaration_id: str) -> list[CrosscheckFinding] | None:
    """The findings of the latest run on one declaration version (None: never checked)."""
    stmt = (
        select(CrosscheckRun.id, CrosscheckFinding)
        .outerjoin(CrosscheckFinding, CrosscheckFinding.run_id == CrosscheckRun.id)
        .where(
            CrosscheckRun.id
            == select(CrosscheckRun.id)
            .where(CrosscheckRun.declaration_id == declaration_id)
            .order_by(CrosscheckRun.seq.desc())
            .limit(1)
            .scalar_subquery()
        )
        .order_by(CrosscheckFinding.seq)
    )
    rows = (await session.execute(stmt)).all()
    if not rows:
        return None
    return [f for _, f in rows if f is not None]


async def findings_on(session: AsyncSession, declaration_id: str) -> list[CrosscheckFinding]:
    """The findings recorded on one declaration version by its latest run."""
    return await latest_run_findings(session, declaration_id) or []


@dataclass(frozen=True, slots=True)
class CrosscheckCoverage:
    """TADAT P6-14: lodging-periods with intermediary data, and how many of them were checked."""

    with_intermediary_data: int
    checked: int
    with_findings: int


async def crosscheck_coverage(
    session: AsyncSession, *, jurisdiction: str, first: Period, last: Period
) -> CrosscheckCoverage:
    """For the indicators: lodging-periods in ``first``..``last`` where an intermediary filed, those a
    run compared with the operator's return, and those whose latest run has findings."""
    periods = [str(p) for p in _months(first, last)]
    with_data = (
        select(Liability.tax_account, Liability.period)
        .where(
            Liability.jurisdiction == jurisdiction,
            Liability.period.in_(periods),
            Liability.filer_kind == "facilitator",
        )
        .distinct()
        .subquery()
    )
    checked = (
        select(CrosscheckRun.tax_account, CrosscheckRun.period, CrosscheckRun.findings)
        .where(CrosscheckRun.jurisdiction == jurisdiction, CrosscheckRun.period.in_(periods))
        .where(func.jsonb_array_length(CrosscheckRun.intermediary_declarations) > 0)
        .ext(distinct_on(CrosscheckRun.tax_account, CrosscheckRun.period))
        .order_by(CrosscheckRun.tax_account, CrosscheckRun.period, CrosscheckRun.seq.desc())
        .subquery()
    )
    total = (await session.execute(select(func.count()).select_from(with_data))).scalar_one()
    stmt = select(func.count(), func.count().filter(checked.c.findings > 0)).select_from(
        with_data.join(
            checked,
            and_(checked.c.tax_account == with_data.c.tax_account, checked.c.period == with_data.c.period),
        )
    )
    done, flagged = (await session.execute(stmt)).one()
    return CrosscheckCoverage(
        with_intermediary_data=int(total), checked=int(done), with_findings=int(flagged)
    )


def _months(first: Period, last: Period) -> Sequence[Period]:
    out: list[Period] = []
    p = first
    while p <= last:
        out.append(p)
        p = p.next()
    return out

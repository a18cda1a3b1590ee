"""Every query of the audits: scope overlaps, steps, the filed returns an audit corrects, coverage."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.audits.models import Audit, AuditStep
from assessment.models import Liability, LodgingView
from taxcore.money import ZERO
from taxcore.periods import Period


async def steps_of(session: AsyncSession, audit_ids: list[str]) -> dict[str, list[AuditStep]]:
    if not audit_ids:
        return {}
    stmt = select(AuditStep).where(AuditStep.audit_id.in_(audit_ids)).order_by(AuditStep.seq)
    out: dict[str, list[AuditStep]] = {a: [] for a in audit_ids}
    for step in (await session.execute(stmt)).scalars().all():
        out[step.audit_id].append(step)
    return out


async def audits_of(session: AsyncSession, tax_account: str | None = None, limit: int = 500) -> list[Audit]:
    stmt = select(Audit).order_by(Audit.seq.desc()).limit(limit)
    if tax_account is not None:
        stmt = stmt.where(Audit.tax_account == tax_account)
    return list((await session.execute(stmt)).scalars().all())


async def open_audits(session: AsyncSession, tax_account: str) -> list[Audit]:
    """The lodging's audits without a closing step."""
    closed = select(AuditStep.audit_id).where(AuditStep.kind == "closed")
    stmt = select(Audit).where(Audit.tax_account == tax_account, Audit.id.not_in(closed)).order_by(Audit.seq)
    return list((await session.execute(stmt)).scalars().all())


async def operator_returns(
    session: AsyncSession, tax_account: str, periods: list[str]
) -> dict[str, Liability]:
    """The operator's latest version for each period (what the audit corrects)."""
    stmt = (
        select(Liability)
        .where(
            Liability.tax_account == tax_account,
            Liability.period.in_(periods),
            Liability.filer_kind == "operator",
        )
        .ext(distinct_on(Liability.period))
        .order_by(Liability.period, Liability.filed_on.desc(), Liability.version.desc())
    )
    return {r.period: r for r in (await session.execute(stmt)).scalars().all()}


async def last_closed(session: AsyncSession) -> dict[str, AuditStep]:
    """Each lodging's latest audit closure (for the risk score's time since the last audit)."""
    stmt = (
        select(Audit.tax_account, AuditStep)
        .join(AuditStep, AuditStep.audit_id == Audit.id)
        .where(AuditStep.kind == "closed")
        .ext(distinct_on(Audit.tax_account))
        .order_by(Audit.tax_account, AuditStep.seq.desc())
    )
    return {account: step for account, step in (await session.execute(stmt)).all()}


@dataclass(frozen=True, slots=True)
class AuditCoverage:
    """TADAT P6-13 for a window: lodgings of the jurisdiction, those with an audit opened in the
    window, audits closed in it, and their yield (the additional tax of their notices)."""

    lodgings: int
    audited: int
    closed: int
    assessed: Decimal


async def audit_coverage(
    session: AsyncSession, *, jurisdiction: str, first: Period, last: Period
) -> AuditCoverage:
    """For the indicators (compb): coverage = audited / lodgings; yield = assessed of audits closed in
    ``first``..``last`` (the sum of their notices' additional tax, 0 for an audit closed without one)."""
    lo, hi = first.first_day, last.last_day
    lodgings = (
        await session.execute(
            select(func.count())
            .select_from(LodgingView)
            .where(LodgingView.jurisdiction == jurisdiction, LodgingView.registered_on <= hi)
        )
    ).scalar_one()
    audited = (
        await session.execute(
            select(func.count(func.distinct(Audit.tax_account))).where(
                Audit.jurisdiction == jurisdiction, Audit.opened_on.between(lo, hi)
            )
        )
    ).scalar_one()
    closed_ids = (
        select(AuditStep.audit_id)
        .join(Audit, Audit.id == AuditStep.audit_id)
        .where(
            Audit.jurisdiction == jurisdiction,
            AuditStep.kind == "closed",
            AuditStep.recorded_on.between(lo, hi),
        )
    )
    closed = (await session.execute(select(func.count()).select_from(closed_ids.subquery()))).scalar_one()
    notices = select(AuditStep.data["additional_tax"].astext).where(
        AuditStep.kind == "notice", AuditStep.audit_id.in_(closed_ids)
    )
    assessed = sum((Decimal(v) for v in (await session.execute(notices)).scalars().all()), ZERO)
    return AuditCoverage(lodgings=int(lodgings), audited=int(audited), closed=int(closed), assessed=assessed)

"""Every query of the risk score: per lodging, in one query each (findings, lateness, arrears)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.crosschecks.repository import current_findings
from assessment.models import AccountSummary, Liability, LodgingView
from taxcore.money import ZERO

GAP_RULES = frozenset({"intermediary_shortfall", "declared_zero_with_intermediary_sales"})


@dataclass
class LodgingRisk:
    lodging: LodgingView
    findings: int = 0
    adr: int = 0
    gap: Decimal = ZERO
    flagged_periods: set[str] = field(default_factory=set)
    first_filed: dict[str, date] = field(default_factory=dict)
    arrears: Decimal = ZERO


async def gather(
    session: AsyncSession, *, jurisdiction: str, periods: list[str], as_of: date
) -> list[LodgingRisk]:
    lodgings = (
        await session.execute(
            select(LodgingView).where(
                LodgingView.jurisdiction == jurisdiction, LodgingView.registered_on <= as_of
            )
        )
    ).scalars()
    out = {lodging.tax_account: LodgingRisk(lodging) for lodging in lodgings}
    for period in periods:
        for f in await current_findings(session, jurisdiction=jurisdiction, period=period, limit=1_000_000):
            risk = out.get(f.tax_account)
            if risk is None:
                continue
            risk.flagged_periods.add(f.period)
            if f.rule == "adr_outlier":
                risk.adr += 1
            else:
                risk.findings += 1
            if f.rule in GAP_RULES:
                risk.gap += f.difference
    first_filed = (
        select(Liability.tax_account, Liability.period, func.min(Liability.filed_on))
        .where(
            Liability.jurisdiction == jurisdiction,
            Liability.period.in_(periods),
            Liability.filer_kind == "operator",
            Liability.filed_on <= as_of,
        )
        .group_by(Liability.tax_account, Liability.period)
    )
    for account, period, filed_on in (await session.execute(first_filed)).all():
        if account in out:
            out[account].first_filed[period] = filed_on
    arrears = (
        select(AccountSummary.tax_account, func.sum(AccountSummary.balance))
        .where(
            AccountSummary.jurisdiction == jurisdiction,
            AccountSummary.due_date < as_of,
            AccountSummary.balance > 0,
        )
        .group_by(AccountSummary.tax_account)
    )
    for account, owed in (await session.execute(arrears)).all():
        if account in out:
            out[account].arrears = Decimal(owed)
    return list(out.values())

"""Every query of the accounts domain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import TypeVar

from sqlalchemy import func, select, text, union
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from assessment.accounts.ledger import Facts
from assessment.casework.models import AdjustmentFact, AdjustmentReversal, RefundStep
from assessment.models import (
    CollectionPosting,
    Estimate,
    Liability,
    LodgingView,
    Notice,
    Payment,
    PaymentReversal,
    Refund,
)
from servicekit.auth import Principal

_T = TypeVar("_T")


async def lock_account(session: AsyncSession, tax_account: str) -> None:
    """Serialize every change of one tax account (consumers, jobs and requests alike)."""
    await session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:a))"), {"a": tax_account})


async def liability_recorded(session: AsyncSession, declaration_id: str) -> bool:
    """Whether the declaration version's liability is already on the account."""
    stmt = select(Liability.id).where(Liability.declaration_id == declaration_id)
    return (await session.execute(stmt)).first() is not None


_FACT_TABLES = (
    Liability,
    Estimate,
    Payment,
    PaymentReversal,
    Notice,
    Refund,
    AdjustmentFact,
    AdjustmentReversal,
    RefundStep,
)
_HAS_FACTS = text(
    "SELECT "
    + ", ".join(f"EXISTS (SELECT 1 FROM {m.__tablename__} WHERE tax_account = :a)" for m in _FACT_TABLES)
)


async def load_facts(session: AsyncSession, tax_account: str, *, traces: bool = True) -> Facts | None:
    """The account's facts; ``traces=False`` leaves each liability's ``trace`` (kilobytes of
    JSON per row, read only by an explained statement) in the database."""
    lodging = await session.get(LodgingView, tax_account)
    # One round trip tells which fact tables hold rows of the account (a fresh
    # account has one or two): the others are not queried.
    has = (await session.execute(_HAS_FACTS, {"a": tax_account})).one()
    present: dict[type[object], bool] = dict(zip(_FACT_TABLES, has, strict=True))

    async def rows(model: type[_T]) -> list[_T]:
        if not present[model]:
            return []
        stmt = select(model).where(model.tax_account == tax_account)  # type: ignore[attr-defined]
        if model is Liability and not traces:
            stmt = stmt.options(defer(Liability.trace, raiseload=True))
        return list((await session.execute(stmt)).scalars().all())

    liabilities = await rows(Liability)
    estimates = await rows(Estimate)
    payments = await rows(Payment)
    reversals = await rows(PaymentReversal)
    notices = await rows(Notice)
    refunds = await rows(Refund)
    adjustments = await rows(AdjustmentFact)
    adjustment_reversals = await rows(AdjustmentReversal)
    refund_steps = await rows(RefundStep)
    known: list[str] = [lodging.jurisdiction] if lodging is not None else []
    known += [x.jurisdiction for x in liabilities] + [x.jurisdiction for x in estimates]
    known += [x.jurisdiction for x in payments] + [x.jurisdiction for x in notices]
    jurisdiction = known[0] if known else None
    if jurisdiction is None:
        return None
    return Facts(
        tax_account=tax_account,
        jurisdiction=jurisdiction,
        lodging=lodging,
        liabilities=liabilities,
        estimates=estimates,
        payments=payments,
        reversals=reversals,
        notices=notices,
        refunds=refunds,
        adjustments=adjustments,
        adjustment_reversals=adjustment_reversals,
        refund_steps=refund_steps,
    )


def visible(principal: Principal, lodging: LodgingView | None) -> bool:
    """Agency roles see every account; an operator its own lodgings'; a facilitator none.

    A facilitator remits for a lodging but is not the taxpayer: the account's
    penalties, notices and credits are the operator's business (the facilitator
    sees what it filed and paid at the filing service).
    """
    if principal.is_agency:
        return True
    if principal.role == "operator" and lodging is not None:
        return lodging.operator_id == (principal.operator_id or "")
    return False


async def posted_totals(
    session: AsyncSession, tax_account: str
) -> dict[tuple[str, str, str], tuple[Decimal, int, str]]:
    stmt = (
        select(
            CollectionPosting.payment_id,
            CollectionPosting.period,
            CollectionPosting.component,
            func.sum(CollectionPosting.amount),
            func.count(),
            func.max(CollectionPosting.section),
        )
        .where(CollectionPosting.tax_account == tax_account)
        .group_by(CollectionPosting.payment_id, CollectionPosting.period, CollectionPosting.component)
    )
    return {
        (r[0], r[1], r[2]): (Decimal(r[3]), int(r[4]), str(r[5])) for r in (await session.execute(stmt)).all()
    }


_SUMMARY_COLUMNS: dict[str, str] = {
    "period": "text",
    "jurisdiction": "text",
    "lodging_class": "text",
    "operator_id": "text",
    "due_date": "date",
    "basis": "text",
    "principal": "numeric",
    "total_assessed": "numeric",
    "total_paid": "numeric",
    "balance": "numeric",
    "as_of": "date",
}
# One statement, the same text whatever the number of periods (prepared once per
# connection): drop the periods no longer known, upsert the others. The two parts
# touch disjoint rows, so running them in one statement's snapshot is safe.
_UPSERT_SUMMARIES = text(
    "WITH gone AS (DELETE FROM account_summaries WHERE tax_account = :a "
    "AND NOT (period = ANY (CAST(:period AS text[])))) "
    f"INSERT INTO account_summaries (tax_account, {', '.join(_SUMMARY_COLUMNS)}) "
    f"SELECT :a, {', '.join(f'u.{c}' for c in _SUMMARY_COLUMNS)} FROM unnest("
    + ", ".join(f"CAST(:{c} AS {t}[])" for c, t in _SUMMARY_COLUMNS.items())
    + f") AS u({', '.join(_SUMMARY_COLUMNS)}) "
    "ON CONFLICT (tax_account, period) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _SUMMARY_COLUMNS if c != "period")
    + ", refreshed_at = now()"
)


async def upsert_summaries(
    session: AsyncSession, rows: Sequence[dict[str, object]], tax_account: str
) -> None:
    """Replace the account's per-period summaries by ``rows`` (one round trip)."""
    assert all(r["tax_account"] == tax_account for r in rows)
    params: dict[str, object] = {c: [r[c] for r in rows] for c in _SUMMARY_COLUMNS}
    await session.execute(_UPSERT_SUMMARIES, {"a": tax_account, **params})


async def all_lodgings(session: AsyncSession) -> Sequence[LodgingView]:
    return (await session.execute(select(LodgingView).order_by(LodgingView.tax_account))).scalars().all()


async def filed_periods(session: AsyncSession, tax_account: str, *, on: date) -> set[str]:
    """Periods of the account with a declaration filed on or before ``on``."""
    stmt = select(Liability.period).where(Liability.tax_account == tax_account, Liability.filed_on <= on)
    return {r[0] for r in (await session.execute(stmt)).all()}


async def estimated_periods(session: AsyncSession, tax_account: str) -> set[str]:
    """Periods of the account that already have an estimated assessment."""
    stmt = select(Estimate.period).where(Estimate.tax_account == tax_account)
    return {r[0] for r in (await session.execute(stmt)).all()}


async def all_tax_accounts(session: AsyncSession) -> list[str]:
    stmt = union(select(LodgingView.tax_account), select(Liability.tax_account), select(Payment.tax_account))
    return sorted(str(r[0]) for r in (await session.execute(stmt)).all())


@dataclass(frozen=True, slots=True)
class PeriodBase:
    """What a filed period declared, summed over its filers: the estimate's history entry."""

    taxable_base: Decimal
    impact_fee: Decimal


async def latest_bases_before(
    session: AsyncSession, tax_account: str, period: str, as_of: date
) -> list[PeriodBase]:
    """Taxable base and impact fee of each earlier period (latest version per filer, summed),
    oldest first: the VI estimate takes the highest fee of the history (taxcore.rules.estimate)."""
    rows = (
        (
            await session.execute(
                select(Liability).where(
                    Liability.tax_account == tax_account,
                    Liability.period < period,
                    Liability.filed_on <= as_of,
                )
            )
        )
        .scalars()
        .all()
    )
    latest: dict[tuple[str, str], Liability] = {}
    for row in rows:
        key = (row.period, row.filing_id)
        if key not in latest or row.version > latest[key].version:
            latest[key] = row
    bases: dict[str, tuple[Decimal, Decimal]] = {}
    for (p, _), row in latest.items():
        base, fee = bases.get(p, (Decimal(0), Decimal(0)))
        bases[p] = (base + row.taxable_base, fee + row.impact_fee)
    return [PeriodBase(*bases[p]) for p in sorted(bases)]


async def latest_period_amounts(
    session: AsyncSession, tax_account: str, period: str
) -> list[tuple[Decimal, Decimal]]:
    """(tax, impact fee) of the latest version of each filing of the account's period."""
    stmt = (
        select(Liability.tax, Liability.impact_fee)
        .where(Liability.tax_account == tax_account, Liability.period == period)
        .ext(distinct_on(Liability.filing_id))
        .order_by(Liability.filing_id, Liability.version.desc())
    )
    return [(r[0], r[1]) for r in (await session.execute(stmt)).all()]

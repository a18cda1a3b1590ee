"""Indicator queries: SQL aggregates over assessment's own records (one pass each)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

PRINCIPAL = "('tax', 'impact_fee')"


async def filing_lodgings(session: AsyncSession, jurisdiction: str) -> list[Any]:
    """What decides who must file: each lodging's registration date and status history."""
    sql = "SELECT tax_account, registered_on, statuses FROM lodgings WHERE jurisdiction = :j"
    return list(await session.execute(text(sql), {"j": jurisdiction}))


async def filed_on_time(
    session: AsyncSession, *, jurisdiction: str, due: dict[str, date], kinds: list[str], as_of: date
) -> list[Any]:
    """Per lodging, the periods of ``due`` whose first filing by one of ``kinds`` known on
    ``as_of`` was on or before the period's due date."""
    sql = """
    SELECT l.tax_account, array_agg(l.period) AS periods FROM (
      SELECT tax_account, period, min(filed_on) AS filed_on FROM liabilities
      WHERE jurisdiction = :j AND period = ANY(:periods) AND filer_kind = ANY(:kinds) AND filed_on <= :d
      GROUP BY tax_account, period
    ) l JOIN unnest(CAST(:periods AS text[]), CAST(:dues AS date[])) AS d(period, due) ON d.period = l.period
    WHERE l.filed_on <= d.due
    GROUP BY l.tax_account
    """
    params = {"j": jurisdiction, "periods": list(due), "dues": list(due.values()), "kinds": kinds, "d": as_of}
    return list(await session.execute(text(sql), params))


async def payment_timeliness(
    session: AsyncSession, *, jurisdiction: str, first: str, last: str, as_of: date
) -> dict[str, Any]:
    """Lodging-periods of the window due before ``as_of`` with principal assessed, and what of
    their principal was collected by the due date."""
    sql = f"""
    WITH due AS (
      SELECT tax_account, period, due_date, principal FROM account_summaries
      WHERE jurisdiction = :j AND period BETWEEN :f AND :t AND due_date < :d AND principal > 0
    ), paid AS (
      SELECT p.tax_account, p.period, sum(p.amount) AS amount
      FROM collection_postings p JOIN due ON due.tax_account = p.tax_account AND due.period = p.period
      WHERE p.component IN {PRINCIPAL} AND p.collected_on <= due.due_date
      GROUP BY p.tax_account, p.period
    )
    SELECT count(*) AS expected,
           count(*) FILTER (WHERE coalesce(paid.amount, 0) >= due.principal) AS on_time,
           coalesce(sum(due.principal), 0) AS due_value,
           coalesce(sum(least(greatest(coalesce(paid.amount, 0), 0), due.principal)), 0) AS on_time_value
    FROM due LEFT JOIN paid ON paid.tax_account = due.tax_account AND paid.period = due.period
    """
    row = (await session.execute(text(sql), {"j": jurisdiction, "f": first, "t": last, "d": as_of})).one()
    return dict(row._mapping)


async def arrears(
    session: AsyncSession, *, jurisdiction: str, end: date, year_ago: date
) -> dict[str, Decimal]:
    """Unpaid principal on ``end`` of the periods due before it (written-off periods left out),
    the part due before ``year_ago``, and the collections of the year ending on ``end``."""
    sql = f"""
    WITH owed AS (
      SELECT s.tax_account, s.period, s.due_date, s.principal FROM account_summaries s
      WHERE s.jurisdiction = :j AND s.due_date < :e AND s.principal > 0
        AND NOT EXISTS (
          SELECT 1 FROM adjustment_facts f
          WHERE f.tax_account = s.tax_account AND f.period = s.period AND f.kind = 'write_off'
            AND f.effective_on <= :e
            AND NOT EXISTS (
              SELECT 1 FROM adjustment_reversals r WHERE r.fact_id = f.id AND r.reversed_on <= :e))
    ), paid AS (
      SELECT p.tax_account, p.period, sum(p.amount) AS amount
      FROM collection_postings p JOIN owed ON owed.tax_account = p.tax_account AND owed.period = p.period
      WHERE p.component IN {PRINCIPAL} AND p.collected_on <= :e
      GROUP BY p.tax_account, p.period
    ), unpaid AS (
      SELECT owed.due_date, owed.principal - coalesce(paid.amount, 0) AS amount
      FROM owed LEFT JOIN paid ON paid.tax_account = owed.tax_account AND paid.period = owed.period
    )
    SELECT coalesce(sum(amount) FILTER (WHERE amount > 0), 0) AS stock,
           coalesce(sum(amount) FILTER (WHERE amount > 0 AND due_date < :y), 0) AS older,
           (SELECT coalesce(sum(p.amount), 0) FROM collection_postings p
              JOIN lodgings l ON l.tax_account = p.tax_account
             WHERE l.jurisdiction = :j AND p.collected_on > :y AND p.collected_on <= :e) AS collections
    FROM unpaid
    """
    row = (await session.execute(text(sql), {"j": jurisdiction, "e": end, "y": year_ago})).one()
    return {k: Decimal(v) for k, v in row._mapping.items()}


async def cases(session: AsyncSession, *, jurisdiction: str) -> list[Any]:
    """Every dispute case of the jurisdiction: opened on, first decided on (None: undecided)."""
    sql = """
    SELECT c.id, c.opened_on, min(s.on) FILTER (WHERE s.step = 'decided') AS decided_on
    FROM cases c LEFT JOIN case_steps s ON s.case_id = c.id
    WHERE c.jurisdiction = :j
    GROUP BY c.id, c.opened_on
    """
    return list(await session.execute(text(sql), {"j": jurisdiction}))


async def refunds_paid(session: AsyncSession, *, jurisdiction: str, start: date, end: date) -> list[Any]:
    """Refunds of the jurisdiction's lodgings paid out between ``start`` and ``end``."""
    sql = """
    SELECT r.id, r.requested_on, s.on AS paid_on
    FROM refunds r
    JOIN refund_steps s ON s.refund_id = r.id AND s.step = 'paid'
    JOIN lodgings l ON l.tax_account = r.tax_account
    WHERE l.jurisdiction = :j AND s.on BETWEEN :s AND :e
    """
    return list(await session.execute(text(sql), {"j": jurisdiction, "s": start, "e": end}))

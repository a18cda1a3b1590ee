"""Dashboard queries: SQL over the materialized account summaries and the postings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

BUCKETS = ("current", "days_1_30", "days_31_90", "days_91_180", "days_181_365", "over_365")
#: the amounts of an aging group: its buckets and their total
AGED = (*BUCKETS, "total")


@dataclass(frozen=True, slots=True)
class AgingGroup:
    """The positive balances of one jurisdiction and lodging class, by days past due."""

    jurisdiction: str
    lodging_class: str
    current: Decimal
    days_1_30: Decimal
    days_31_90: Decimal
    days_91_180: Decimal
    days_181_365: Decimal
    over_365: Decimal
    total: Decimal
    accounts: int


@dataclass(frozen=True, slots=True)
class DelinquentAccount:
    """An account with balances past due: their sum, how many periods, how late the oldest."""

    tax_account: str
    jurisdiction: str
    lodging_class: str
    operator_id: str | None
    balance: Decimal
    periods: int
    oldest_due_date: date
    max_days_past_due: int


@dataclass(frozen=True, slots=True)
class MonthTotals:
    """Assessed (by tax period) and collected (by month received) in one month."""

    month: str
    assessed: Decimal
    collected: Decimal


AGING_SQL = """
SELECT jurisdiction, lodging_class,
  coalesce(sum(balance) FILTER (WHERE :d - due_date <= 0), 0) AS current,
  coalesce(sum(balance) FILTER (WHERE :d - due_date BETWEEN 1 AND 30), 0) AS days_1_30,
  coalesce(sum(balance) FILTER (WHERE :d - due_date BETWEEN 31 AND 90), 0) AS days_31_90,
  coalesce(sum(balance) FILTER (WHERE :d - due_date BETWEEN 91 AND 180), 0) AS days_91_180,
  coalesce(sum(balance) FILTER (WHERE :d - due_date BETWEEN 181 AND 365), 0) AS days_181_365,
  coalesce(sum(balance) FILTER (WHERE :d - due_date > 365), 0) AS over_365,
  sum(balance) AS total,
  count(*) AS accounts
FROM account_summaries
WHERE balance > 0 {where}
GROUP BY jurisdiction, lodging_class
ORDER BY jurisdiction, lodging_class
"""


async def aging(
    session: AsyncSession, *, as_of: date, jurisdiction: str | None, lodging_class: str | None
) -> list[AgingGroup]:
    where = ""
    params: dict[str, Any] = {"d": as_of}
    if jurisdiction:
        where += " AND jurisdiction = :j"
        params["j"] = jurisdiction
    if lodging_class:
        where += " AND lodging_class = :c"
        params["c"] = lodging_class
    rows = await session.execute(text(AGING_SQL.format(where=where)), params)
    return [AgingGroup(**r._mapping) for r in rows]


async def delinquents(
    session: AsyncSession, *, as_of: date, jurisdiction: str | None, limit: int, after: list[str] | None
) -> list[DelinquentAccount]:
    params: dict[str, Any] = {"d": as_of, "n": limit + 1}
    where = ""
    if jurisdiction:
        where = " AND jurisdiction = :j"
        params["j"] = jurisdiction
    having = ""
    if after:
        having = (
            "HAVING (sum(balance) < CAST(:ab AS numeric) "
            "OR (sum(balance) = CAST(:ab AS numeric) AND tax_account > :aa))"
        )
        params["ab"], params["aa"] = after
    sql = f"""
    SELECT tax_account, min(jurisdiction) AS jurisdiction, min(lodging_class) AS lodging_class,
           min(operator_id) AS operator_id, sum(balance) AS balance, count(*) AS periods,
           min(due_date) AS oldest_due_date, max(:d - due_date) AS max_days_past_due
    FROM account_summaries
    WHERE balance > 0 AND due_date < :d {where}
    GROUP BY tax_account {having}
    ORDER BY sum(balance) DESC, tax_account
    LIMIT :n
    """
    return [DelinquentAccount(**r._mapping) for r in await session.execute(text(sql), params)]


async def monthly(
    session: AsyncSession, *, start: str, end: str, jurisdiction: str | None
) -> list[MonthTotals]:
    params: dict[str, Any] = {"s": start, "e": end}
    where = " AND jurisdiction = :j" if jurisdiction else ""
    if jurisdiction:
        params["j"] = jurisdiction
    assessed = await session.execute(
        text(
            f"SELECT period AS month, sum(total_assessed) AS amount FROM account_summaries "
            f"WHERE period BETWEEN :s AND :e {where} GROUP BY period"
        ),
        params,
    )
    posted_where = ""
    if jurisdiction:
        posted_where = (
            " AND tax_account IN (SELECT tax_account FROM account_summaries WHERE jurisdiction = :j)"
        )
    collected = await session.execute(
        text(
            "SELECT to_char(collected_on, 'YYYY-MM') AS month, sum(amount) AS amount "
            "FROM collection_postings "
            f"WHERE to_char(collected_on, 'YYYY-MM') BETWEEN :s AND :e {posted_where} GROUP BY 1"
        ),
        params,
    )
    months: dict[str, dict[str, Decimal]] = {}
    for r in assessed:
        months.setdefault(r.month, {"assessed": Decimal(0), "collected": Decimal(0)})["assessed"] = r.amount
    for r in collected:
        months.setdefault(r.month, {"assessed": Decimal(0), "collected": Decimal(0)})["collected"] = r.amount
    return [MonthTotals(month=m, **v) for m, v in sorted(months.items())]

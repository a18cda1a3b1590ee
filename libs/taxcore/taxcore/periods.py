"""Tax periods (calendar months), due dates and fiscal years.

A tax period is a calendar month: PR §28(A) ("the period between the first and
last day of each month"), VI §54(f) ("the calendar month concerned"). Due dates
and fiscal years come from parameters (``periods.*``), so a new jurisdiction is
data, not code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from functools import lru_cache

from taxcore.errors import InvalidInput, ParameterError
from taxcore.parameters import ParameterTree, default_tree

__all__ = [
    "Period",
    "due_date",
    "fiscal_year",
    "fiscal_year_bounds",
    "fiscal_year_months",
    "filing_opens_on",
    "is_business_day",
]

_PERIOD_RE = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True, order=True, slots=True)
class Period:
    """A monthly tax period, written ``YYYY-MM``."""

    year: int
    month: int

    def __post_init__(self) -> None:
        if not 1 <= self.month <= 12 or not 1 <= self.year <= 9999:
            raise InvalidInput("period", f"not a valid month: {self.year:04d}-{self.month:02d}")

    @classmethod
    def parse(cls, text: str) -> Period:
        """Parse ``"2026-10"``; anything else raises ``InvalidInput(field="period")``."""
        m = _PERIOD_RE.match(text) if isinstance(text, str) else None
        if m is None:
            raise InvalidInput("period", f"expected YYYY-MM, got {text!r}")
        return cls(int(m.group(1)), int(m.group(2)))

    @classmethod
    def of(cls, d: date) -> Period:
        """The period that contains day ``d``."""
        return cls(d.year, d.month)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"

    @property
    def first_day(self) -> date:
        return date(self.year, self.month, 1)

    @property
    def last_day(self) -> date:
        return _last_day(self.year, self.month)

    @property
    def days(self) -> int:
        """Number of days in the month (29 for a leap February)."""
        return self.last_day.day

    def next(self) -> Period:
        return Period(self.year + 1, 1) if self.month == 12 else Period(self.year, self.month + 1)

    def prev(self) -> Period:
        return Period(self.year - 1, 12) if self.month == 1 else Period(self.year, self.month - 1)

    def add_months(self, n: int) -> Period:
        index = self.year * 12 + (self.month - 1) + n
        return Period(index // 12, index % 12 + 1)

    def months_until(self, other: Period) -> int:
        """``other - self`` in months (negative when ``other`` is earlier)."""
        return (other.year * 12 + other.month) - (self.year * 12 + self.month)


@lru_cache(maxsize=4096)
def _last_day(year: int, month: int) -> date:
    """The last day of a month (memoized: read for every return and schedule row)."""
    following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return following - timedelta(days=1)


def filing_opens_on(period: Period, *, closed_from: date | None = None) -> date:
    """The first day a return for ``period`` may be filed.

    A return declares what was collected "during the period between the first and
    last day of each month" (PR §28(A)) or for "the calendar month concerned" after
    "the last day of the calendar month" (VI §54(f)): its figures exist only once the
    month is over, so it is filed from the day after the period's last day. A lodging
    that closes during the period (closed from ``closed_from`` to the period's end)
    collects nothing more and may file that period from its closing date.
    """
    opens = period.last_day + timedelta(days=1)
    if closed_from is not None and period.first_day <= closed_from <= period.last_day:
        return closed_from
    return opens


def _tree(parameters: ParameterTree | None) -> ParameterTree:
    return parameters or default_tree()


def _int(tree: ParameterTree, jurisdiction: str, path: str, on: date) -> int:
    v = tree.value(jurisdiction, path, on)
    if isinstance(v, bool) or not isinstance(v, Decimal | int) or v != int(v):
        raise ParameterError(path, f"{jurisdiction} {path} must be a whole number, got {v!r}")
    return int(v)


def is_business_day(jurisdiction: str, d: date, *, parameters: ParameterTree | None = None) -> bool:
    """Not a Saturday, Sunday, or a holiday listed in ``periods.holidays``."""
    if d.weekday() >= 5:
        return False
    holidays = _tree(parameters).value(jurisdiction, "periods.holidays", d)
    if not isinstance(holidays, list):
        raise ParameterError("periods.holidays", f"{jurisdiction} periods.holidays must be a list")
    return d.isoformat() not in holidays


def due_date(jurisdiction: str, period: Period, *, parameters: ParameterTree | None = None) -> date:
    """The day the return and the payment for ``period`` are due.

    ``periods.due_rule`` says how: ``day_of_following_month`` (PR §28(A)-(B): "no
    later than the tenth (10th) day of the month following") or
    ``days_after_period_end`` (VI §54(f): "within thirty (30) calendar days
    following the last day of the calendar month"), with ``periods.due_offset``
    the day or number of days. ``periods.due_roll_forward`` (provisional in both
    jurisdictions, default false) moves a due date that falls on a weekend or a
    listed holiday to the next business day; neither statute says so.
    """
    tree = _tree(parameters)
    on = period.first_day
    rule = tree.value(jurisdiction, "periods.due_rule", on)
    offset = _int(tree, jurisdiction, "periods.due_offset", on)
    if rule == "day_of_following_month":
        nxt = period.next()
        due = date(nxt.year, nxt.month, min(offset, nxt.days))
    elif rule == "days_after_period_end":
        due = period.last_day + timedelta(days=offset)
    else:
        raise ParameterError("periods.due_rule", f"{jurisdiction}: unknown due rule {rule!r}")
    roll = tree.value(jurisdiction, "periods.due_roll_forward", on)
    if roll is True:
        while not is_business_day(jurisdiction, due, parameters=tree):
            due += timedelta(days=1)
    elif roll is not False:
        raise ParameterError("periods.due_roll_forward", f"{jurisdiction}: must be true or false")
    return due


def _start_month(tree: ParameterTree, jurisdiction: str, on: date) -> int:
    month = _int(tree, jurisdiction, "periods.fiscal_year_start_month", on)
    if not 1 <= month <= 12:
        raise ParameterError("periods.fiscal_year_start_month", f"{jurisdiction}: {month}")
    return month


def fiscal_year(jurisdiction: str, d: date, *, parameters: ParameterTree | None = None) -> int:
    """The fiscal year containing ``d``, labelled by the calendar year in which it ends.

    PR: July 1 – June 30, so 2026-07-01 is in FY 2027. VI: October 1 –
    September 30, so 2026-10-01 is in FY 2027.
    """
    start = _start_month(_tree(parameters), jurisdiction, d)
    return d.year + 1 if start != 1 and d.month >= start else d.year


def fiscal_year_bounds(
    jurisdiction: str, fy: int, *, parameters: ParameterTree | None = None
) -> tuple[date, date]:
    """First and last day of fiscal year ``fy`` (both inclusive).

    The start month is read on January 1 of ``fy``, a day every fiscal year
    labelled ``fy`` contains.
    """
    start = _start_month(_tree(parameters), jurisdiction, date(fy, 1, 1))
    first = Period(fy if start == 1 else fy - 1, start)
    return first.first_day, first.add_months(11).last_day


def fiscal_year_months(
    jurisdiction: str, fy: int, *, parameters: ParameterTree | None = None
) -> list[Period]:
    """The twelve monthly periods of fiscal year ``fy``, in order."""
    first, _ = fiscal_year_bounds(jurisdiction, fy, parameters=parameters)
    p = Period.of(first)
    return [p.add_months(i) for i in range(12)]

"""A plan's schedule against the account's payments: pure, for any date.

The money that counts toward a plan is every payment of the account received after the
plan's balance date (the balance already counts what came before), less what its payer
designated for periods outside the plan (that money pays those periods), less what was
returned (a reversed payment counts as never received, as in taxcore). It fills the
installments in order, the down payment (number 0) first: installment ``n`` is paid on
the day the money counted reaches the schedule's cumulative amount through ``n``.

On a date ``D`` the plan is:

- ``completed`` from the day the money counted reaches the planned amount;
- ``defaulted`` from the first day after an installment's grace period (``due_on +
  grace_days``) on which the money counted the day before is below its cumulative
  amount: the day after the grace ends, or, when the money that paid it in time is
  returned after the grace, the day after the return (a later payment does not revive
  it: the agency grants a new plan);
- ``current`` otherwise (from its grant).

An installment paid and then unpaid again by a return is *reopened* on the return's day
(``reopened_on``, ``reopened_by``: the return's ``ref``): its status is again ``due``,
``late`` or ``missed`` by its own due date and grace, and it can be paid again.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Literal

from taxcore.money import ZERO

PlanStatus = Literal["current", "completed", "defaulted"]
InstallmentStatus = Literal["paid", "due", "late", "missed"]


@dataclass(frozen=True, slots=True)
class Term:
    number: int
    due_on: date
    amount: Decimal


def monthly(first: date, count: int) -> list[date]:
    """``count`` due dates a month apart from ``first``, each on ``first``'s day of its month,
    or the month's last day where the month is shorter (Jan 31 -> Feb 28 -> Mar 31)."""
    days: list[date] = []
    for k in range(count):
        year, month = divmod(first.month - 1 + k, 12)
        year, month = first.year + year, month + 1
        days.append(date(year, month, min(first.day, calendar.monthrange(year, month)[1])))
    return days


def equal_amounts(total: Decimal, count: int) -> list[Decimal] | None:
    """``total`` in ``count`` amounts of whole cents that add up to it exactly: each the
    share rounded down to the cent, the last carrying the cents left over; None when a
    share would be under one cent."""
    share = (total / count).quantize(Decimal("0.01"), rounding=ROUND_DOWN)
    if share <= 0:
        return None
    return [share] * (count - 1) + [total - share * (count - 1)]


@dataclass(frozen=True, slots=True)
class Receipt:
    """A payment's part that counts toward the plan (negative: money returned)."""

    on: date
    amount: Decimal
    ref: str | None = None  # what it is (a payment id; a returned payment: the reversal id)


@dataclass(frozen=True, slots=True)
class InstallmentState:
    term: Term
    paid: Decimal
    paid_on: date | None
    status: InstallmentStatus
    #: the day money returned took it below its cumulative amount after it had been paid
    #: (the latest such day; None while it is paid or if it never was), and the return's ref
    reopened_on: date | None = None
    reopened_by: str | None = None


@dataclass(frozen=True, slots=True)
class PlanState:
    status: PlanStatus
    since: date | None  # completed_on or defaulted_on
    paid: Decimal
    installments: list[InstallmentState]
    defaulted_by: Term | None = None


def _counted(moves: Iterable[Receipt], on: date) -> Decimal:
    return sum((m.amount for m in moves if m.on <= on), ZERO)


def _reached(moves: list[Receipt], target: Decimal) -> date | None:
    """The first day the running total reaches ``target`` (and stays there from then)."""
    total = ZERO
    reached: date | None = None
    for m in sorted(moves, key=lambda m: m.on):
        total += m.amount
        if total >= target:
            reached = reached or m.on
        else:
            reached = None  # money returned took it below again
    return reached


def _reopened(moves: list[Receipt], target: Decimal) -> Receipt | None:
    """The latest return that took the running total from ``target`` or more to below it."""
    total = ZERO
    last: Receipt | None = None
    for m in sorted(moves, key=lambda m: m.on):
        before, total = total, total + m.amount
        if before >= target > total:
            last = m
    return last


def _default_day(
    known: list[Receipt], term: Term, cumulative: Decimal, grace_days: int, on: date
) -> date | None:
    """The first day by ``on`` after ``term``'s grace on which the money counted the day before
    is below ``cumulative``: the day after the grace, or the day after a later return."""
    first = term.due_on + timedelta(days=grace_days + 1)
    days = sorted({first} | {m.on + timedelta(days=1) for m in known if m.amount < 0 and m.on >= first})
    return next(
        (d for d in days if d <= on and _counted(known, d - timedelta(days=1)) < cumulative),
        None,
    )


def evaluate(terms: list[Term], moves: list[Receipt], *, grace_days: int, on: date) -> PlanState:
    """The plan's status and each installment's on ``on`` (see the module docstring)."""
    terms = sorted(terms, key=lambda t: t.number)
    planned = sum((t.amount for t in terms), ZERO)
    known = [m for m in moves if m.on <= on]
    paid = _counted(known, on)
    cumulative = ZERO
    defaulted: tuple[date, Term] | None = None
    for t in terms:
        cumulative += t.amount
        day = _default_day(known, t, cumulative, grace_days, on)
        if day is not None and (defaulted is None or day < defaulted[0]):
            defaulted = (day, t)
    completed_on = _reached(known, planned) if paid >= planned else None
    if completed_on is not None and (defaulted is None or completed_on < defaulted[0]):
        status: PlanStatus = "completed"
        since: date | None = completed_on
        defaulted = None
    elif defaulted is not None:
        status, since = "defaulted", defaulted[0]
    else:
        status, since = "current", None
    states: list[InstallmentState] = []
    cumulative = ZERO
    for t in terms:
        before = cumulative
        cumulative += t.amount
        part = min(max(paid - before, ZERO), t.amount)
        if part >= t.amount:
            states.append(InstallmentState(t, part, _reached(known, cumulative), "paid"))
            continue
        if on <= t.due_on:
            st: InstallmentStatus = "due"
        elif on <= t.due_on + timedelta(days=grace_days):
            st = "late"
        else:
            st = "missed"
        back = _reopened(known, cumulative)
        states.append(
            InstallmentState(t, part, None, st, back.on if back else None, back.ref if back else None)
        )
    return PlanState(status, since, paid, states, defaulted[1] if defaulted else None)

"""Who must file a return for a period, from when, and which filing meets that obligation.

One place for the rules the filing service (compliance, the period a return may
be filed for) and the assessment service (non-filer estimates, the PR §47 fine)
both apply, so they cannot disagree:

* :func:`must_file` — a lodging must file a period when it was registered by the
  period's end and had, on at least one day of the period from its registration,
  a status listed in ``obligations.filing_statuses`` (PR §27(A), §28(B); VI §54(f)).
* :func:`closed_from` and :func:`may_file_on` — a return is filed after the
  period's last day, or from the closing date of a lodging that closed during
  the period (:func:`taxcore.periods.filing_opens_on`).
* :func:`declaration_filed_on` — the day the lodging's declaration obligation was
  met: the earliest filing by a filer kind listed in
  ``obligations.declaration_filers`` (PR §28(B), §47; VI §54(f)). Another filer's
  return (an intermediary's schedule for its own bookings) does not meet it.

Status histories are ``(effective_from, status)`` pairs as in
:func:`taxcore.events.registry.status_on`: active from registration until the
first change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import date
from typing import TypeAlias

from taxcore.errors import ParameterError
from taxcore.events.registry import LodgingHistory, status_history
from taxcore.parameters import ParameterTree, default_tree
from taxcore.periods import Period, filing_opens_on

__all__ = [
    "closed_from",
    "declaration_filed_on",
    "declaration_filers",
    "filing_statuses",
    "may_file_on",
    "must_file",
    "must_file_lodging",
    "satisfies_declaration",
    "statuses_during",
]

StatusHistory: TypeAlias = Iterable[tuple[date, str]]


def _ordered(history: StatusHistory) -> list[tuple[date, str]]:
    return sorted(history, key=lambda item: item[0])


def statuses_during(history: StatusHistory, period: Period, *, registered_on: date) -> set[str]:
    """Every status the lodging had on some day of ``period`` on or after its registration.

    Empty when the lodging was registered after the period's last day.
    """
    start = max(period.first_day, registered_on)
    if start > period.last_day:
        return set()
    current = "active"
    seen: set[str] = set()
    for effective, status in _ordered(history):
        if effective <= start:
            current = status
        elif effective <= period.last_day:
            seen.add(status)
    seen.add(current)
    return seen


def _kinds(jurisdiction: str, path: str, period: Period, parameters: ParameterTree | None) -> frozenset[str]:
    raw = (parameters or default_tree()).value(jurisdiction, path, period.first_day)
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ParameterError(path, f"{jurisdiction} {path} must be a list of names, got {raw!r}")
    return frozenset(str(x) for x in raw)


def filing_statuses(
    jurisdiction: str, period: Period, *, parameters: ParameterTree | None = None
) -> frozenset[str]:
    """``obligations.filing_statuses``: the lodging statuses that carry the duty to file."""
    return _kinds(jurisdiction, "obligations.filing_statuses", period, parameters)


def must_file(
    jurisdiction: str,
    period: Period,
    *,
    registered_on: date,
    history: StatusHistory,
    parameters: ParameterTree | None = None,
) -> bool:
    """Whether the lodging must file a return for ``period`` (see the module docstring)."""
    during = statuses_during(history, period, registered_on=registered_on)
    return bool(during & filing_statuses(jurisdiction, period, parameters=parameters))


def must_file_lodging(
    lodging: LodgingHistory, period: Period, *, parameters: ParameterTree | None = None
) -> bool:
    """:func:`must_file` for a service's projection of the registry's lodging."""
    return must_file(
        lodging.jurisdiction,
        period,
        registered_on=lodging.registered_on,
        history=status_history(lodging),
        parameters=parameters,
    )


def closed_from(history: StatusHistory, period: Period) -> date | None:
    """The day from which the lodging stays closed to the end of ``period``, when that day
    falls inside the period; None when it is open on the last day or closed before the period."""
    start: date | None = None
    for effective, status in _ordered(history):
        if effective > period.last_day:
            break
        if status == "closed":
            start = start or effective
        else:
            start = None
    return start if start is not None and start >= period.first_day else None


def may_file_on(history: StatusHistory, period: Period) -> date:
    """The first day a return for ``period`` may be filed for a lodging with this status history."""
    return filing_opens_on(period, closed_from=closed_from(history, period))


def declaration_filers(
    jurisdiction: str, period: Period, *, parameters: ParameterTree | None = None
) -> frozenset[str]:
    """``obligations.declaration_filers``: the filer kinds whose return meets the lodging's
    declaration obligation."""
    return _kinds(jurisdiction, "obligations.declaration_filers", period, parameters)


def satisfies_declaration(
    jurisdiction: str, period: Period, filer_kind: str, *, parameters: ParameterTree | None = None
) -> bool:
    return filer_kind in declaration_filers(jurisdiction, period, parameters=parameters)


def declaration_filed_on(
    jurisdiction: str,
    period: Period,
    filings: Iterable[tuple[str, date]],
    *,
    parameters: ParameterTree | None = None,
) -> date | None:
    """The day the declaration obligation for ``period`` was met: the earliest of the
    ``(filer_kind, filed_on)`` filings by a kind in ``obligations.declaration_filers``."""
    return earliest_filed_by(filings, declaration_filers(jurisdiction, period, parameters=parameters))


def earliest_filed_by(filings: Iterable[tuple[str, date]], kinds: Collection[str]) -> date | None:
    """:func:`declaration_filed_on` with the period's ``kinds`` (:func:`declaration_filers`)
    looked up already: a walk over an account's many periods looks them up once per period
    and law."""
    return min((on for kind, on in filings if kind in kinds), default=None)

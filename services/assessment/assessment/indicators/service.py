"""TADAT indicators from assessment's own records, for a jurisdiction and a window of periods.

Every figure says what it counts (``definition``), the numbers it is made of
(``numerator``, ``denominator``) and, when it cannot be computed, why (``reason``).
They are read from this service's projection of filing and payment events: the
lodgings projection (who must file, taxcore's ``obligations.must_file``), the
liabilities (when each return was filed), ``account_summaries`` (each period's principal
as the ledger last computed it, case-work decisions included), ``collection_postings``
(what of each payment went to each period and component, dated the day it was received),
the cases and the refunds. Core tax means principal: tax and impact fee (penalties, interest
and fines accrue daily and are on the statements, not in these ratios).
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from assessment.audits.repository import audit_coverage
from assessment.crosschecks.repository import crosscheck_coverage
from assessment.indicators import repository
from assessment.indicators.schemas import Indicator, IndicatorsOut, PartUnit, ReasonCode, Unit, Window
from servicekit.errors import ValidationFailed
from taxcore.money import fmt
from taxcore.obligations import declaration_filers, must_file
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date

HUNDRED = Decimal(100)
PCT = Decimal("0.01")
_PAYMENT_SCOPE = (
    "lodging-periods of the window due before as_of with principal (tax and impact fee) assessed, "
    "as the ledger last computed it (declaration, else estimate; case-work decisions included)"
)
#: Each indicator's definition by its ``name``, its ``{terms}`` filled from the window. A client
#: words it in another language from the name and the terms (the web app's catalogs mirror it).
DEFINITIONS: dict[str, str] = {
    "on_time_filing_rate": (
        "Declarations filed by the due date as a percentage of the declarations expected: every "
        "lodging-period of the window that must file (taxcore obligations.must_file: a month with an "
        "active day after registration) and whose due date is before as_of; a declaration counts when "
        "a filer that meets the lodging's obligation (obligations.declaration_filers) filed it on or "
        "before the due date (PR §28; VI §54(f))."
    ),
    "on_time_payment_rate_by_number": (
        "Payments made in full by the due date as a percentage of the payments due: of the "
        f"{_PAYMENT_SCOPE}, those whose principal was collected in full from payments received on or "
        "before the due date."
    ),
    "on_time_payment_rate_by_value": (
        f"Value paid by the due date as a percentage of the value due: over the {_PAYMENT_SCOPE}, the "
        "principal collected from payments received on or before each due date (at most what was due) "
        "over the principal due."
    ),
    "arrears_to_collections": (
        "Core tax arrears at the end of the window ({end}: the last day of 'to', or as_of if earlier) "
        "as a percentage of the year's collections: unpaid principal on that day of every period due "
        "before it (written-off periods left out), over everything collected (every component) from "
        "payments received in the 12 months ending that day ({year_from} to {end})."
    ),
    "arrears_older_than_12_months": (
        "The share of those arrears more than 12 months old: unpaid principal of periods due before "
        "{year_ago}, over the arrears."
    ),
    "audit_coverage": (
        "Lodgings with an audit opened in the window ({starts_on} to {ends_on}) as a percentage of the "
        "lodgings registered by the window's last day ({jurisdiction} {section})."
    ),
    "audit_yield": (
        "Additional tax assessed by the audits closed in the window ({starts_on} to {ends_on}): the sum "
        "of their notices of audit assessment (taxcore's corrected returns less the filed ones; an audit "
        "closed without a notice adds 0.00), over the number of audits closed."
    ),
    "crosscheck_coverage": (
        "Lodging-periods of the window for which an intermediary filed a remittance schedule and whose "
        "operator return was cross-checked against it, as a percentage of the lodging-periods with "
        "intermediary data ({jurisdiction} {section})."
    ),
    "crosscheck_findings_rate": (
        "Of those cross-checked lodging-periods, the percentage whose latest cross-check recorded a "
        "finding (a lead for risk scores and audits; it raises no tax by itself)."
    ),
    "disputes_opened": (
        "Disputes of deficiency notices (cases) opened in the window (PR §13-§15, §34; VI §54(d))."
    ),
    "median_days_to_decision": (
        "Median calendar days from a case's opening to its decision, over the cases decided in the window."
    ),
    "median_days_refund_request_to_payment": (
        "Median calendar days from a refund's request to its payment, over the refunds paid in the "
        "window (PR §42)."
    ),
}
REASONS: dict[ReasonCode, str] = {
    "nothing_to_measure": "nothing to measure in the window (the denominator is zero)",
    "no_audit_closed": "no audit was closed in the window",
}


def percent(numerator: Decimal | int, denominator: Decimal | int) -> Decimal | None:
    if not denominator:
        return None
    return (Decimal(numerator) * HUNDRED / Decimal(denominator)).quantize(PCT, rounding=ROUND_HALF_UP)


def median(days: list[int]) -> Decimal | None:
    if not days:
        return None
    s = sorted(days)
    mid = len(s) // 2
    return Decimal(s[mid]) if len(s) % 2 else Decimal(s[mid - 1] + s[mid]) / 2


def year_before(d: date) -> date:
    try:
        return d.replace(year=d.year - 1)
    except ValueError:  # 29 February
        return d.replace(year=d.year - 1, day=28)


def _part(value: Decimal | int | None) -> str | None:
    return None if value is None else fmt(value) if isinstance(value, Decimal) else str(value)


def _part_unit(value: Decimal | int | None) -> PartUnit | None:
    return None if value is None else "amount" if isinstance(value, Decimal) else "count"


def _figure(
    code: str,
    name: str,
    value: Decimal | int | None,
    unit: Unit,
    *,
    terms: dict[str, str] | None = None,
    numerator: Decimal | int | None = None,
    denominator: Decimal | int | None = None,
    reason: ReasonCode | None = None,
) -> Indicator:
    """An indicator, its definition worded from ``DEFINITIONS[name]`` and ``terms``; a part that
    is money (a ``Decimal``) goes out with two decimals and ``amount``, a number of things (an
    ``int``) as an integer and ``count``."""
    if value is None and reason is None:
        reason = "nothing_to_measure"
    terms = terms or {}
    return Indicator(
        code=code,
        name=name,
        value=None if value is None else str(value),
        unit=unit,
        numerator=_part(numerator),
        denominator=_part(denominator),
        numerator_unit=_part_unit(numerator),
        denominator_unit=_part_unit(denominator),
        definition=DEFINITIONS[name].format(**terms),
        terms=terms,
        reason=REASONS[reason] if reason else None,
        reason_code=reason,
    )


def periods_between(first: Period, last: Period) -> list[Period]:
    out: list[Period] = []
    p = first
    while str(p) <= str(last):
        out.append(p)
        p = p.next()
    return out


async def on_time_filing(
    session: AsyncSession, *, jurisdiction: str, periods: list[Period], as_of: date, law: ParameterTree
) -> Indicator:
    due = {str(p): due_date(jurisdiction, p, parameters=law) for p in periods}
    due = {p: d for p, d in due.items() if d < as_of}  # expected only once the due date has passed
    by_kinds: dict[frozenset[str], dict[str, date]] = defaultdict(dict)
    for p in periods:
        if str(p) in due:
            by_kinds[declaration_filers(jurisdiction, p, parameters=law)][str(p)] = due[str(p)]
    on_time_periods: dict[str, set[str]] = defaultdict(set)
    for kinds, dues in by_kinds.items():
        for r in await repository.filed_on_time(
            session, jurisdiction=jurisdiction, due=dues, kinds=sorted(kinds), as_of=as_of
        ):
            on_time_periods[r.tax_account].update(r.periods)
    # must_file is a function of the registration date and the status history: lodgings that
    # share them share the answer (computed once per history, not once per lodging-period)
    expected_for: dict[tuple[date, str], frozenset[str]] = {}
    due_periods = [p for p in periods if str(p) in due]
    expected = on_time = 0
    for lodging in await repository.filing_lodgings(session, jurisdiction):
        key = (lodging.registered_on, json.dumps(lodging.statuses, sort_keys=True))
        owed = expected_for.get(key)
        if owed is None:
            history = [
                (date.fromisoformat(str(s["effective_from"])), str(s["status"])) for s in lodging.statuses
            ]
            owed = expected_for[key] = frozenset(
                str(p)
                for p in due_periods
                if must_file(
                    jurisdiction, p, registered_on=lodging.registered_on, history=history, parameters=law
                )
            )
        expected += len(owed)
        on_time += len(owed & on_time_periods.get(lodging.tax_account, set()))
    return _figure(
        "P4-10",
        "on_time_filing_rate",
        percent(on_time, expected),
        "percent",
        numerator=on_time,
        denominator=expected,
    )


async def audits_and_crosschecks(
    session: AsyncSession, *, jurisdiction: str, first: Period, last: Period, law: ParameterTree
) -> list[Indicator]:
    """P6-13 (use of audits) and P6-14 (automated cross-checking), from the audit and cross-check
    records (``audits``, ``audit_steps``, ``crosscheck_runs``)."""
    audits = await audit_coverage(session, jurisdiction=jurisdiction, first=first, last=last)
    checks = await crosscheck_coverage(session, jurisdiction=jurisdiction, first=first, last=last)
    window = {"starts_on": first.first_day.isoformat(), "ends_on": last.last_day.isoformat()}
    tree = law
    audit_section = tree.value(jurisdiction, "audits.section", last.last_day)
    sections = tree.value(jurisdiction, "crosschecks.sections", last.last_day)
    shortfall = sections["intermediary_shortfall"] if isinstance(sections, dict) else sections
    return [
        _figure(
            "P6-13",
            "audit_coverage",
            percent(audits.audited, audits.lodgings),
            "percent",
            terms={**window, "jurisdiction": jurisdiction, "section": str(audit_section)},
            numerator=audits.audited,
            denominator=audits.lodgings,
        ),
        _figure(
            "P6-13",
            "audit_yield",
            audits.assessed if audits.closed else None,
            "amount",
            terms=window,
            numerator=audits.assessed,
            denominator=audits.closed,
            reason=None if audits.closed else "no_audit_closed",
        ),
        _figure(
            "P6-14",
            "crosscheck_coverage",
            percent(checks.checked, checks.with_intermediary_data),
            "percent",
            terms={"jurisdiction": jurisdiction, "section": str(shortfall)},
            numerator=checks.checked,
            denominator=checks.with_intermediary_data,
        ),
        _figure(
            "P6-14",
            "crosscheck_findings_rate",
            percent(checks.with_findings, checks.checked),
            "percent",
            numerator=checks.with_findings,
            denominator=checks.checked,
        ),
    ]


async def compute(
    session: AsyncSession, *, jurisdiction: str, first: Period, last: Period, as_of: date, law: ParameterTree
) -> IndicatorsOut:
    if str(last) < str(first):
        raise ValidationFailed.on("to", "is before from", root="query")
    periods = periods_between(first, last)
    if len(periods) > 120:
        raise ValidationFailed.on("to", "the window is longer than 120 months", root="query")
    starts_on, ends_on = first.first_day, last.last_day
    end = min(ends_on, as_of)
    figures = [
        await on_time_filing(session, jurisdiction=jurisdiction, periods=periods, as_of=as_of, law=law)
    ]

    pay = await repository.payment_timeliness(
        session, jurisdiction=jurisdiction, first=str(first), last=str(last), as_of=as_of
    )
    figures.append(
        _figure(
            "P5-11",
            "on_time_payment_rate_by_number",
            percent(pay["on_time"], pay["expected"]),
            "percent",
            numerator=int(pay["on_time"]),
            denominator=int(pay["expected"]),
        )
    )
    figures.append(
        _figure(
            "P5-11",
            "on_time_payment_rate_by_value",
            percent(pay["on_time_value"], pay["due_value"]),
            "percent",
            numerator=Decimal(pay["on_time_value"]),
            denominator=Decimal(pay["due_value"]),
        )
    )

    year_ago = year_before(end)
    arr = await repository.arrears(session, jurisdiction=jurisdiction, end=end, year_ago=year_ago)
    figures.append(
        _figure(
            "P5-12",
            "arrears_to_collections",
            percent(arr["stock"], arr["collections"]),
            "percent",
            terms={"end": end.isoformat(), "year_from": (year_ago + timedelta(days=1)).isoformat()},
            numerator=arr["stock"],
            denominator=arr["collections"],
        )
    )
    figures.append(
        _figure(
            "P5-12",
            "arrears_older_than_12_months",
            percent(arr["older"], arr["stock"]),
            "percent",
            terms={"year_ago": year_ago.isoformat()},
            numerator=arr["older"],
            denominator=arr["stock"],
        )
    )
    figures.extend(
        await audits_and_crosschecks(session, jurisdiction=jurisdiction, first=first, last=last, law=law)
    )

    cases = await repository.cases(session, jurisdiction=jurisdiction)
    opened = [c for c in cases if starts_on <= c.opened_on <= end]
    decided = [
        (c.decided_on - c.opened_on).days for c in cases if c.decided_on and starts_on <= c.decided_on <= end
    ]
    figures.append(_figure("P7", "disputes_opened", len(opened), "count"))
    figures.append(
        _figure(
            "P7",
            "median_days_to_decision",
            median(decided),
            "days",
            denominator=len(decided),
        )
    )
    refunds = await repository.refunds_paid(session, jurisdiction=jurisdiction, start=starts_on, end=end)
    days = [(r.paid_on - r.requested_on).days for r in refunds]
    figures.append(
        _figure(
            "P8",
            "median_days_refund_request_to_payment",
            median(days),
            "days",
            denominator=len(days),
        )
    )
    window = Window.model_validate(
        {"from": str(first), "to": str(last), "starts_on": starts_on, "ends_on": ends_on, "as_of": as_of}
    )
    return IndicatorsOut(jurisdiction=jurisdiction, window=window, indicators=figures)

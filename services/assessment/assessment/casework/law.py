"""The case-work parameters (taxcore ``cases.*``), read as in force on a date, with citations."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from assessment import law as statutes
from taxcore.errors import ParameterError
from taxcore.parameters import ParameterTree


def section(jurisdiction: str, kind: str, on: date, *, law: ParameterTree) -> str:
    """Citation of a kind of case fact (decision, abatement, write_off, refund)."""
    sections = law.value(jurisdiction, "cases.sections", on)
    if not isinstance(sections, dict) or kind not in sections:
        raise ParameterError("cases.sections", f"{jurisdiction} cites no {kind!r}")
    return str(sections[kind])


def appeal_days(jurisdiction: str, on: date, *, law: ParameterTree) -> statutes.Cited:
    return statutes.cited_on("cases.appeal_days", jurisdiction, on, law=law)


def write_off_limitation_years(jurisdiction: str, on: date, *, law: ParameterTree) -> statutes.Cited:
    return statutes.cited_on("cases.write_off_limitation_years", jurisdiction, on, law=law)


def returned_payment_fee(jurisdiction: str, on: date, *, law: ParameterTree) -> tuple[Decimal, str]:
    """The fee for a returned payment (0: none) and its citation."""
    pv = law.get(jurisdiction, "cases.returned_payment_fee", on)
    if not isinstance(pv.value, Decimal):
        raise ParameterError("cases.returned_payment_fee", f"{jurisdiction}: not an amount")
    return pv.value, pv.section

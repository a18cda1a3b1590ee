"""The statutory values the assessment service applies, read from taxcore's parameters.

Each value names its section and, where our transcriptions do not settle it (the
PR text ends inside §31; 33 V.I.C. § 45 and the Virgin Islands refund rules are
not in our files), is provisional with the reason — in the parameter files
``taxcore/parameters/<JUR>/assessment/`` (``notice_response_days``,
``refund_years_from_declaration``, ``refund_years_from_payment``,
``clerical_assessment_section``, ``estimate_section``, ``notice_section``,
``liability_section``).
A third jurisdiction adds those files; nothing here changes.

The tables keep the shape the service reads (``law.cited(law.NOTICE_RESPONSE_DAYS, jur)``,
``law.ESTIMATE_SECTION[jur]``; never a default: the loader guarantees every jurisdiction
that issues notices states each citation, ``taxcore.parameters.REQUIRED_WITH``): each is a
read-only mapping from a jurisdiction code to the parameter's latest value. :func:`cited_on`
reads the value in force on a given day.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import TypeVar

from taxcore.errors import TaxcoreError
from taxcore.parameters import ParameterValue, default_tree


@dataclass(frozen=True, slots=True)
class Cited:
    value: int
    section: str
    provisional: bool = False
    note: str = ""


def _cited(pv: ParameterValue) -> Cited:
    v = pv.value
    if isinstance(v, bool) or not isinstance(v, Decimal | int) or v != int(v):
        raise TypeError(f"{pv.path} is not a whole number: {v!r}")
    return Cited(int(v), pv.section, pv.provisional, pv.note or "")


def _latest(jurisdiction: str, path: str) -> ParameterValue:
    """The parameter's latest value (KeyError if the jurisdiction has none in force)."""
    tree = default_tree()
    if not tree.has(jurisdiction, path):
        raise KeyError(jurisdiction)
    parameter = tree.parameter(jurisdiction, path)
    try:
        return parameter.at(max(e.effective for e in parameter.entries))
    except TaxcoreError:  # repealed
        raise KeyError(jurisdiction) from None


V = TypeVar("V")


class _ByJurisdiction(Mapping[str, V]):
    """Jurisdiction code -> a value read from parameter ``path`` (jurisdictions that have it)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __iter__(self) -> Iterator[str]:
        tree = default_tree()
        return iter([j for j in tree.jurisdictions() if tree.has(j, self.path)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Cited(_ByJurisdiction[Cited]):
    """Jurisdiction code -> the whole-number parameter ``path`` with its citation."""

    def __getitem__(self, jurisdiction: str) -> Cited:
        return _cited(_latest(jurisdiction, self.path))


class _Sections(_ByJurisdiction[str]):
    """Jurisdiction code -> the citation text of parameter ``path``."""

    def __getitem__(self, jurisdiction: str) -> str:
        return str(_latest(jurisdiction, self.path).value)


#: Days a taxpayer has to answer a Notification of Deficiency before it becomes final.
NOTICE_RESPONSE_DAYS: Mapping[str, Cited] = _Cited("assessment.notice_response_days")

#: PR §42: refunds of overpayments, in years, counted from the declaration when the payment was
#: made with it, otherwise from the payment.
REFUND_YEARS_FROM_DECLARATION: Mapping[str, Cited] = _Cited("assessment.refund_years_from_declaration")
REFUND_YEARS_FROM_PAYMENT: Mapping[str, Cited] = _Cited("assessment.refund_years_from_payment")

#: Where the assessment without a hearing of a clerical error, and an estimated assessment, come from.
CLERICAL_ASSESSMENT_SECTION: Mapping[str, str] = _Sections("assessment.clerical_assessment_section")
ESTIMATE_SECTION: Mapping[str, str] = _Sections("assessment.estimate_section")
NOTICE_SECTION: Mapping[str, str] = _Sections("assessment.notice_section")
#: (Paying the undisputed part first and drawing on the bond: ``taxcore.notices.notice_terms``,
#: which states them only where the jurisdiction's own law has them.)
#: A period's liability as assessed from its declarations.
LIABILITY_SECTION: Mapping[str, str] = _Sections("assessment.liability_section")

#: Finding codes of taxcore's declaration check that are mathematical or clerical errors
#: (PR §2(18)(i)-(iv)) and so support an assessment without a hearing (PR §32).
CLERICAL_CODES = frozenset(
    {"arithmetic", "inconsistent_entries", "omission", "deduction_beyond_limit", "tax_understated"}
)


def cited(table: Mapping[str, Cited], jurisdiction: str) -> Cited:
    """The value of ``table`` for ``jurisdiction`` (KeyError if its parameters have none)."""
    return table[jurisdiction]


def cited_on(path: str, jurisdiction: str, on: date) -> Cited:
    """A whole-number assessment parameter as in force on ``on`` (strict: taxcore raises
    ``ParameterError`` outside its range)."""
    return _cited(default_tree().get(jurisdiction, path, on))


def agency_name(jurisdiction: str, on: date) -> str:
    """taxcore's ``agency.name`` in force on ``on`` (PR §2(12); VI §54(b)(3)(B)), or "Roomtax"."""
    try:
        return str(default_tree().value(jurisdiction, "agency.name", on))
    except TaxcoreError:
        return "Roomtax"

"""The statutory values the assessment service applies, read from taxcore's parameters.

Each value names its section and, where our transcriptions do not settle it (the
PR text ends inside §31; 33 V.I.C. § 45 and the Virgin Islands refund rules are
not in our files), is provisional with the reason — in the parameter files
``taxcore/parameters/<JUR>/assessment/`` (``notice_response_days``,
``refund_years_from_declaration``, ``refund_years_from_payment``,
``clerical_assessment_section``, ``estimate_section``, ``notice_section``,
``liability_section``).
A third jurisdiction adds those files; nothing here changes.

The tables name what the service reads (``law.cited(law.NOTICE_RESPONSE_DAYS, jur, law=tree)``,
``law.ESTIMATE_SECTION.of(tree, jur)``; never a default: the loader guarantees every jurisdiction
that issues notices states each citation, ``taxcore.parameters.REQUIRED_WITH``): each reads,
from the parameter tree it is given (the runtime's, :mod:`servicekit.runtime`), a jurisdiction's
latest value of its parameter. :func:`cited_on` reads the value in force on a given day.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Generic, TypeVar

from taxcore.errors import TaxcoreError
from taxcore.parameters import ParameterTree, ParameterValue


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


def _latest(tree: ParameterTree, jurisdiction: str, path: str) -> ParameterValue:
    """The parameter's latest value (KeyError if the jurisdiction has none in force)."""
    if not tree.has(jurisdiction, path):
        raise KeyError(jurisdiction)
    parameter = tree.parameter(jurisdiction, path)
    try:
        return parameter.at(max(e.effective for e in parameter.entries))
    except TaxcoreError:  # repealed
        raise KeyError(jurisdiction) from None


V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Table(Generic[V]):
    """Jurisdiction code -> a value read from parameter ``path`` of a given tree (its latest)."""

    path: str
    read: Callable[[ParameterValue], V]

    def of(self, tree: ParameterTree, jurisdiction: str) -> V:
        """The value for ``jurisdiction`` in ``tree`` (KeyError if its parameters have none)."""
        return self.read(_latest(tree, jurisdiction, self.path))

    def jurisdictions(self, tree: ParameterTree) -> list[str]:
        """The jurisdictions of ``tree`` that have the parameter."""
        return [j for j in tree.jurisdictions() if tree.has(j, self.path)]


def _section(pv: ParameterValue) -> str:
    return str(pv.value)


#: Days a taxpayer has to answer a Notification of Deficiency before it becomes final.
NOTICE_RESPONSE_DAYS: Table[Cited] = Table("assessment.notice_response_days", _cited)

#: PR §42: refunds of overpayments, in years, counted from the declaration when the payment was
#: made with it, otherwise from the payment.
REFUND_YEARS_FROM_DECLARATION: Table[Cited] = Table("assessment.refund_years_from_declaration", _cited)
REFUND_YEARS_FROM_PAYMENT: Table[Cited] = Table("assessment.refund_years_from_payment", _cited)

#: Where the assessment without a hearing of a clerical error, and an estimated assessment, come from.
CLERICAL_ASSESSMENT_SECTION: Table[str] = Table("assessment.clerical_assessment_section", _section)
ESTIMATE_SECTION: Table[str] = Table("assessment.estimate_section", _section)
NOTICE_SECTION: Table[str] = Table("assessment.notice_section", _section)
#: (Paying the undisputed part first and drawing on the bond: ``taxcore.notices.notice_terms``,
#: which states them only where the jurisdiction's own law has them.)
#: A period's liability as assessed from its declarations.
LIABILITY_SECTION: Table[str] = Table("assessment.liability_section", _section)

#: Finding codes of taxcore's declaration check that are mathematical or clerical errors
#: (PR §2(18)(i)-(iv)) and so support an assessment without a hearing (PR §32).
CLERICAL_CODES = frozenset(
    {"arithmetic", "inconsistent_entries", "omission", "deduction_beyond_limit", "tax_understated"}
)


def cited(table: Table[Cited], jurisdiction: str, *, law: ParameterTree) -> Cited:
    """The value of ``table`` for ``jurisdiction`` in ``law`` (KeyError if its parameters have none)."""
    return table.of(law, jurisdiction)


def cited_on(path: str, jurisdiction: str, on: date, *, law: ParameterTree) -> Cited:
    """A whole-number assessment parameter as in force on ``on`` (strict: taxcore raises
    ``ParameterError`` outside its range)."""
    return _cited(law.get(jurisdiction, path, on))


def agency_name(jurisdiction: str, on: date, *, law: ParameterTree) -> str:
    """taxcore's ``agency.name`` in force on ``on`` (PR §2(12); VI §54(b)(3)(B)), or "Roomtax"."""
    try:
        return str(law.value(jurisdiction, "agency.name", on))
    except TaxcoreError:
        return "Roomtax"

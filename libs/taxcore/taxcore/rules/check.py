"""Checking a filed declaration for mathematical or clerical errors.

PR §2(18) defines a Mathematical or Clerical Error as (i) an error in addition,
subtraction, multiplication or division; (ii) an entry inconsistent with another
entry of the same item; (iii) an omission of information needed to evidence an
entry; (iv) a deduction or credit beyond its statutory limit. §32 lets the Company
assess the deficiency such errors cause. VI §54 has no such definition; the same
codes are used and cited to the §54 subsection the corrected entry applies
(parameter ``checks.sections``).

Codes:

* ``arithmetic`` — the declared total is not the sum of its lines (``total`` vs tax
  plus impact fee; ``line_total`` vs the lines the filer reported).
* ``inconsistent_entries`` — the declared tax is not the rate times the declared base;
  the declared base is not the lines less the exemptions; room revenue without
  room-nights; a timeshare-owner exemption without owner unit-days.
* ``omission`` — the base or the tax (or a due impact fee) left blank; an exemption
  whose evidence is required but missing (film certificate).
* ``deduction_beyond_limit`` — exemptions above the gross receipts; an exemption the
  lodging's class cannot claim (VI long stays claimed by a hotel).
* ``tax_understated`` / ``tax_overstated`` — the declared tax (or impact fee) differs
  from what the declaration's own lines come to.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, field_validator

from taxcore.errors import ParameterError
from taxcore.money import round_cents
from taxcore.parameters import ParameterTree, default_tree
from taxcore.rules._common import finite, trusted
from taxcore.rules.declaration import (
    DeclarationInput,
    DeclarationResult,
    Disallowed,
    _no_float,
    declaration_amounts,
    resolve_period,
)

__all__ = ["FINDING_CODES", "DeclaredFigures", "Finding", "Review", "check_declaration", "review_declaration"]

FINDING_CODES: tuple[str, ...] = (
    "arithmetic",
    "inconsistent_entries",
    "omission",
    "deduction_beyond_limit",
    "tax_understated",
    "tax_overstated",
)


class DeclaredFigures(BaseModel):
    """The figures the filer wrote on the declaration (None = left blank)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    taxable_base: Decimal | None
    tax: Decimal | None
    impact_fee: Decimal | None = None
    total: Decimal | None = None
    line_total: Decimal | None = None

    _floats = field_validator("*", mode="before")(_no_float)


class Finding(BaseModel):
    """One error found in a declaration, with the statute section that defines it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str
    line: str
    message: str
    declared: Decimal | None
    computed: Decimal | None
    section: str


def _sections(tree: ParameterTree, jurisdiction: str, on: date) -> dict[str, str]:
    """The section each finding code cites (memoized in the tree, as the declaration's
    parameters are: read for every return; callers only read it)."""
    key = ("check.sections", jurisdiction, on)
    sections: dict[str, str] | None = tree.memo.get(key)
    if sections is not None:
        return sections
    raw = tree.value(jurisdiction, "checks.sections", on)
    if not isinstance(raw, dict) or any(code not in raw for code in FINDING_CODES):
        raise ParameterError("checks.sections", f"{jurisdiction}: must name every finding code")
    sections = {str(k): str(v) for k, v in raw.items()}
    tree.memo[key] = sections
    return sections


class Review(BaseModel):
    """A declaration's allowed figures and its findings, from one computation."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    result: DeclarationResult
    findings: list[Finding]


def check_declaration(
    inp: DeclarationInput,
    declared: DeclaredFigures,
    *,
    parameters: ParameterTree | None = None,
    today: date | None = None,
) -> list[Finding]:
    """Every mathematical or clerical error in a declaration (PR §2(18); VI §54): the findings
    of :func:`review_declaration` alone. Call :func:`review_declaration` when the allowed
    figures are needed too (one computation gives both)."""
    return review_declaration(inp, declared, parameters=parameters, today=today).findings


def review_declaration(
    inp: DeclarationInput,
    declared: DeclaredFigures,
    *,
    parameters: ParameterTree | None = None,
    today: date | None = None,
) -> Review:
    """Recompute a declaration and report every mathematical or clerical error (PR §2(18); VI §54).

    The amounts are recomputed from the declared lines with the claims the statute
    does not allow disallowed (and reported) instead of refused
    (:func:`taxcore.rules.declaration.compute_allowed`'s figures), so a declaration
    with an unevidenced exemption still gets its corrected tax. Input the statute
    cannot apply to at all (negative amounts, unknown class) still raises. The
    findings come in the order of PR §2(18): omissions (iii), arithmetic (i),
    inconsistent entries (ii), deductions beyond their limit (iv), then the
    understated or overstated tax.
    """
    tree = parameters or default_tree()
    result, disallowed = declaration_amounts(inp, tree, today, lenient=True)
    sections = _sections(tree, inp.jurisdiction, resolve_period(inp.period, None).first_day)
    findings = [
        *omissions(declared, result, disallowed, sections),
        *arithmetic_errors(declared, result, sections),
        *inconsistent_entries(inp, declared, result, sections),
        *deductions_beyond_limit(disallowed, sections),
        *misstated_tax(declared, result, sections),
    ]
    # ``Review(result=result, findings=findings)``: the result as computed, the findings as built
    return trusted(Review, {"result": result, "findings": findings})


def _finding(
    sections: dict[str, str],
    code: str,
    line: str,
    message: str,
    declared: Decimal | None,
    computed: Decimal | None,
) -> Finding:
    return _new_finding(code, line, message, declared, computed, sections[code])


def _disallowed(d: Disallowed, sections: dict[str, str], message: str) -> Finding:
    return _new_finding(d.code, d.line, message, d.declared, d.allowed, f"{sections[d.code]}; {d.section}")


def _new_finding(
    code: str, line: str, message: str, declared: Decimal | None, computed: Decimal | None, section: str
) -> Finding:
    """``Finding(...)``: built without validating what is already valid (strings, finite amounts
    or None), validated otherwise (its ``ValidationError`` as before)."""
    values = {
        "code": code,
        "line": line,
        "message": message,
        "declared": declared,
        "computed": computed,
        "section": section,
    }
    if (
        type(code) is str
        and type(line) is str
        and type(message) is str
        and type(section) is str
        and (declared is None or finite(declared))
        and (computed is None or finite(computed))
    ):
        return trusted(Finding, values)
    return Finding(**values)


def omissions(
    declared: DeclaredFigures,
    result: DeclarationResult,
    disallowed: list[Disallowed],
    sections: dict[str, str],
) -> list[Finding]:
    """PR §2(18)(iii): information needed to evidence an entry omitted — the base or the tax
    (or a due impact fee) left blank, an exemption whose evidence is missing (disallowed)."""
    found: list[Finding] = []
    if declared.taxable_base is None:
        found.append(
            _finding(
                sections, "omission", "taxable_base", "taxable base left blank", None, result.taxable_base
            )
        )
    if declared.tax is None:
        found.append(_finding(sections, "omission", "tax", "tax left blank", None, result.tax))
    if declared.impact_fee is None and result.impact_fee:
        found.append(
            _finding(
                sections,
                "omission",
                "impact_fee",
                "impact fee left blank although owner unit-days are reported",
                None,
                result.impact_fee,
            )
        )
    if disallowed:
        found.extend(
            _disallowed(d, sections, f"{d.message}; the exemption is disallowed")
            for d in disallowed
            if d.code == "omission"
        )
    return found


def arithmetic_errors(
    declared: DeclaredFigures, result: DeclarationResult, sections: dict[str, str]
) -> list[Finding]:
    """PR §2(18)(i): an error in addition — the declared line total is not the sum of the
    lines, the declared total is not the declared tax plus impact fee."""
    found: list[Finding] = []
    if declared.line_total is not None and declared.line_total != result.gross_receipts:
        found.append(
            _finding(
                sections,
                "arithmetic",
                "line_total",
                f"the lines add up to {result.gross_receipts}, not {declared.line_total}",
                declared.line_total,
                result.gross_receipts,
            )
        )
    if declared.total is not None:
        own_sum = (declared.tax or Decimal(0)) + (declared.impact_fee or Decimal(0))
        if declared.total != own_sum:
            found.append(
                _finding(
                    sections,
                    "arithmetic",
                    "total",
                    f"the declared tax and impact fee add up to {own_sum}, not {declared.total}",
                    declared.total,
                    own_sum,
                )
            )
    return found


def inconsistent_entries(
    inp: DeclarationInput, declared: DeclaredFigures, result: DeclarationResult, sections: dict[str, str]
) -> list[Finding]:
    """PR §2(18)(ii): an entry inconsistent with another entry of the same item — the tax is
    not the rate times the declared base, the base is not the lines less the exemptions
    (VI §54(c) hint when tax is not itemized), room revenue without room-nights, an owner
    exemption without owner unit-days for the impact fee."""
    found: list[Finding] = []
    if declared.taxable_base is not None and declared.tax is not None:
        expected = round_cents(declared.taxable_base * result.rate)
        if expected != declared.tax:
            found.append(
                _finding(
                    sections,
                    "inconsistent_entries",
                    "tax",
                    f"{declared.taxable_base} x {result.rate} is {expected}, not {declared.tax}",
                    declared.tax,
                    expected,
                )
            )
    if declared.taxable_base is not None and declared.taxable_base != result.taxable_base:
        hint = ""
        if not inp.tax_itemized and declared.taxable_base < result.taxable_base:
            hint = " (tax not itemized: the full charges are the base, §54(c))"
        found.append(
            _finding(
                sections,
                "inconsistent_entries",
                "taxable_base",
                f"the lines less exemptions come to {result.taxable_base}, not {declared.taxable_base}{hint}",
                declared.taxable_base,
                result.taxable_base,
            )
        )
    if inp.room_nights == 0 and inp.room_revenue > 0:
        found.append(
            _finding(
                sections,
                "inconsistent_entries",
                "room_nights",
                f"room revenue {inp.room_revenue} reported with no room-nights",
                None,
                None,
            )
        )
    owner_exempt = sum((e.amount for e in inp.exempt if e.exemption == "vi_timeshare_owner"), Decimal(0))
    if owner_exempt > 0 and inp.timeshare_owner_unit_days == 0:
        found.append(
            _finding(
                sections,
                "inconsistent_entries",
                "timeshare_owner_unit_days",
                "owner occupancy exempted from the room tax but no owner unit-days reported for the "
                "impact fee",
                owner_exempt,
                None,
            )
        )
    return found


def deductions_beyond_limit(disallowed: list[Disallowed], sections: dict[str, str]) -> list[Finding]:
    """PR §2(18)(iv): a deduction beyond its statutory limit — exemptions above the gross
    receipts, an exemption the lodging's class cannot claim (disallowed by the computation)."""
    return [_disallowed(d, sections, d.message) for d in disallowed if d.code == "deduction_beyond_limit"]


def misstated_tax(
    declared: DeclaredFigures, result: DeclarationResult, sections: dict[str, str]
) -> list[Finding]:
    """The declared tax (or impact fee) against what the declaration's own lines come to
    (PR §32: the deficiency assessed; VI §54): ``tax_understated`` or ``tax_overstated``."""
    found: list[Finding] = []
    for line, filed, computed in (
        ("tax", declared.tax, result.tax),
        ("impact_fee", declared.impact_fee, result.impact_fee),
    ):
        if filed is None or filed == computed:
            continue
        code = "tax_understated" if filed < computed else "tax_overstated"
        found.append(
            _finding(
                sections,
                code,
                line,
                f"declared {line} {filed}; the declaration's lines come to {computed}",
                filed,
                computed,
            )
        )
    return found

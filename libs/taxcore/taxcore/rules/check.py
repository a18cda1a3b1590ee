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
from taxcore.periods import Period
from taxcore.rules.declaration import DeclarationInput, DeclarationResult, _no_float, compute

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
    raw = tree.value(jurisdiction, "checks.sections", on)
    if not isinstance(raw, dict) or any(code not in raw for code in FINDING_CODES):
        raise ParameterError("checks.sections", f"{jurisdiction}: must name every finding code")
    return {str(k): str(v) for k, v in raw.items()}


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
    """Every mathematical or clerical error in a declaration (PR §2(18); VI §54)."""
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
    does not allow disallowed (and reported) instead of refused, so a declaration
    with an unevidenced exemption still gets its corrected tax. Input the statute
    cannot apply to at all (negative amounts, unknown class) still raises.
    """
    tree = parameters or default_tree()
    result, disallowed = compute(inp, tree, today, lenient=True)
    sections = _sections(tree, inp.jurisdiction, Period.parse(inp.period).first_day)
    findings: list[Finding] = []

    def find(
        code: str, line: str, message: str, declared_v: Decimal | None, computed: Decimal | None
    ) -> None:
        findings.append(
            Finding(
                code=code,
                line=line,
                message=message,
                declared=declared_v,
                computed=computed,
                section=sections[code],
            )
        )

    # (iii) omissions
    if declared.taxable_base is None:
        find("omission", "taxable_base", "taxable base left blank", None, result.taxable_base)
    if declared.tax is None:
        find("omission", "tax", "tax left blank", None, result.tax)
    if declared.impact_fee is None and result.impact_fee:
        find(
            "omission",
            "impact_fee",
            "impact fee left blank although owner unit-days are reported",
            None,
            result.impact_fee,
        )
    for d in disallowed:
        if d.code == "omission":
            findings.append(
                Finding(
                    code=d.code,
                    line=d.line,
                    message=f"{d.message}; the exemption is disallowed",
                    declared=d.declared,
                    computed=d.allowed,
                    section=f"{sections[d.code]}; {d.section}",
                )
            )

    # (i) arithmetic
    if declared.line_total is not None and declared.line_total != result.gross_receipts:
        find(
            "arithmetic",
            "line_total",
            f"the lines add up to {result.gross_receipts}, not {declared.line_total}",
            declared.line_total,
            result.gross_receipts,
        )
    if declared.total is not None:
        own_sum = (declared.tax or Decimal(0)) + (declared.impact_fee or Decimal(0))
        if declared.total != own_sum:
            find(
                "arithmetic",
                "total",
                f"the declared tax and impact fee add up to {own_sum}, not {declared.total}",
                declared.total,
                own_sum,
            )

    # (ii) inconsistent entries
    if declared.taxable_base is not None and declared.tax is not None:
        expected = round_cents(declared.taxable_base * result.rate)
        if expected != declared.tax:
            find(
                "inconsistent_entries",
                "tax",
                f"{declared.taxable_base} x {result.rate} is {expected}, not {declared.tax}",
                declared.tax,
                expected,
            )
    if declared.taxable_base is not None and declared.taxable_base != result.taxable_base:
        hint = ""
        if not inp.tax_itemized and declared.taxable_base < result.taxable_base:
            hint = " (tax not itemized: the full charges are the base, §54(c))"
        find(
            "inconsistent_entries",
            "taxable_base",
            f"the lines less exemptions come to {result.taxable_base}, not {declared.taxable_base}{hint}",
            declared.taxable_base,
            result.taxable_base,
        )
    if inp.room_nights == 0 and inp.room_revenue > 0:
        find(
            "inconsistent_entries",
            "room_nights",
            f"room revenue {inp.room_revenue} reported with no room-nights",
            None,
            None,
        )
    owner_exempt = sum((e.amount for e in inp.exempt if e.exemption == "vi_timeshare_owner"), Decimal(0))
    if owner_exempt > 0 and inp.timeshare_owner_unit_days == 0:
        find(
            "inconsistent_entries",
            "timeshare_owner_unit_days",
            "owner occupancy exempted from the room tax but no owner unit-days reported for the impact fee",
            owner_exempt,
            None,
        )

    # (iv) deductions beyond their limit
    for d in disallowed:
        if d.code == "deduction_beyond_limit":
            findings.append(
                Finding(
                    code=d.code,
                    line=d.line,
                    message=d.message,
                    declared=d.declared,
                    computed=d.allowed,
                    section=f"{sections[d.code]}; {d.section}",
                )
            )

    # understated / overstated
    for line, filed, computed in (
        ("tax", declared.tax, result.tax),
        ("impact_fee", declared.impact_fee, result.impact_fee),
    ):
        if filed is None or filed == computed:
            continue
        code = "tax_understated" if filed < computed else "tax_overstated"
        find(
            code,
            line,
            f"declared {line} {filed}; the declaration's lines come to {computed}",
            filed,
            computed,
        )
    return Review(result=result, findings=findings)

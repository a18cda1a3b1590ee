"""Recomputing a declaration with taxcore (pure: no I/O).

The service computes every return itself (PR §24, §2(8); VI §54(b)-(c)) and
checks the filer's own figures for mathematical or clerical errors (PR §2(18)).
Findings flag the declaration; they never change what the filer declared, and
both sets of figures are stored.

The class and casino licence are those in force in the period (PR §2(16): the rate
"for the period of occupancy"), from the registry's effective-dated history, so an
amendment of a past period keeps that period's rate.

Claims the statute does not allow (an exemption without its evidence, an
exemption the class cannot claim, exemptions above the gross receipts) are
disallowed in the computed figures and reported as findings, the way the check
does, rather than refusing the return: the agency assesses the difference (§32).
A film-production exemption (§24(F)) is evidenced only by a certificate the
Company issued for that lodging and valid during the period, as the registry
projection knows it; any other number is treated as missing evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from filing.declarations.schemas import DeclaredFigures, DeclaredLines, built, json_values
from filing.models import AnyLodging
from taxcore.events.registry import attributes_in
from taxcore.parameters import ParameterTree
from taxcore.periods import Period
from taxcore.rules import check
from taxcore.rules.declaration import DeclarationInput, DeclarationResult

#: Exemptions whose evidence is a certificate the registry issues (kind = exemption name).
CERTIFIED_EXEMPTIONS = frozenset({"pr_film_production"})

#: Every field of the return as filed, in the order of ``DeclaredLines`` (taxcore ``DeclarationInput``).
LINE_FIELDS: tuple[str, ...] = tuple(DeclaredLines.model_fields)
#: the lines' own fields (a request's body has more), built once: ``include`` of every dump
_SUBMITTED = set(LINE_FIELDS)
#: ``DeclarationInput``'s fields: the lodging's and the period's, then the lines in their order
assert ("jurisdiction", "lodging_class", "casino", "period", *LINE_FIELDS) == tuple(
    DeclarationInput.model_fields
), "DeclarationInput is built from the lines in their order"


@dataclass(frozen=True, slots=True)
class Recomputed:
    submitted: dict[str, Any]
    input: DeclarationInput
    result: DeclarationResult
    findings: list[dict[str, Any]]


def recompute(
    *,
    lodging: AnyLodging,
    period: Period,
    lines: DeclaredLines,
    declared: DeclaredFigures,
    certificates: set[tuple[str, str]],
    parameters: ParameterTree,
    today: date,
) -> Recomputed:
    """Taxcore's figures and findings for one return. Raises taxcore ``InvalidInput``
    (naming the field) for input the statute cannot apply to at all."""
    # ``lines`` is validated (the request's body, a schedule's row): its values are what
    # validating them for taxcore's models gives, so the input and the figures are built
    # without validating them again (``built``: the same instances, ~5 us less per return)
    submitted = json_values(lines, _SUBMITTED)
    exempt = list(lines.exempt)
    unverified: dict[str, str] = {}
    for i, ex in enumerate(exempt):
        evidence = (ex.evidence or "").strip()
        if ex.exemption in CERTIFIED_EXEMPTIONS and evidence and (ex.exemption, evidence) not in certificates:
            unverified[f"exempt[{i}].evidence"] = evidence
            exempt[i] = ex.model_copy(update={"evidence": None})
    in_force = attributes_in(lodging, period)  # the period's class and licence, not today's
    values: dict[str, Any] = {
        "jurisdiction": lodging.jurisdiction,
        "lodging_class": in_force.lodging_class,
        "casino": in_force.casino,
        "period": str(period),
    }
    if type(lines) is DeclaredLines:  # a schedule row's: its fields are the lines, in their order
        values.update(vars(lines))
    else:  # a request's body: the lines, then its own fields
        for name in LINE_FIELDS:
            values[name] = getattr(lines, name)
    values["comp_rooms"] = list(values["comp_rooms"])  # a model's own lists, as validated
    values["exempt"] = exempt  # in its place among the lines
    inp = built(DeclarationInput, values)
    figures = built(
        check.DeclaredFigures,
        {
            "taxable_base": declared.taxable_base,
            "tax": declared.tax,
            "impact_fee": declared.impact_fee,
            "total": declared.total,
            "line_total": declared.line_total,
        },
    )
    review = check.review_declaration(inp, figures, parameters=parameters, today=today)
    result = review.result
    findings = []
    for f in review.findings:
        item = json_values(f)
        if f.line in unverified:
            item["message"] = (
                f"certificate {unverified[f.line]!r} is not a {inp.jurisdiction} certification issued "
                f"for this lodging and valid in {period}; the exemption is disallowed"
            )
        findings.append(item)
    return Recomputed(submitted=submitted, input=inp, result=result, findings=findings)

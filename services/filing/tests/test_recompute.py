"""``declarations.compute.recompute`` builds taxcore's ``DeclarationInput`` and
``DeclaredFigures`` from lines already validated, without validating them again
(``schemas.built``): they must be the very models validation gives, field by field, with the
same JSON and the same fields set, for a request's body and a schedule's row alike."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic_core import to_json
from test_response_bytes import BODY as GOLDEN_BODY
from test_response_bytes import EXTRA

from filing.declarations import compute
from filing.declarations.repository import loaded
from filing.declarations.schemas import DeclarationCreate, DeclaredFigures, DeclaredLines, built, json_values
from filing.models import Lodging
from filing.schedules.schemas import ScheduleRow
from taxcore.parameters import default_tree
from taxcore.periods import Period
from taxcore.rules import check
from taxcore.rules.declaration import DeclarationInput

PERIOD = Period.parse("2026-10")


def _lodging(jurisdiction: str = "PR", lodging_class: str = "hotel", casino: bool = False) -> Lodging:
    return loaded(
        Lodging,
        {
            "lodging_id": "lodging-1",
            "tax_account": f"{jurisdiction}-0000001-0",
            "jurisdiction": jurisdiction,
            "lodging_class": lodging_class,
            "casino": casino,
            "name": "Hotel",
            "municipality": "San Juan",
            "operator_id": "op-1",
            "registered_on": date(2020, 1, 1),
            "statuses": [{"status": "active", "effective_from": "2020-01-01"}],
            "attributes": [
                {"effective_from": "2020-01-01", "lodging_class": lodging_class, "casino": casino}
            ],
            "as_of": datetime(2026, 1, 1, tzinfo=UTC),
        },
    )


#: the golden request's lines with its adjustments, some zero lines sent as "0" and "0.00"
BODY: dict[str, Any] = {
    "lodging": "PR-0000001-0",
    "period": "2026-10",
    **GOLDEN_BODY,
    **EXTRA,
    "paid_unused_rooms": "0",
    "room_penalties": "0.00",
    "resort_and_other_fees": "25.5",
    "declared": {"tax": "111.00", "line_total": "0"},
}
_BODY = DeclarationCreate.model_validate(BODY)
_ROW = ScheduleRow.model_validate({"tax_account": "PR-0000001-0", "room_revenue": "10.00"})
_VI_ROW = ScheduleRow.model_validate(
    {
        "tax_account": "VI-0000001-0",
        "room_revenue": "800.00",
        "intermediary_retained": "200",
        "room_nights": 4,
        "timeshare_owner_unit_days": 2,
        "tax_itemized": False,
        "exemption": "vi_timeshare_owner",
        "exempt_amount": "100",
        "declared_taxable_base": "700.00",
        "declared_tax": "87.50",
        "declared_impact_fee": "50.00",
        "declared_total": "137.5",
    }
)
CASES: dict[str, tuple[Lodging, DeclaredLines, DeclaredFigures]] = {
    "a request's body": (_lodging(casino=True), _BODY, _BODY.declared),
    "a schedule row, zero lines left out": (_lodging(), _ROW.lines(), _ROW.declared()),
    "a VI timeshare row with an exemption and every figure": (
        _lodging("VI", "timeshare"),
        _VI_ROW.lines(),
        _VI_ROW.declared(),
    ),
}


def _recompute(lodging: Lodging, lines: DeclaredLines, declared: DeclaredFigures) -> compute.Recomputed:
    return compute.recompute(
        lodging=lodging,
        period=PERIOD,
        lines=lines,
        declared=declared,
        certificates={("pr_film_production", "PRTC-FILM-1")},
        parameters=default_tree(),
        today=date(2026, 12, 1),
    )


def _validated(lodging: Lodging, lines: DeclaredLines, exempt: list[Any]) -> DeclarationInput:
    """The input as ``recompute`` built it before: every value validated again."""
    return DeclarationInput(
        jurisdiction=lodging.jurisdiction,
        lodging_class=lodging.lodging_class,
        casino=lodging.casino,
        period=str(PERIOD),
        **{f: getattr(lines, f) for f in compute.LINE_FIELDS if f != "exempt"},
        exempt=exempt,
    )


@pytest.mark.parametrize("case", list(CASES))
def test_the_input_and_figures_are_those_validation_builds(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lodging, lines, declared = CASES[case]
    seen: list[tuple[DeclarationInput, check.DeclaredFigures]] = []
    review = check.review_declaration

    def reviewing(inp: DeclarationInput, figures: check.DeclaredFigures, **kwargs: Any) -> check.Review:
        seen.append((inp, figures))
        return review(inp, figures, **kwargs)

    monkeypatch.setattr(check, "review_declaration", reviewing)
    rec = _recompute(lodging, lines, declared)
    ((inp, figures),) = seen
    expected = _validated(lodging, lines, list(inp.exempt))
    assert inp == expected
    assert inp.model_dump_json() == expected.model_dump_json()
    assert inp.model_fields_set == expected.model_fields_set
    assert [type(v) for v in vars(inp).values()] == [type(v) for v in vars(expected).values()]
    assert rec.input is inp
    assert inp.comp_rooms is not lines.comp_rooms  # the model's own list, as validation copies it
    expected_figures = check.DeclaredFigures(**declared.model_dump())
    assert figures == expected_figures
    assert figures.model_dump_json() == expected_figures.model_dump_json()
    submitted = lines.model_dump(mode="json", include=set(DeclaredLines.model_fields))
    assert to_json(rec.submitted) == to_json(submitted)  # the same keys in the same order
    assert to_json(json_values(inp)) == to_json(inp.model_dump(mode="json"))
    findings = review(inp, figures, parameters=default_tree(), today=date(2026, 12, 1)).findings
    assert findings
    for finding in findings:
        assert to_json(json_values(finding)) == to_json(finding.model_dump(mode="json"))
    # the findings' JSON as their serializer gives it (keys, order, amounts' strings)
    dumped = [finding.model_dump(mode="json") for finding in findings]
    for item, dump in zip(rec.findings, dumped, strict=True):
        if "certificate" in item["message"] and "not a" in item["message"]:
            dump["message"] = item["message"]  # the unverified certificate's own message
    assert to_json(rec.findings) == to_json(dumped)


def test_an_uncertified_exemption_loses_its_evidence_in_the_input_only() -> None:
    lodging, lines, declared = CASES["a request's body"]
    rec = _recompute(lodging, lines, declared)
    assert [(e.amount, e.evidence) for e in rec.input.exempt] == [
        (Decimal("100.00"), "PRTC-FILM-1"),
        (Decimal("50.00"), None),
    ]
    assert [e["evidence"] for e in rec.submitted["exempt"]] == ["PRTC-FILM-1", "PRTC-UNKNOWN"]
    assert rec.input.model_dump(mode="json")["paid_unused_rooms"] == "0.00"
    _, row_lines, row_declared = CASES["a schedule row, zero lines left out"]
    assert (
        _recompute(_lodging(), row_lines, row_declared).input.model_dump(mode="json")["room_penalties"] == "0"
    )


def test_built_refuses_a_model_it_cannot_build() -> None:
    from pydantic import BaseModel, PrivateAttr

    class Private(BaseModel):
        a: int
        _b: int = PrivateAttr(default=0)

    with pytest.raises(TypeError, match="is not built without validation"):
        built(Private, {"a": 1})

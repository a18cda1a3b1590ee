"""The review's small models built without validating them again (issue 12): the very
instances validation builds, and what validation refuses still refused the same way."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from taxcore.rules import check, declaration
from taxcore.rules.check import DeclaredFigures, Finding, Review, review_declaration
from taxcore.rules.declaration import DeclarationInput, DeclarationResult, ExemptAmount

D = Decimal


def _same(built: BaseModel, cls: type[BaseModel]) -> None:
    validated = cls(**built.__dict__)
    assert type(built) is cls
    assert list(built.__dict__.items()) == list(validated.__dict__.items())  # values and order
    assert built.__pydantic_fields_set__ == validated.__pydantic_fields_set__
    assert built.__pydantic_extra__ is None
    assert built.__pydantic_private__ is None
    assert built == validated
    assert built.model_dump(mode="json") == validated.model_dump(mode="json")
    with pytest.raises(ValidationError):  # as frozen
        built.__setattr__(next(iter(built.__dict__)), None)


CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {"taxable_base": D("1000.00"), "tax": D("90.00")}),
    ({}, {"taxable_base": None, "tax": None, "total": D("1.00"), "line_total": D("5.00")}),
    (
        {
            "exempt": [
                ExemptAmount(exemption="pr_film_production", amount=D("2000.00")),
                ExemptAmount(exemption="pr_timeshare", amount=D("10.00")),
            ]
        },
        {"taxable_base": D("0.00"), "tax": D("0.00")},
    ),
    ({"room_nights": 0}, {"taxable_base": D("999.99"), "tax": D("95.00")}),
]


@pytest.mark.parametrize(("lines", "figures"), CASES)
def test_the_instances_validation_builds(lines: dict[str, Any], figures: dict[str, Any]) -> None:
    values: dict[str, Any] = {
        "jurisdiction": "PR",
        "lodging_class": "hotel",
        "period": "2026-03",
        "room_revenue": D("1000.00"),
        "room_nights": 10,
    }
    inp = DeclarationInput(**(values | lines))
    review = review_declaration(inp, DeclaredFigures(**figures))
    _same(review, Review)
    _same(review.result, DeclarationResult)
    for finding in review.findings:
        _same(finding, Finding)


@pytest.mark.parametrize("value", [D("NaN"), D("Infinity"), D("-Infinity"), D("sNaN"), 1.5, "2.50", 3])
def test_what_validation_refuses_is_refused(value: Any) -> None:
    """Not a finite ``Decimal``: validated, refused (or converted) as ``Finding(...)`` does."""
    try:
        expected: Finding | list[Any] = Finding(
            code="omission", line="tax", message="m", declared=value, computed=None, section="§1"
        )
    except ValidationError as exc:
        expected = exc.errors()
    try:
        got: Finding | list[Any] = check._new_finding("omission", "tax", "m", value, None, "§1")
    except ValidationError as exc:
        got = exc.errors()
    if isinstance(expected, Finding):
        assert isinstance(got, Finding)
        assert got.__dict__ == expected.__dict__
        assert type(got.declared) is Decimal
    else:
        assert got == expected


def test_a_str_subclass_is_validated() -> None:
    class Code(str):
        pass

    finding = check._new_finding(Code("omission"), "tax", "m", None, D("1.00"), "§1")
    assert type(finding.code) is str  # what validation gives


def test_a_result_not_finite_is_refused_by_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A figure that is not finite (a NaN rate parameter would give one) is refused as
    ``DeclarationResult(...)`` refuses it: a ``ValidationError`` naming the field."""
    monkeypatch.setattr(declaration, "room_tax", lambda *args: D("NaN"))
    inp = DeclarationInput(jurisdiction="PR", lodging_class="hotel", period="2026-03")
    with pytest.raises(ValidationError) as exc:
        declaration.compute_declaration(inp)
    assert [(e["loc"], e["type"]) for e in exc.value.errors()] == [
        (("tax",), "finite_number"),
        (("total_due",), "finite_number"),
    ]

"""A new version's 201 body and its event payload are written from the row without the models:
the same bytes as ``DeclarationOut`` of ``to_out`` serialized (what the route's response model
gives), the same JSON as the event contract validated and dumped."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from filing.declarations.endpoints import created_json, to_out
from filing.declarations.repository import loaded
from filing.declarations.schemas import DeclarationOut
from filing.declarations.service import event_data
from filing.models import Declaration
from taxcore.events import filing as ev
from taxcore.money import MoneyError, fmt

ROW: dict[str, Any] = {
    "seq": 7,
    "id": "d-1",
    "filing_id": "f-1",
    "version": 2,
    "supersedes": "d-0",
    "lodging_id": "l-1",
    "tax_account": "PR-0000001-0",
    "jurisdiction": "PR",
    "lodging_class": "hotel",
    "casino": False,
    "period": "2026-10",
    "filer_kind": "operator",
    "filer_id": "op-1",
    "schedule_id": None,
    "schedule_row": None,
    "filed_on": date(2026, 11, 3),
    "due_date": date(2026, 11, 10),
    "late": False,
    "flagged": True,
    "books_kept": True,
    "submitted": {"room_revenue": "1234.00", "room_nights": 5, "exempt": []},
    "input": {"jurisdiction": "PR", "room_revenue": "1234.00", "exempt": [{"amount": "1.5"}]},
    "gross_receipts": Decimal("1326.50"),
    "exempt_total": Decimal("0.00"),
    "taxable_base": Decimal("1326.50"),
    "rate": Decimal("0.0900"),
    "tax": Decimal("119.39"),
    "impact_fee": Decimal("0.00"),
    "total_due": Decimal("119.39"),
    "declared_taxable_base": None,
    "declared_tax": Decimal("111.00"),
    "declared_impact_fee": None,
    "declared_total": None,
    "declared_line_total": Decimal("10"),
    "findings": [
        {
            "code": "omission",
            "line": "taxable_base",
            "message": "taxable base left blank",
            "declared": None,
            "computed": "1326.50",
            "section": "§2(18)(iii)",
        },
        {
            "code": "tax_understated",
            "line": "tax",
            "message": "declared tax 111.00",
            "declared": "111.00",
            "computed": "119.39",
            "section": "§32",
        },
        {"code": "arithmetic", "line": "total", "message": "m", "computed": "-5.5", "section": "s"},
    ],
    "trace": [{"rule": "rate"}],
    "submitted_by": "client-1",
    "created_at": datetime(2026, 11, 3, 14, 5, 6, 789, tzinfo=UTC),
}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"declared_tax": None, "findings": [], "late": True, "supersedes": None, "version": 1},
        {"schedule_id": "s-1", "schedule_row": 12, "filer_kind": "facilitator", "rate": Decimal("0.125")},
        {"declared_tax": Decimal("200.00"), "created_at": datetime(2026, 11, 3, tzinfo=UTC), "casino": True},
    ],
)
def test_created_json_is_the_models_bytes(changes: dict[str, Any]) -> None:
    row = {**ROW, **changes}
    expected = DeclarationOut.__pydantic_serializer__.to_json(
        to_out(loaded(Declaration, row), latest=True), by_alias=True
    )
    assert created_json(row, event_data(row)) == expected


@pytest.mark.parametrize("changes", [{}, {"findings": [], "supersedes": None}, {"schedule_id": "s-1"}])
def test_event_data_is_the_contracts_json(changes: dict[str, Any]) -> None:
    """The event payload taken from the row is what the contract validated and dumped gives,
    its findings' amounts with two decimals (a zero sum is ``"0"`` in taxcore's dump)."""
    row = {**ROW, **changes}
    row["findings"] = [*row["findings"], {**ROW["findings"][0], "computed": "0", "declared": "5"}]
    data = event_data(row)
    contract = ev.DeclarationAmended if row["supersedes"] else ev.DeclarationFiled
    assert data == contract.model_validate({**data, "findings": row["findings"]}).model_dump(mode="json")
    assert data["findings"][-1]["computed"] == "0.00"
    assert list(data) == list(contract.model_fields)


@pytest.mark.parametrize(
    "amount",
    ["0", "5", "1.5", "0.00", "1054.00", "-5.25", "-0.50", "01.00", "1234567890123456.00", Decimal("-3.10")],
)
def test_finding_amounts_as_the_contract_writes_them(amount: Any) -> None:
    """A finding's amount already written with two decimals is kept as it is; any other is
    parsed and formatted: both as the contract's ``SignedMoney`` dumps it."""
    finding = {**ROW["findings"][0], "declared": amount, "computed": None}
    data = event_data({**ROW, "findings": [finding]})
    dumped = ev.DeclarationFiled.model_validate({**data, "findings": [finding]}).model_dump(mode="json")
    assert data["findings"] == dumped["findings"]
    assert data["findings"][0]["declared"] == fmt(Decimal(amount))


def test_a_negative_zero_finding_is_still_refused() -> None:
    finding = {**ROW["findings"][0], "declared": "-0.00"}
    with pytest.raises(MoneyError):
        event_data({**ROW, "findings": [finding]})

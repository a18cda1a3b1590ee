"""Case-work builders: a disputed notice (which opens a case), the people who work it."""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
import pytest
from assessment_factories import ADMIN, CLOCK, Bus, new_account

from servicekit.testing import auth

MAKER = auth("agency-officer", user_id="u-maker")


def today_is(monkeypatch: pytest.MonkeyPatch, day: date) -> None:
    """Move the suite's clock (the app's and the consumers') to ``day`` for this test."""
    monkeypatch.setattr(CLOCK, "day", day)


async def disputed(
    client: httpx.AsyncClient, bus: Bus, operator_id: str = "op-c", responded_on: str = "2025-03-10"
) -> tuple[str, dict[str, Any]]:
    account = new_account()
    await bus.lodging(account, operator_id=operator_id)
    await bus.declare(account, "2025-01", filer_id=operator_id)
    r = await client.post(
        "/v1/notices",
        json={"tax_account": account, "period": "2025-01", "reason": "unpaid", "issued_on": "2025-03-01"},
        headers=ADMIN,
    )
    assert r.status_code == 201, r.text
    notice = r.json()
    await bus.pay(account, "4046.85", date(2025, 3, 10), periods={"2025-01": "4046.85"})
    r = await client.post(
        f"/v1/notices/{notice['id']}/responses",
        json={
            "kind": "dispute",
            "disputed_amount": "5000.00",
            "responded_on": responded_on,
            "statement": "comps",
        },
        headers=auth("operator", operator_id=operator_id),
    )
    assert r.status_code == 201, r.text
    cases = await client.get("/v1/cases", params={"tax_account": account}, headers=MAKER)
    assert cases.status_code == 200, cases.text
    [case] = cases.json()
    return account, case

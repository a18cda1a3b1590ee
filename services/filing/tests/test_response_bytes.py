"""The exact bytes ``POST /v1/declarations`` and its amendments answer (issue 12: the hot
route may be rebuilt for speed, its answers may not change).

Each case posts one request and compares the whole response body, byte for byte, with
``golden/<case>.txt`` (with the values a test run draws at random, ids and timestamps,
replaced by their names), its status and its content type and language. The outbox payload
of a filed declaration is pinned the same way. Run with ``ROOMTAX_WRITE_GOLDEN=1`` to
rewrite the files (then read the diff: it is a change of the API).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest
from filing_factories import DB, as_operator, certify, make_lodging, outbox

from servicekit.testing import pin_today as pin_app_today

GOLDEN = Path(__file__).resolve().parent / "golden"
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")

#: the wrk body of bench/declarations.lua (10 lines), with an exemption and a comp valuation
BODY: dict[str, Any] = {
    "room_revenue": "1234.00",
    "paid_unused_rooms": "40.00",
    "room_penalties": "15.00",
    "resort_and_other_fees": "25.00",
    "surcharges_and_service_charges": "12.50",
    "intermediary_retained": "150.00",
    "all_inclusive_global_charges": "0.00",
    "room_nights": 5,
    "timeshare_owner_unit_days": 0,
    "tax_itemized": True,
    "declared": {"tax": "111.00"},
}
EXTRA: dict[str, Any] = {
    "exempt": [
        {"exemption": "pr_film_production", "amount": "100.00", "evidence": "PRTC-FILM-1"},
        {"exemption": "pr_film_production", "amount": "50.00", "evidence": "PRTC-UNKNOWN"},
    ],
    "comp_rooms": [
        {
            "kind": "comp",
            "room_nights": 2,
            "average_daily_rate": "180.00",
            "room_cost": "95.00",
            "industry_cost": "150.00",
        }
    ],
}


def normalized(text: str, names: dict[str, str]) -> str:
    for value, name in names.items():
        text = text.replace(value, f"<{name}>")
    return TIMESTAMP.sub("<timestamp>", text)


def check(case: str, response: httpx.Response, names: dict[str, str]) -> None:
    got = (
        f"{response.status_code} {response.headers.get('content-type')} "
        f"{response.headers.get('content-language')}\n" + normalized(response.text, names) + "\n"
    )
    path = GOLDEN / f"{case}.txt"
    if os.environ.get("ROOMTAX_WRITE_GOLDEN"):
        path.write_text(got)
    assert got == path.read_text()


@pytest.fixture
async def hotel(db: DB, client: httpx.AsyncClient, service_app: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    pin_app_today(monkeypatch, service_app, date(2026, 12, 1))
    lodging = await make_lodging(db, registered_on=date(2026, 1, 1))
    await certify(db, lodging, "PRTC-FILM-1", date(2026, 1, 1), date(2026, 12, 31))
    return lodging


def names_of(lodging: Any, *declarations: httpx.Response) -> dict[str, str]:
    names = {
        lodging.lodging_id: "lodging_id",
        lodging.tax_account: "tax_account",
        lodging.operator_id: "operator",
    }
    for i, r in enumerate(declarations):
        if r.status_code == 201:
            names[r.json()["id"]] = f"declaration_{i + 1}"
            names[r.json()["filing_id"]] = "filing_id"
    return names


class TestResponseBytes:
    async def test_new_declaration(self, client: httpx.AsyncClient, hotel: Any, db: DB) -> None:
        body = {"lodging": hotel.tax_account, "period": "2026-10", **BODY}
        r = await client.post("/v1/declarations", json=body, headers=as_operator(hotel.operator_id))
        check("new", r, names_of(hotel, r))
        events = await outbox(db, hotel.tax_account)
        payload = events[-1][1]
        payload["id"] = "<event>"
        check_payload = httpx.Response(200, text=json.dumps(payload, sort_keys=True))
        check("new_event", check_payload, names_of(hotel, r))

    async def test_explain_and_adjustments(self, client: httpx.AsyncClient, hotel: Any) -> None:
        body = {"lodging": hotel.lodging_id, "period": "2026-09", **BODY, **EXTRA}
        r = await client.post(
            "/v1/declarations?explain=true", json=body, headers=as_operator(hotel.operator_id)
        )
        check("explain", r, names_of(hotel, r))
        stored = await client.get(
            f"/v1/declarations/{r.json()['id']}?explain=true", headers=as_operator(hotel.operator_id)
        )
        assert stored.json() == r.json()  # the trace as stored (jsonb orders keys its own way)

    async def test_keyed_and_replayed(self, client: httpx.AsyncClient, hotel: Any) -> None:
        headers = {**as_operator(hotel.operator_id), "Idempotency-Key": "k-bytes-1"}
        body = {"lodging": hotel.tax_account, "period": "2026-07", **BODY}
        r = await client.post("/v1/declarations", json=body, headers=headers)
        check("keyed", r, names_of(hotel, r))
        replay = await client.post("/v1/declarations", json=body, headers=headers)
        assert replay.content == r.content
        assert replay.headers["idempotent-replayed"] == "true"
        other = await client.post("/v1/declarations", json={**body, "room_nights": 6}, headers=headers)
        check("keyed_other_body", other, names_of(hotel, r))

    async def test_amendments(self, client: httpx.AsyncClient, hotel: Any) -> None:
        headers = as_operator(hotel.operator_id)
        body = {"lodging": hotel.tax_account, "period": "2026-08", **BODY}
        first = await client.post("/v1/declarations", json=body, headers=headers)
        second = await client.post(
            "/v1/declarations", json={**body, "room_revenue": "2000.00"}, headers=headers
        )
        amend = {k: v for k, v in body.items() if k not in ("lodging", "period")}
        third = await client.post(
            f"/v1/declarations/{second.json()['id']}/amendments", json=amend, headers=headers
        )
        stale = await client.post(
            f"/v1/declarations/{first.json()['id']}/amendments", json=amend, headers=headers
        )
        names = names_of(hotel, first, second, third)
        check("amend_second", second, names)
        check("amend_third", third, names)
        check("amend_stale", stale, names)

    @pytest.mark.parametrize(
        ("case", "change", "language"),
        [
            ("bad_money_es", {"room_revenue": "12.345"}, "es"),
            ("bad_money_en", {"room_revenue": "abc"}, None),
            ("missing_lodging", {"lodging": None}, None),
            ("extra_field", {"declared": {"tax": "1.00", "bogus": 1}}, "es"),
            ("bad_period", {"period": "2026-13"}, "es"),
            ("future_period", {"period": "2026-12"}, "es"),
            ("foreign_lodging", {"lodging": "PR-0000000-9"}, None),
        ],
    )
    async def test_refused(
        self, client: httpx.AsyncClient, hotel: Any, case: str, change: dict[str, Any], language: str | None
    ) -> None:
        body = {"lodging": hotel.tax_account, "period": "2026-10", **BODY, **change}
        body = {k: v for k, v in body.items() if v is not None}
        headers = as_operator(hotel.operator_id)
        if language:
            headers["Accept-Language"] = language
        r = await client.post("/v1/declarations", json=body, headers=headers)
        check(case, r, names_of(hotel))

    async def test_not_json_and_no_token(self, client: httpx.AsyncClient, hotel: Any) -> None:
        headers = {**as_operator(hotel.operator_id), "Content-Type": "application/json"}
        r = await client.post("/v1/declarations", content=b'{"lodging": ', headers=headers)
        check("not_json", r, names_of(hotel))
        body = {"lodging": hotel.tax_account, "period": "2026-10", **BODY}
        r = await client.post("/v1/declarations", json=body)
        check("no_token", r, names_of(hotel))
        other = as_operator("op-someone-else")
        r = await client.post("/v1/declarations", json=body, headers=other)
        check("other_operator", r, names_of(hotel))

    async def test_a_chunked_body_past_the_limit(self, client: httpx.AsyncClient, hotel: Any) -> None:
        """Read by the direct handler: the same 413 as the route's (the body is not offered to
        the route a second time)."""

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(17):
                yield b" " * 65_536

        headers = {**as_operator(hotel.operator_id), "Content-Type": "application/json"}
        for path in ("/v1/declarations", "/v1/declarations/some-id/amendments"):
            r = await client.post(path, content=chunks(), headers=headers)
            assert "content-length" not in r.request.headers
            assert (r.status_code, r.headers["content-type"]) == (413, "application/problem+json")
            assert r.json()["errors"] == [{"pointer": "#/body", "detail": "at most 1048576 bytes"}]

"""Risk scores: every VI lodging ranked with each factor explained (agency only), audits from it."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import httpx
from assessment_factories import ADMIN, AUDITOR, Bus, new_account, statement

from servicekit.testing import auth
from taxcore.money import round_cents

OPERATOR = auth("operator", operator_id="op-rk")


async def scores(client: httpx.AsyncClient, headers: dict[str, str] = AUDITOR) -> list[dict[str, Any]]:
    r = await client.get(
        "/v1/risk-scores", params={"jurisdiction": "VI", "as_of": "2026-11-30"}, headers=headers
    )
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def points(row: dict[str, Any]) -> dict[str, str]:
    return {f["factor"]: f["points"] for f in row["factors"]}


class TestRiskScores:
    async def test_ranked_with_reasons_and_an_audit_opened_from_the_list(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        risky, clean = new_account("VI"), new_account("VI")
        for account in (risky, clean):
            await bus.lodging(account, jurisdiction="VI", operator_id="op-rk")
        # risky: 2026-03 filed 15 days late (due 2026-04-30), 2,000.00 below what the OTA reported
        await bus.declare(
            risky,
            "2026-03",
            jurisdiction="VI",
            filer_id="op-rk",
            filed_on=date(2026, 5, 15),
            lines={"room_revenue": "8000.00", "room_nights": 40},
        )
        await bus.declare(
            risky,
            "2026-03",
            jurisdiction="VI",
            filer_kind="facilitator",
            filer_id="ota-rk",
            lines={"room_revenue": "10000.00", "room_nights": 45},
        )
        # clean: on time and paid in full
        await bus.declare(
            clean,
            "2026-03",
            jurisdiction="VI",
            filer_id="op-rk",
            lines={"room_revenue": "8000.00", "room_nights": 40},
        )
        await bus.pay(clean, "1000.00", date(2026, 4, 20), jurisdiction="VI", periods={"2026-03": "1000.00"})
        owed = Decimal((await statement(client, risky, "2026-11-30"))["totals"]["balance"])
        arrears_points = round_cents(min(owed / 1000, Decimal(100)))

        rows = await scores(client)
        assert [r["tax_account"] for r in rows] == [risky, clean]
        top = rows[0]
        assert points(top) == {
            "findings": "5.00",  # one intermediary shortfall
            "late": "3.00",  # one period filed late
            "gap": "4.00",  # 2 (thousands) x 2
            "adr": "0.00",
            "arrears": f"{arrears_points:.2f}",
            "months_since_audit": "18.00",  # never audited: the cap, 36 x 0.5
        }
        assert top["score"] == f"{Decimal('30.00') + arrears_points:.2f}"
        assert top["reasons"][0] == "never audited (counted at the cap): 0.5 x min(36.00, 36) = 18.00"
        assert top["window"] == {"from": "2024-11", "to": "2026-10", "as_of": "2026-11-30"}
        assert (rows[1]["score"], rows[1]["reasons"]) == (
            "18.00",
            ["never audited (counted at the cap): 0.5 x min(36.00, 36) = 18.00"],
        )
        # open an audit straight from the row, then close it: the lodging's audit factor drops to 0
        r = await client.post(top["open_audit"]["href"], json=top["open_audit"]["body"], headers=ADMIN)
        assert r.status_code == 201, r.text
        audit = r.json()
        assert (audit["periods"], audit["source"]) == (["2026-03"], "risk_score")
        r = await client.post(
            f"/v1/audits/{audit['id']}/close",
            json={"outcome": "no_change", "note": "explained"},
            headers=ADMIN,
        )
        assert r.status_code == 200, r.text
        after = {r["tax_account"]: r for r in await scores(client)}
        assert points(after[risky])["months_since_audit"] == "0.00"
        assert after[risky]["score"] == f"{Decimal('12.00') + arrears_points:.2f}"

    async def test_agency_only_and_a_known_jurisdiction(self, client: httpx.AsyncClient) -> None:
        for who in (OPERATOR, auth("facilitator", facilitator_id="f-rk")):
            r = await client.get("/v1/risk-scores", params={"jurisdiction": "VI"}, headers=who)
            assert r.status_code == 403
        await scores(client, auth("dashboard"))
        r = await client.get("/v1/risk-scores", params={"jurisdiction": "XX"}, headers=AUDITOR)
        assert (r.status_code, r.json()["errors"][0]["pointer"]) == (422, "#/query/jurisdiction")

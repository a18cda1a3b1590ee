"""Dashboard reads over the materialized account summaries (balances as of today, pinned 2026-11-30)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
from assessment_factories import AUDITOR, Bus, new_account, statement

from servicekit.testing import auth


class TestDashboards:
    async def test_aging_delinquents_and_monthly(self, client: httpx.AsyncClient, bus: Bus) -> None:
        old = new_account()  # PR 2025-01 due 2025-02-10: 658 days past due on 2026-11-30
        mid = new_account()  # PR 2026-09 due 2026-10-10: 51 days
        cur = new_account("VI")  # VI 2026-10 due 2026-11-30: due today, current
        for acct, jur in ((old, "PR"), (mid, "PR"), (cur, "VI")):
            await bus.lodging(acct, jurisdiction=jur)
        await bus.declare(old, "2025-01")
        await bus.pay(old, "1000.00", date(2025, 3, 1))
        await bus.declare(mid, "2026-09", room_revenue="50000.00")
        await bus.declare(cur, "2026-10", jurisdiction="VI", room_revenue="8000.00")
        owed = {
            a: Decimal((await statement(client, a, "2026-11-30"))["totals"]["balance"])
            for a in (old, mid, cur)
        }
        assert owed[cur] == Decimal("1000.00")  # 12.5% of 8,000, not yet late

        r = await client.get("/v1/dashboard/aging", params={"as_of": "2026-11-30"}, headers=AUDITOR)
        assert r.status_code == 200, r.text
        by = {(x["jurisdiction"], x["lodging_class"]): x for x in r.json()["rows"]}
        pr = by[("PR", "hotel")]
        assert Decimal(pr["over_365"]) == owed[old]
        assert Decimal(pr["days_31_90"]) == owed[mid]
        assert pr["current"] == "0.00"
        assert pr["accounts"] == 2
        vi = by[("VI", "hotel")]
        assert Decimal(vi["current"]) == owed[cur]
        assert Decimal(r.json()["totals"]["total"]) == sum(owed.values())

        d = await client.get(
            "/v1/dashboard/delinquents", params={"as_of": "2026-11-30", "limit": 1}, headers=AUDITOR
        )
        first = d.json()
        assert [x["tax_account"] for x in first["items"]] == [old]
        d2 = await client.get(
            "/v1/dashboard/delinquents",
            params={"as_of": "2026-11-30", "limit": 1, "cursor": first["next_cursor"]},
            headers=AUDITOR,
        )
        assert [x["tax_account"] for x in d2.json()["items"]] == [mid]
        assert d2.json()["next_cursor"] is None  # the VI account is not past due

        m = await client.get(
            "/v1/dashboard/monthly", params={"from": "2025-01", "to": "2025-03"}, headers=AUDITOR
        )
        months = {x["month"]: x for x in m.json()}
        assert months["2025-03"]["collected"] == "1000.00"
        old_assessed = (await statement(client, old, "2026-11-30"))["totals"]["total_assessed"]
        assert months["2025-01"]["assessed"] == old_assessed

        denied = await client.get("/v1/dashboard/aging", headers=auth("operator", operator_id="op-1"))
        assert denied.status_code == 403

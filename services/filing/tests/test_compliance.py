from __future__ import annotations

from datetime import date

import httpx
from filing_factories import (
    ADMIN,
    DASHBOARD,
    DB,
    as_operator,
    authorize,
    change_status,
    declaration,
    file,
    make_lodging,
    new_id,
)


class TestComplianceSummary:
    async def test_counts_on_time_late_and_not_filed(self, client: httpx.AsyncClient, db: DB) -> None:
        on_time = await make_lodging(db, name="On time")
        late = await make_lodging(db, name="Late")
        missing = await make_lodging(db, name="Never filed")
        by_ota = await make_lodging(db, name="Filed by its OTA only")
        ota_then_late = await make_lodging(db, name="OTA on time, operator late")
        closed = await make_lodging(db, name="Closed all month")
        await change_status(db, closed, "closed", date(2026, 9, 30))
        await make_lodging(db, name="Registered after the period", registered_on=date(2026, 11, 2))
        await make_lodging(db, jurisdiction="VI", name="Other jurisdiction")
        fac = new_id("fac")
        await authorize(db, by_ota, fac)
        await authorize(db, ota_then_late, fac)

        def on(lodging_id: str, kind: str = "operator") -> dict[str, str]:
            return {"kind": kind, "id": lodging_id}

        await file(
            client,
            declaration(
                on_time, filer=on(on_time.operator_id), received_on="2026-11-10", declared={"tax": "1.00"}
            ),
            ADMIN,
        )
        await file(client, declaration(late, filer=on(late.operator_id), received_on="2026-11-12"), ADMIN)
        # an amendment after the due date does not make an on-time filing late
        await file(client, declaration(late, filer=on(late.operator_id), received_on="2026-11-20"), ADMIN)
        # an intermediary's schedule meets only its own obligation (obligations.declaration_filers)
        await file(client, declaration(by_ota, filer=on(fac, "facilitator"), received_on="2026-11-02"), ADMIN)
        await file(
            client, declaration(ota_then_late, filer=on(fac, "facilitator"), received_on="2026-11-02"), ADMIN
        )
        await file(
            client,
            declaration(ota_then_late, filer=on(ota_then_late.operator_id), received_on="2026-11-15"),
            ADMIN,
        )
        r = await client.get(
            "/v1/compliance", params={"jurisdiction": "PR", "period": "2026-10"}, headers=DASHBOARD
        )
        assert r.status_code == 200, r.text
        out = r.json()
        assert (
            out["required"],
            out["filed_on_time"],
            out["filed_late"],
            out["not_filed"],
            out["flagged"],
        ) == (5, 1, 2, 2, 1)
        assert out["due_date"] == "2026-11-10"
        assert out["late_accounts"] == [late.tax_account, ota_then_late.tax_account]
        assert out["not_filed_accounts"] == [missing.tax_account, by_ota.tax_account]

    async def test_operators_cannot_read_it_and_bad_input_is_422(self, client: httpx.AsyncClient) -> None:
        params = {"jurisdiction": "PR", "period": "2026-10"}
        assert (
            await client.get("/v1/compliance", params=params, headers=as_operator("op"))
        ).status_code == 403
        bad = await client.get("/v1/compliance", params={**params, "jurisdiction": "XX"}, headers=ADMIN)
        assert bad.status_code == 422

    async def test_suspended_lodgings_follow_the_one_obligation_rule(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        """taxcore.obligations.must_file, the rule assessment's non-filer job applies: a lodging
        suspended for the whole month owes no return; one active on some day of it does."""
        start = ("active", date(2026, 1, 1))
        await make_lodging(
            db, name="Suspended all October", statuses=[start, ("suspended", date(2026, 9, 15))]
        )
        middle = await make_lodging(
            db,
            name="Active only mid-October",
            statuses=[
                start,
                ("suspended", date(2026, 9, 1)),
                ("active", date(2026, 10, 10)),
                ("suspended", date(2026, 10, 20)),
            ],
        )
        r = await client.get(
            "/v1/compliance", params={"jurisdiction": "PR", "period": "2026-10"}, headers=DASHBOARD
        )
        assert r.status_code == 200, r.text
        out = r.json()
        assert (out["required"], out["not_filed_accounts"]) == (1, [middle.tax_account])

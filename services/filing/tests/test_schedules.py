from __future__ import annotations

import httpx
import pytest
from filing_factories import (
    ADMIN,
    DB,
    as_facilitator,
    as_operator,
    authorize,
    make_lodging,
    new_id,
    outbox,
    scalar,
)

from filing.schedules import service as schedules_service


class TestRemittanceSchedule:
    async def test_partial_acceptance_reports_each_row(self, client: httpx.AsyncClient, db: DB) -> None:
        fac = new_id("fac")
        mine = await make_lodging(db, name="Authorizes the OTA")
        mine_vi = await make_lodging(db, jurisdiction="VI", name="VI hotel")
        third = await make_lodging(db, name="Third")
        other = await make_lodging(db, name="Does not")
        for lodging in (mine, mine_vi, third):
            await authorize(db, lodging, fac)
        rows = [
            {
                "tax_account": mine.tax_account,
                "room_revenue": "1000.00",
                "room_nights": 5,
                "intermediary_retained": "150.00",
                "declared_tax": "90.00",
            },
            {"tax_account": other.tax_account, "room_revenue": "500.00", "room_nights": 2},
            {"tax_account": "PR-0000000-0", "room_revenue": "500.00", "room_nights": 2},
            {"tax_account": third.tax_account, "room_revenue": "-1.00", "room_nights": 2},
            {
                "tax_account": mine_vi.tax_account,
                "room_revenue": "800.00",
                "room_nights": 4,
                "intermediary_retained": "200.00",
                "declared_tax": "100.00",
            },
            {"room_revenue": "1.00"},
        ]
        r = await client.post(
            "/v1/remittance-schedules", json={"period": "2026-10", "rows": rows}, headers=as_facilitator(fac)
        )
        assert r.status_code == 201, r.text
        out = r.json()
        assert (out["status"], out["rows"], out["accepted"], out["rejected"]) == (
            "partially_accepted",
            6,
            2,
            4,
        )
        by_row = {x["row"]: x for x in out["results"]}
        assert [x["row"] for x in out["results"]] == [1, 2, 3, 4, 5, 6]
        assert (by_row[1]["status"], by_row[1]["tax"], by_row[1]["flagged"]) == ("accepted", "90.00", True)
        # the same reason whether the lodging exists or not: nothing leaks
        assert by_row[2]["errors"][0]["reason"].replace(other.tax_account, "X") == by_row[3]["errors"][0][
            "reason"
        ].replace("PR-0000000-0", "X")
        assert by_row[4]["errors"] == [
            {
                "field": "room_revenue",
                "reason": by_row[4]["errors"][0]["reason"],
                "code": "value_error",
            }
        ]
        # each reason has a stable code for clients to translate by (the same for both: no leak)
        assert [by_row[n]["errors"][0]["code"] for n in (2, 3, 6)] == [
            "not_authorized",
            "not_authorized",
            "missing",
        ]
        # VI taxes the guest-paid total, what the intermediary keeps included (§54(b)(1))
        assert (by_row[5]["status"], by_row[5]["tax"]) == ("accepted", "125.00")
        assert by_row[6]["errors"][0]["field"] == "tax_account"
        listed = await client.get("/v1/declarations", params={"schedule_id": out["id"]}, headers=ADMIN)
        items = listed.json()["items"]
        assert sorted(d["schedule_row"] for d in items) == [1, 5]
        assert {d["filer"]["id"] for d in items} == {fac}
        assert [t for t, _ in await outbox(db, mine.tax_account)] == ["roomtax.filing.declaration.filed.v1"]
        event = (await outbox(db, mine_vi.tax_account))[0][1]["data"]
        assert (event["schedule_id"], event["filer_kind"], event["tax"]) == (
            out["id"],
            "facilitator",
            "125.00",
        )
        again = await client.get(f"/v1/remittance-schedules/{out['id']}", headers=as_facilitator(fac))
        assert again.json()["results"] == out["results"]
        assert again.json() == out  # the 201 (written without a model per row) is the schedule as read
        assert (
            await client.get(f"/v1/remittance-schedules/{out['id']}", headers=as_facilitator(new_id("fac")))
        ).status_code == 404

    async def test_csv_upload_has_the_same_shape(self, client: httpx.AsyncClient, db: DB) -> None:
        fac = new_id("fac")
        a = await make_lodging(db)
        b = await make_lodging(db)
        await authorize(db, a, fac)
        document = (
            "tax_account,room_revenue,room_nights,resort_and_other_fees,declared_tax\n"
            f"{a.tax_account},1000.00,5,,90.00\n"
            f"{b.tax_account},2000.00,8,100.00,189.00\n"
            f"{a.tax_account},3000.00,9,,270.00\n"
        )
        r = await client.post(
            "/v1/remittance-schedules",
            params={"period": "2026-10"},
            content=document,
            headers={**as_facilitator(fac), "content-type": "text/csv"},
        )
        assert r.status_code == 201, r.text
        out = r.json()
        assert (out["source_format"], out["accepted"], out["rejected"]) == ("csv", 1, 2)
        assert out["results"][0]["tax"] == "90.00"
        assert "row 1" in out["results"][2]["errors"][0]["reason"]
        assert [e["code"] for r in out["results"][1:] for e in r["errors"]] == [
            "not_authorized",
            "duplicate_lodging",
        ]
        multipart = await client.post(
            "/v1/remittance-schedules",
            data={"period": "2026-10"},
            files={"file": ("schedule.csv", document.encode(), "text/csv")},
            headers=as_facilitator(fac),
        )
        assert multipart.status_code == 201, multipart.text
        second = multipart.json()
        assert second["accepted"] == 1
        assert second["results"][0]["version"] == 2  # resubmitting amends the facilitator's filing

    async def test_unknown_csv_column_rejects_the_document(self, client: httpx.AsyncClient, db: DB) -> None:
        r = await client.post(
            "/v1/remittance-schedules",
            params={"period": "2026-10"},
            content="tax_account,rooms\nPR-1,3\n",
            headers={**as_facilitator(new_id("fac")), "content-type": "text/csv"},
        )
        assert r.status_code == 422
        assert "rooms" in r.json()["detail"]
        assert await scalar(db, "SELECT count(*) FROM remittance_schedules") == 0

    async def test_operator_cannot_file_a_schedule_and_agency_must_name_the_facilitator(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        body = {"period": "2026-10", "rows": [{"tax_account": "PR-1"}]}
        r = await client.post("/v1/remittance-schedules", json=body, headers=as_operator("op-1"))
        assert r.status_code == 403
        r = await client.post("/v1/remittance-schedules", json=body, headers=ADMIN)
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/facilitator_id"
        r = await client.post(
            "/v1/remittance-schedules", json={"period": "26-10", "rows": []}, headers=as_facilitator("fac-1")
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/period"


class TestListSchedules:
    async def test_a_facilitator_lists_only_its_own_newest_first_without_rows(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        fac, other = new_id("fac"), new_id("fac")
        lodging = await make_lodging(db)
        await authorize(db, lodging, fac)
        ids = []
        for who, period in ((fac, "2026-09"), (other, "2026-09"), (fac, "2026-10")):
            row = {"tax_account": lodging.tax_account, "room_revenue": "100.00", "room_nights": 1}
            r = await client.post(
                "/v1/remittance-schedules",
                json={"period": period, "rows": [row]},
                headers=as_facilitator(who),
            )
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        mine = await client.get("/v1/remittance-schedules", headers=as_facilitator(fac))
        assert mine.status_code == 200, mine.text
        items = mine.json()["items"]
        assert [s["id"] for s in items] == [ids[2], ids[0]]
        assert [(s["period"], s["rows"], s["accepted"], s["rejected"], s["status"]) for s in items] == [
            ("2026-10", 1, 1, 0, "accepted"),
            ("2026-09", 1, 1, 0, "accepted"),
        ]
        assert "results" not in items[0]
        theirs = await client.get(
            "/v1/remittance-schedules", params={"facilitator_id": other}, headers=as_facilitator(fac)
        )
        assert theirs.json()["items"] == []
        # the other facilitator's schedule: its own only (rejected: the lodging never authorized it)
        seen = await client.get("/v1/remittance-schedules", headers=as_facilitator(other))
        assert [(s["id"], s["status"]) for s in seen.json()["items"]] == [(ids[1], "rejected")]
        by_period = await client.get(
            "/v1/remittance-schedules", params={"period": "2026-09", "limit": 1}, headers=as_facilitator(fac)
        )
        assert [s["id"] for s in by_period.json()["items"]] == [ids[0]]

    async def test_the_agency_pages_through_everyone_and_an_operator_is_refused(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        fac = new_id("fac")
        created = []
        for _ in range(3):
            r = await client.post(
                "/v1/remittance-schedules",
                json={"period": "2026-10", "rows": [{"tax_account": "PR-1"}]},
                headers=as_facilitator(fac),
            )
            created.append(r.json()["id"])
        first = await client.get(
            "/v1/remittance-schedules", params={"facilitator_id": fac, "limit": 2}, headers=ADMIN
        )
        page = first.json()
        assert [s["id"] for s in page["items"]] == [created[2], created[1]]
        second = await client.get(
            "/v1/remittance-schedules",
            params={"facilitator_id": fac, "limit": 2, "cursor": page["next_cursor"]},
            headers=ADMIN,
        )
        assert [s["id"] for s in second.json()["items"]] == [created[0]]
        assert second.json()["next_cursor"] is None
        assert (await client.get("/v1/remittance-schedules", headers=as_operator("op-1"))).status_code == 403


class TestLargeSchedule:
    async def test_a_schedule_goes_through_in_chunks_as_one_document(
        self, client: httpx.AsyncClient, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Chunks of 4 rows: a lodging named again in a later chunk is still refused, rows keep
        their numbers, every accepted row has its declaration and event."""
        monkeypatch.setattr(schedules_service, "CHUNK_ROWS", 4)
        fac = new_id("fac")
        lodgings = [await make_lodging(db, name=f"C{i}") for i in range(9)]
        for lodging in lodgings:
            await authorize(db, lodging, fac)
        rows = [
            {"tax_account": lodging.tax_account, "room_revenue": f"{1000 + i}.00"}
            for i, lodging in enumerate(lodgings)
        ]
        rows.append({"tax_account": lodgings[1].tax_account, "room_revenue": "1.00"})  # row 10, chunk 3
        document = {"period": "2026-10", "rows": rows}
        r = await client.post("/v1/remittance-schedules", headers=as_facilitator(fac), json=document)
        assert r.status_code == 201, r.text
        out = r.json()
        counts = [out[k] for k in ("status", "rows", "accepted", "rejected")]
        assert counts == ["partially_accepted", 10, 9, 1]
        assert [x["row"] for x in out["results"]] == list(range(1, 11))
        assert out["results"][9]["errors"] == [
            {
                "field": "tax_account",
                "reason": "the lodging is already on row 2 of this schedule",
                "code": "duplicate_lodging",
            }
        ]
        assert [x["tax"] for x in out["results"][:2]] == ["90.00", "90.09"]
        listed = await client.get(
            "/v1/declarations", params={"schedule_id": out["id"], "limit": 50}, headers=ADMIN
        )
        assert sorted(d["schedule_row"] for d in listed.json()["items"]) == list(range(1, 10))
        filed = await scalar(
            db, "SELECT count(*) FROM outbox WHERE payload->'data'->>'schedule_id' = :s", s=out["id"]
        )
        assert filed == 9

    async def test_a_large_schedule_is_written_in_bulk(self, client: httpx.AsyncClient, db: DB) -> None:
        fac = new_id("fac")
        lodgings = [await make_lodging(db, name=f"L{i}") for i in range(150)]
        for lodging in lodgings:
            await authorize(db, lodging, fac)
        rows = [
            {
                "tax_account": lodging.tax_account,
                "room_revenue": f"{1000 + i}.00",
                "room_nights": 4,
                "declared_taxable_base": f"{1000 + i}.00",
                "declared_tax": f"{(1000 + i) * 9 / 100:.2f}",
            }
            for i, lodging in enumerate(lodgings)
        ]
        r = await client.post(
            "/v1/remittance-schedules", json={"period": "2026-10", "rows": rows}, headers=as_facilitator(fac)
        )
        assert r.status_code == 201, r.text
        out = r.json()
        assert (out["status"], out["accepted"]) == ("accepted", 150)
        assert [x["tax"] for x in out["results"][:3]] == ["90.00", "90.09", "90.18"]
        filed = await scalar(
            db, "SELECT count(*) FROM outbox WHERE payload->'data'->>'schedule_id' = :s", s=out["id"]
        )
        assert filed == 150
        last = out["results"][-1]
        stored = (
            await client.get(
                f"/v1/declarations/{last['declaration_id']}",
                headers=as_facilitator(fac),
                params={"explain": "true"},
            )
        ).json()
        assert (stored["computed"]["tax"], stored["schedule_row"], stored["flagged"]) == (
            "103.41",
            150,
            False,
        )
        assert stored["trace"][-1]["result"] == "103.41"


class TestBodyLimits:
    """Issue 10 item 1: 1 MiB bodies, more only on the schedule upload route."""

    BODY = b'{"period": "2026-10", "rows": []}' + b" " * (1_100_000)  # valid JSON, past 1 MiB

    async def test_a_declaration_past_one_mebibyte_is_413(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/declarations",
            content=self.BODY,
            headers={**as_facilitator(new_id("fac")), "content-type": "application/json"},
        )
        assert (r.status_code, r.headers["content-type"]) == (413, "application/problem+json")
        assert r.json()["errors"] == [{"pointer": "#/body", "detail": "at most 1048576 bytes"}]

    async def test_the_schedule_route_reads_it(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/remittance-schedules",
            content=self.BODY,
            headers={**as_facilitator(new_id("fac")), "content-type": "application/json"},
        )
        assert r.status_code == 422  # read and parsed: the schedule has no rows
        assert r.json()["errors"][0]["pointer"] == "#/body/rows"

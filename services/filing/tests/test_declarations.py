from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from filing_factories import (
    ADMIN,
    DASHBOARD,
    DB,
    as_facilitator,
    as_operator,
    authorize,
    certify,
    change_attributes,
    change_status,
    declaration,
    file,
    make_lodging,
    new_id,
    outbox,
    scalar,
)
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from servicekit.testing import pin_today as pin_app_today

PR_DUE = date(2026, 11, 10)
Pin = Callable[[date], None]


@pytest.fixture
def pin_today(monkeypatch: pytest.MonkeyPatch, service_app: FastAPI) -> Pin:
    """Pin the service's today (its runtime's clock), as a deployment or a test may."""

    def pin(day: date) -> None:
        pin_app_today(monkeypatch, service_app, day)

    return pin


async def filed_only_from(
    client: httpx.AsyncClient,
    pin_today: Pin,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    refused_on: date,
    opens: str,
) -> dict[str, Any]:
    """Posted on ``refused_on`` the declaration is a 422 saying from which day its period can
    be filed (``opens``); posted on that day it is filed (the filed declaration returned)."""
    pin_today(refused_on)
    early = await client.post("/v1/declarations", json=body, headers=headers)
    assert early.status_code == 422
    assert f"{body['period']} can be filed from {opens}" in early.json()["detail"]
    pin_today(date.fromisoformat(opens))
    return await file(client, body, headers)


class TestFilingWindow:
    """A month is filed from the day after its last day (taxcore.periods.filing_opens_on); a
    lodging closed during the month files it from its closing date."""

    async def test_a_month_is_filed_only_once_it_is_over(
        self, client: httpx.AsyncClient, db: DB, pin_today: Pin
    ) -> None:
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        pin_today(date(2026, 12, 1))
        december = await client.post(
            "/v1/declarations", json=declaration(hotel, period="2026-12"), headers=headers
        )
        assert december.status_code == 422
        assert december.headers["content-type"] == "application/problem+json"
        assert [e["pointer"] for e in december.json()["errors"]] == ["#/body/period"]
        assert "2026-12 can be filed from 2027-01-01" in december.json()["detail"]
        body = declaration(hotel, period="2026-11")
        out = await filed_only_from(
            client, pin_today, body, headers, refused_on=date(2026, 11, 30), opens="2026-12-01"
        )
        assert (out["period"], out["filed_on"]) == ("2026-11", "2026-12-01")

    async def test_a_paper_return_received_before_the_month_ended_is_refused(
        self, client: httpx.AsyncClient, db: DB, pin_today: Pin
    ) -> None:
        hotel = await make_lodging(db)
        pin_today(date(2026, 12, 5))
        filer = {"kind": "operator", "id": hotel.operator_id}
        body = declaration(hotel, period="2026-11", filer=filer, received_on="2026-11-28")
        early = await client.post("/v1/declarations", json=body, headers=ADMIN)
        assert early.status_code == 422
        assert [e["pointer"] for e in early.json()["errors"]] == ["#/body/period"]
        assert "(received 2026-11-28)" in early.json()["detail"]
        out = await file(client, {**body, "received_on": "2026-12-01"}, ADMIN)
        assert (out["filed_on"], out["late"]) == ("2026-12-01", False)

    async def test_a_lodging_closed_mid_month_files_from_its_closing_date(
        self, client: httpx.AsyncClient, db: DB, pin_today: Pin
    ) -> None:
        hotel = await make_lodging(
            db, statuses=[("active", date(2026, 1, 1)), ("closed", date(2026, 12, 15))]
        )
        headers = as_operator(hotel.operator_id)
        body = declaration(hotel, period="2026-12")
        out = await filed_only_from(
            client, pin_today, body, headers, refused_on=date(2026, 12, 14), opens="2026-12-15"
        )
        assert (out["period"], out["filed_on"]) == ("2026-12", "2026-12-15")

    async def test_a_schedule_for_a_month_not_over_is_422_on_period(
        self, client: httpx.AsyncClient, db: DB, pin_today: Pin
    ) -> None:
        fac = new_id("fac")
        hotel = await make_lodging(db)
        await authorize(db, hotel, fac)
        pin_today(date(2026, 12, 1))
        rows = [{"tax_account": hotel.tax_account, "room_revenue": "1000.00", "room_nights": 5}]
        r = await client.post(
            "/v1/remittance-schedules", json={"period": "2026-12", "rows": rows}, headers=as_facilitator(fac)
        )
        assert r.status_code == 422
        assert [e["pointer"] for e in r.json()["errors"]] == ["#/body/period"]
        assert "2026-12 can be filed from 2027-01-01" in r.json()["detail"]
        ok = await client.post(
            "/v1/remittance-schedules", json={"period": "2026-11", "rows": rows}, headers=as_facilitator(fac)
        )
        assert ok.status_code == 201, ok.text
        assert ok.json()["accepted"] == 1


class TestEffectiveDatedAttributes:
    """The class and casino licence of a period are those in force then (PR §2(16)), not today's."""

    async def test_an_amendment_of_a_past_period_keeps_that_periods_rate(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        october = await file(client, declaration(hotel, period="2026-10"), headers)
        assert (october["computed"]["rate"], october["computed"]["tax"]) == ("0.09", "900.00")
        await change_attributes(db, hotel, date(2026, 11, 1), casino=True)  # licence granted for November
        november = await file(
            client,
            declaration(hotel, period="2026-11", declared={"taxable_base": "10000.00", "tax": "1100.00"}),
            headers,
        )
        assert (november["computed"]["rate"], november["computed"]["tax"]) == ("0.11", "1100.00")
        assert november["findings"] == []
        r = await client.post(
            f"/v1/declarations/{october['id']}/amendments",
            json={
                "room_revenue": "12000.00",
                "room_nights": 60,
                "declared": {"taxable_base": "12000.00", "tax": "1080.00"},
            },
            headers=headers,
        )
        assert r.status_code == 201, r.text
        amended = r.json()
        assert (amended["computed"]["rate"], amended["computed"]["tax"]) == ("0.09", "1080.00")
        assert amended["input"]["casino"] is False
        assert amended["findings"] == []
        events = await outbox(db, hotel.tax_account)
        assert [e[1]["data"]["input"]["casino"] for e in events] == [False, True, False]
        period = await client.get(f"/v1/lodgings/{hotel.tax_account}/periods/2026-10", headers=headers)
        assert period.json()["lodging"]["casino"] is False


class TestFileDeclaration:
    async def test_pr_casino_hotel_gets_the_exact_tax(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db, casino=True, name="Condado Casino Resort")
        await certify(db, hotel, "PRTC-FILM-2026-017", date(2026, 10, 1), date(2026, 12, 31))
        body = declaration(
            hotel,
            room_revenue="100000.00",
            resort_and_other_fees="5000.00",
            room_nights=500,
            comp_rooms=[
                {
                    "kind": "comp",
                    "room_nights": 10,
                    "average_daily_rate": "200.00",
                    "room_cost": "150.00",
                    "industry_cost": "180.00",
                }
            ],
            exempt=[
                {"exemption": "pr_film_production", "amount": "3000.00", "evidence": "PRTC-FILM-2026-017"}
            ],
            declared={"taxable_base": "104000.00", "tax": "11440.00", "total": "11440.00"},
        )
        out = await file(client, body, as_operator(hotel.operator_id))
        # 100,000 + 5,000 + 10 comp nights x 200 (greatest value, §24(D)) - 3,000 film (§24(F))
        assert out["computed"] == {
            "gross_receipts": "107000.00",
            "exempt_total": "3000.00",
            "taxable_base": "104000.00",
            "rate": "0.11",
            "tax": "11440.00",
            "impact_fee": "0.00",
            "total_due": "11440.00",
            "currency": "USD",
        }
        assert out["findings"] == []
        assert out["flagged"] is False
        assert out["tax_difference"] == "0.00"
        assert out["filer"] == {"kind": "operator", "id": hotel.operator_id}
        assert out["version"] == 1
        assert out["supersedes"] is None
        assert out["latest"] is True
        assert out["due_date"] == PR_DUE.isoformat()
        assert out["filed_on"] == date.today().isoformat()
        assert out["late"] is (date.today() > PR_DUE)
        events = await outbox(db, hotel.tax_account)
        assert [t for t, _ in events] == ["roomtax.filing.declaration.filed.v1"]
        data = events[0][1]["data"]
        assert (data["tax"], data["taxable_base"], data["filer_kind"]) == (
            "11440.00",
            "104000.00",
            "operator",
        )
        assert data["input"]["casino"] is True

    async def test_vi_timeshare_gets_room_tax_and_impact_fee(self, client: httpx.AsyncClient, db: DB) -> None:
        timeshare = await make_lodging(db, jurisdiction="VI", lodging_class="timeshare", name="Bluebeard's")
        body = declaration(
            timeshare,
            room_revenue="40000.00",
            surcharges_and_service_charges="2000.00",
            room_nights=160,
            timeshare_owner_unit_days=120,
            exempt=[{"exemption": "vi_timeshare_owner", "amount": "6000.00"}],
            declared={
                "taxable_base": "36000.00",
                "tax": "4500.00",
                "impact_fee": "3000.00",
                "total": "7500.00",
            },
        )
        out = await file(client, body, as_operator(timeshare.operator_id), 201)
        # (40,000 + 2,000 - 6,000) x 12.5% (§54(b)(1)) + 120 owner unit-days x $25 (§54(b)(2)-(3))
        assert out["computed"]["taxable_base"] == "36000.00"
        assert out["computed"]["tax"] == "4500.00"
        assert out["computed"]["impact_fee"] == "3000.00"
        assert out["computed"]["total_due"] == "7500.00"
        assert out["due_date"] == "2026-11-30"
        assert out["findings"] == []

    async def test_findings_flag_the_declaration_but_never_correct_it(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        body = declaration(hotel, declared={"taxable_base": "10000.00", "tax": "800.00", "total": "900.00"})
        out = await file(client, body, as_operator(hotel.operator_id))
        assert out["flagged"] is True
        assert out["declared"]["tax"] == "800.00"
        assert out["computed"]["tax"] == "900.00"
        assert out["tax_difference"] == "-100.00"
        codes = sorted((f["code"], f["line"]) for f in out["findings"])
        assert codes == [("arithmetic", "total"), ("inconsistent_entries", "tax"), ("tax_understated", "tax")]
        listed = await client.get("/v1/declarations", params={"status": "flagged"}, headers=ADMIN)
        assert [d["id"] for d in listed.json()["items"]] == [out["id"]]

    async def test_film_exemption_without_a_valid_certificate_is_disallowed_and_flagged(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        await certify(db, hotel, "PRTC-FILM-OLD", date(2025, 1, 1), date(2025, 12, 31))
        body = declaration(
            hotel,
            exempt=[{"exemption": "pr_film_production", "amount": "1000.00", "evidence": "PRTC-FILM-OLD"}],
            declared={"taxable_base": "9000.00", "tax": "810.00"},
        )
        out = await file(client, body, as_operator(hotel.operator_id))
        assert out["computed"]["taxable_base"] == "10000.00"
        assert out["computed"]["tax"] == "900.00"
        evidence = [f for f in out["findings"] if f["line"] == "exempt[0].evidence"]
        assert len(evidence) == 1
        assert evidence[0]["code"] == "omission"
        assert "PRTC-FILM-OLD" in evidence[0]["message"]
        assert out["submitted"]["exempt"][0]["evidence"] == "PRTC-FILM-OLD"

    async def test_unknown_lodging_is_404(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/declarations", json={**declaration_stub(), "lodging": "PR-9999999-9"}, headers=ADMIN
        )
        assert r.status_code == 404
        assert r.headers["content-type"] == "application/problem+json"

    async def test_closed_lodging_is_refused(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        await change_status(db, hotel, "closed", date(2026, 7, 1))
        r = await client.post(
            "/v1/declarations", json=declaration(hotel), headers=as_operator(hotel.operator_id)
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/period"
        assert "closed" in r.json()["detail"]
        # the month it closed in is still owed
        await file(client, declaration(hotel, period="2026-06"), as_operator(hotel.operator_id))

    async def test_period_before_registration_and_future_period_are_refused(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db, registered_on=date(2026, 9, 15))
        headers = as_operator(hotel.operator_id)
        early = await client.post(
            "/v1/declarations", json=declaration(hotel, period="2026-08"), headers=headers
        )
        assert early.status_code == 422
        assert "registration" in early.json()["detail"]
        future = await client.post(
            "/v1/declarations", json=declaration(hotel, period="2099-01"), headers=headers
        )
        assert future.status_code == 422
        assert future.json()["errors"][0]["pointer"] == "#/body/period"
        await file(client, declaration(hotel, period="2026-09"), headers)

    async def test_paper_return_received_date_decides_lateness(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        filer = {"kind": "operator", "id": hotel.operator_id}
        on_time = await file(client, declaration(hotel, filer=filer, received_on="2026-11-10"), ADMIN)
        assert (on_time["late"], on_time["status"], on_time["filed_on"]) == (False, "on_time", "2026-11-10")
        late = await file(client, declaration(hotel, filer=filer, received_on="2026-11-11"), ADMIN)
        assert (late["late"], late["status"], late["version"]) == (True, "late", 2)
        assert late["submitted_by"] == "test-agency-admin-None"

    async def test_only_the_agency_backdates_or_files_for_another(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        r = await client.post(
            "/v1/declarations", json=declaration(hotel, received_on="2026-11-01"), headers=headers
        )
        assert r.status_code == 403
        r = await client.post("/v1/declarations", json=declaration(hotel), headers=ADMIN)
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/filer"
        r = await client.post("/v1/declarations", json=declaration(hotel), headers=DASHBOARD)
        assert r.status_code == 403

    async def test_bad_amounts_point_at_their_field(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        r = await client.post(
            "/v1/declarations", json=declaration(hotel, room_revenue="-5.00"), headers=headers
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/room_revenue"
        r = await client.post("/v1/declarations", json=declaration(hotel, room_revenue=12.5), headers=headers)
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/room_revenue"
        assert await scalar(db, "SELECT count(*) FROM declarations") == 0


class TestMoneyStrings:
    """Issue 10 item 2: amounts are exactly ``\\d{1,16}(\\.\\d{1,2})?`` strings, echoed with two decimals."""

    @pytest.mark.parametrize(
        ("field", "value", "pointer"),
        [
            ("room_revenue", "1e1", "#/body/room_revenue"),
            ("room_revenue", " 10.00 ", "#/body/room_revenue"),
            ("room_revenue", "+10.00", "#/body/room_revenue"),
            ("room_revenue", "-0.00", "#/body/room_revenue"),
            ("room_revenue", "1e-2", "#/body/room_revenue"),
            ("room_revenue", 10, "#/body/room_revenue"),
            ("declared", {"tax": "-900.00"}, "#/body/declared/tax"),
            ("exempt", [{"exemption": "pr_timeshare", "amount": "1E+1"}], "#/body/exempt/0/amount"),
            (
                "comp_rooms",
                [
                    {
                        "kind": "comp",
                        "room_nights": 1,
                        "average_daily_rate": "1e2",
                        "room_cost": "0",
                        "industry_cost": "0",
                    }
                ],
                "#/body/comp_rooms/0/average_daily_rate",
            ),
        ],
    )
    async def test_loose_amounts_are_refused(
        self, client: httpx.AsyncClient, db: DB, field: str, value: object, pointer: str
    ) -> None:
        hotel = await make_lodging(db)
        r = await client.post(
            "/v1/declarations",
            json=declaration(hotel, **{field: value}),
            headers=as_operator(hotel.operator_id),
        )
        assert r.status_code == 422, r.text
        assert r.json()["errors"][0]["pointer"] == pointer
        assert (
            await scalar(db, "SELECT count(*) FROM declarations WHERE lodging_id = :l", l=hotel.lodging_id)
            == 0
        )

    async def test_amounts_are_echoed_with_two_decimals_in_response_and_event(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        out = await file(
            client,
            declaration(
                hotel,
                room_revenue="10000",
                declared={"taxable_base": "10000", "tax": "900.0", "total": "900"},
            ),
            as_operator(hotel.operator_id),
        )
        assert out["submitted"]["room_revenue"] == "10000.00"
        assert out["declared"]["tax"] == "900.00"
        assert out["computed"]["tax"] == "900.00"
        [(_, event)] = await outbox(db, hotel.tax_account)
        assert (event["data"]["declared_tax"], event["data"]["tax"]) == ("900.00", "900.00")

    async def test_evidence_is_bounded(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        exempt = [{"exemption": "pr_film_production", "amount": "1.00", "evidence": "x" * 2001}]
        r = await client.post(
            "/v1/declarations", json=declaration(hotel, exempt=exempt), headers=as_operator(hotel.operator_id)
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/exempt/0/evidence"


class TestFacilitatorAccess:
    async def test_unauthorized_facilitator_gets_404_without_learning_the_lodging_exists(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        stranger = as_facilitator(new_id("fac"))
        exists = await client.post("/v1/declarations", json=declaration(hotel), headers=stranger)
        missing = await client.post(
            "/v1/declarations", json={**declaration(hotel), "lodging": "PR-0000000-0"}, headers=stranger
        )
        assert exists.status_code == missing.status_code == 404
        assert exists.json()["title"] == missing.json()["title"]
        assert exists.json()["detail"].replace(hotel.tax_account, "X") == missing.json()["detail"].replace(
            "PR-0000000-0", "X"
        )
        view = await client.get(f"/v1/lodgings/{hotel.tax_account}/periods/2026-10", headers=stranger)
        assert view.status_code == 404
        assert await scalar(db, "SELECT count(*) FROM declarations") == 0

    async def test_authorized_facilitator_files_its_part(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        fac = new_id("fac")
        await authorize(db, hotel, fac, starts_on=date(2026, 10, 15))
        body = declaration(
            hotel,
            room_revenue="2000.00",
            room_nights=10,
            intermediary_retained="300.00",
            declared={"taxable_base": "2000.00", "tax": "180.00"},
        )
        out = await file(client, body, as_facilitator(fac))
        assert out["filer"] == {"kind": "facilitator", "id": fac}
        assert out["computed"]["tax"] == "180.00"  # PR: what the intermediary keeps is not taxed

    async def test_authorization_not_covering_the_period_is_403(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        fac = new_id("fac")
        await authorize(db, hotel, fac, starts_on=date(2026, 1, 1), ends_on=date(2026, 8, 31))
        r = await client.post("/v1/declarations", json=declaration(hotel), headers=as_facilitator(fac))
        assert r.status_code == 403
        assert r.json()["errors"][0]["pointer"] == "#/body/period"


class TestAmendments:
    async def test_amendment_keeps_both_versions(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        original = await file(client, declaration(hotel), headers)
        r = await client.post(
            f"/v1/declarations/{original['id']}/amendments",
            json={
                "room_revenue": "12000.00",
                "room_nights": 60,
                "declared": {"taxable_base": "12000.00", "tax": "1080.00"},
            },
            headers=headers,
        )
        assert r.status_code == 201, r.text
        amended = r.json()
        assert (amended["version"], amended["supersedes"]) == (2, original["id"])
        assert amended["filing_id"] == original["filing_id"]
        assert amended["computed"]["tax"] == "1080.00"
        history = (await client.get(f"/v1/declarations/{original['id']}/history", headers=headers)).json()
        assert [(d["version"], d["computed"]["tax"], d["latest"]) for d in history] == [
            (1, "900.00", False),
            (2, "1080.00", True),
        ]
        again = (await client.get(f"/v1/declarations/{original['id']}", headers=headers)).json()
        assert (again["computed"]["tax"], again["latest"]) == ("900.00", False)
        types = [t for t, _ in await outbox(db, hotel.tax_account)]
        assert types == ["roomtax.filing.declaration.filed.v1", "roomtax.filing.declaration.amended.v1"]
        latest = await client.get(
            "/v1/declarations", params={"lodging": hotel.tax_account, "latest": "true"}, headers=headers
        )
        assert [d["id"] for d in latest.json()["items"]] == [amended["id"]]

    async def test_second_post_for_the_same_filer_amends(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        first = await file(client, declaration(hotel), headers)
        second = await file(client, declaration(hotel, room_revenue="11000.00"), headers)
        assert (second["version"], second["supersedes"]) == (2, first["id"])

    async def test_amending_a_superseded_version_is_409(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        first = await file(client, declaration(hotel), headers)
        await file(client, declaration(hotel), headers)
        r = await client.post(
            f"/v1/declarations/{first['id']}/amendments",
            json={"room_revenue": "1.00", "room_nights": 1, "declared": {}},
            headers=headers,
        )
        assert r.status_code == 409

    async def test_operator_cannot_amend_a_facilitators_filing(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        fac = new_id("fac")
        await authorize(db, hotel, fac)
        theirs = await file(client, declaration(hotel), as_facilitator(fac))
        r = await client.post(
            f"/v1/declarations/{theirs['id']}/amendments",
            json={"room_nights": 1, "declared": {}},
            headers=as_operator(hotel.operator_id),
        )
        assert r.status_code == 403

    async def test_declarations_are_append_only_in_the_database(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        out = await file(client, declaration(hotel), as_operator(hotel.operator_id))
        async with db() as session:
            with pytest.raises(DBAPIError, match="append-only"):
                async with session.begin():
                    await session.execute(
                        text("UPDATE declarations SET tax = 0 WHERE id = :i"), {"i": out["id"]}
                    )


class TestLodgingPeriod:
    async def test_operator_sees_what_each_filer_covered(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        fac = new_id("fac")
        await authorize(db, hotel, fac)
        await file(
            client,
            declaration(hotel, room_revenue="2000.00", room_nights=10, declared={"tax": "180.00"}),
            as_facilitator(fac),
        )
        await file(client, declaration(hotel), as_operator(hotel.operator_id))
        r = await client.post(
            "/v1/payments",
            headers=as_facilitator(fac),
            json={
                "tax_account": hotel.tax_account,
                "amount": "180.00",
                "method": "electronic_transfer",
                "periods": [{"period": "2026-10", "amount": "180.00"}],
            },
        )
        assert r.status_code == 201, r.text
        url = f"/v1/lodgings/{hotel.tax_account}/periods/2026-10"
        view = (await client.get(url, headers=as_operator(hotel.operator_id))).json()
        assert [(f["filer"]["kind"], f["tax"]) for f in view["filers"]] == [
            ("operator", "900.00"),
            ("facilitator", "180.00"),
        ]
        assert view["totals"] == {
            "room_nights": 60,
            "taxable_base": "12000.00",
            "tax": "1080.00",
            "impact_fee": "0.00",
            "total_due": "1080.00",
            "declared_tax": "1080.00",
        }
        assert view["paid_for_period"] == "180.00"
        assert view["paid_by"] == [{"payer": {"kind": "facilitator", "id": fac}, "amount": "180.00"}]
        mine = (await client.get(url, headers=as_facilitator(fac))).json()
        assert [f["filer"]["kind"] for f in mine["filers"]] == ["facilitator"]


class TestListDeclarations:
    async def test_filters_and_cursor_pagination(self, client: httpx.AsyncClient, db: DB) -> None:
        hotels = [await make_lodging(db, name=f"H{i}") for i in range(3)]
        ids = []
        for i, hotel in enumerate(hotels):
            received = "2026-11-05" if i else "2026-11-20"
            filer = {"kind": "operator", "id": hotel.operator_id}
            ids.append(
                (await file(client, declaration(hotel, filer=filer, received_on=received), ADMIN))["id"]
            )
        seen: list[str] = []
        cursor = None
        while True:
            params = {"limit": 2, "period": "2026-10", **({"cursor": cursor} if cursor else {})}
            page = (await client.get("/v1/declarations", params=params, headers=DASHBOARD)).json()
            seen += [d["id"] for d in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        assert seen == list(reversed(ids))
        late = (await client.get("/v1/declarations", params={"status": "late"}, headers=ADMIN)).json()
        assert [d["id"] for d in late["items"]] == [ids[0]]
        mine = (await client.get("/v1/declarations", headers=as_operator(hotels[1].operator_id))).json()
        assert [d["id"] for d in mine["items"]] == [ids[1]]
        explained = (
            await client.get(f"/v1/declarations/{ids[1]}", params={"explain": "true"}, headers=ADMIN)
        ).json()
        assert explained["trace"][-1]["rule"] == "total_due"


def declaration_stub() -> dict[str, object]:
    return {
        "period": "2026-10",
        "room_nights": 1,
        "declared": {},
        "filer": {"kind": "operator", "id": "op-x"},
    }

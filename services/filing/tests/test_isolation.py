"""Tenant isolation: a caller never sees or changes another's data (404, never a leak).

Operator A and operator B each have a lodging; facilitator F is authorized by A's
lodging and G by B's. Each of them files and pays for its own part; then every
route is tried across the line, by id in the path, in the body and in filters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

import httpx
from filing_factories import (
    ADMIN,
    DASHBOARD,
    DB,
    as_facilitator,
    as_operator,
    authorize,
    declaration,
    file,
    make_lodging,
    new_id,
    scalar,
)

from servicekit.testing import auth
from taxcore.events import registry as ev

AUDITOR = auth("agency-auditor")
PERIOD = "2026-10"


def payment(tax_account: str, amount: str = "900.00", **fields: Any) -> dict[str, Any]:
    return {
        "tax_account": tax_account,
        "amount": amount,
        "method": "electronic_transfer",
        "periods": [{"period": PERIOD, "amount": amount}],
        **fields,
    }


async def pay(client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    r = await client.post("/v1/payments", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


@dataclass
class Side:
    """One operator's lodging and what its operator and its facilitator filed and paid."""

    lodging: ev.LodgingRegistered
    facilitator: str
    operator_declaration: dict[str, Any]
    facilitator_declaration: dict[str, Any]
    operator_payment: dict[str, Any]
    facilitator_payment: dict[str, Any]
    schedule: dict[str, Any]

    @property
    def operator(self) -> dict[str, str]:
        return as_operator(self.lodging.operator_id)

    @property
    def fac(self) -> dict[str, str]:
        return as_facilitator(self.facilitator)

    def reads(self) -> list[str]:
        """Every GET that names one of this side's objects."""
        urls = []
        for d in (self.operator_declaration, self.facilitator_declaration):
            urls += [f"/v1/declarations/{d['id']}", f"/v1/declarations/{d['id']}/history"]
        for p in (self.operator_payment, self.facilitator_payment):
            urls += [f"/v1/payments/{p['id']}", f"/v1/payments/{p['id']}/receipt"]
            urls.append(f"/v1/payments/{p['id']}/receipt?format=pdf")
        for ref in (self.lodging.tax_account, self.lodging.lodging_id):
            urls.append(f"/v1/lodgings/{ref}/periods/{PERIOD}")
        urls.append(f"/v1/remittance-schedules/{self.schedule['id']}")
        return urls

    def list_filters(self) -> list[tuple[str, dict[str, str]]]:
        """List queries whose filters point at this side."""
        out: list[tuple[str, dict[str, str]]] = []
        for url in ("/v1/declarations", "/v1/payments"):
            for ref in (self.lodging.tax_account, self.lodging.lodging_id):
                out.append((url, {"lodging": ref}))
        out += [
            ("/v1/declarations", {"filer_id": self.lodging.operator_id}),
            ("/v1/declarations", {"filer_id": self.facilitator}),
            ("/v1/declarations", {"schedule_id": self.schedule["id"]}),
            ("/v1/payments", {"payer_id": self.lodging.operator_id}),
            ("/v1/payments", {"payer_id": self.facilitator}),
        ]
        return out

    def ids(self) -> set[str]:
        return {
            self.operator_declaration["id"],
            self.facilitator_declaration["id"],
            self.operator_payment["id"],
            self.facilitator_payment["id"],
            *(r["declaration_id"] for r in self.schedule["results"] if r["status"] == "accepted"),
        }


async def side(client: httpx.AsyncClient, db: DB, name: str) -> Side:
    lodging = await make_lodging(db, name=name)
    fac = new_id("fac")
    await authorize(db, lodging, fac)
    operator, facilitator = as_operator(lodging.operator_id), as_facilitator(fac)
    op_decl = await file(client, declaration(lodging, PERIOD), operator)
    schedule_r = await client.post(
        "/v1/remittance-schedules",
        json={
            "period": "2026-09",
            "rows": [{"tax_account": lodging.tax_account, "room_revenue": "500.00", "room_nights": 2}],
        },
        headers=facilitator,
    )
    assert schedule_r.status_code == 201, schedule_r.text
    fac_decl = await file(
        client,
        declaration(lodging, PERIOD, room_revenue="2000.00", room_nights=10, declared={"tax": "180.00"}),
        facilitator,
    )
    op_pay = await pay(client, payment(lodging.tax_account), operator)
    fac_pay = await pay(client, payment(lodging.tax_account, "180.00"), facilitator)
    return Side(lodging, fac, op_decl, fac_decl, op_pay, fac_pay, schedule_r.json())


async def sides(client: httpx.AsyncClient, db: DB) -> tuple[Side, Side]:
    return await side(client, db, "A Hotel"), await side(client, db, "B Hotel")


def writes_on(s: Side) -> list[tuple[str, dict[str, Any]]]:
    """Every write naming this side's lodging or objects, each with a valid body."""
    amend = {"room_revenue": "11000.00", "room_nights": 55, "declared": {"tax": "990.00"}}
    return [
        ("/v1/declarations", declaration(s.lodging, PERIOD)),
        (f"/v1/declarations/{s.operator_declaration['id']}/amendments", amend),
        (f"/v1/declarations/{s.facilitator_declaration['id']}/amendments", amend),
        ("/v1/payments", payment(s.lodging.tax_account)),
        ("/v1/payments", payment(s.lodging.tax_account, periods=[])),
        (f"/v1/payments/{s.operator_payment['id']}/reversals", {"reason": "bounced"}),
        (f"/v1/payments/{s.facilitator_payment['id']}/reversals", {"reason": "bounced"}),
    ]


async def visible_ids(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], **params: str
) -> set[str]:
    r = await client.get(url, params=params, headers=headers)
    assert r.status_code == 200, r.text
    return {x["id"] for x in r.json()["items"]}


class TestOperatorIsolation:
    async def test_b_objects_are_404_to_operator_a(self, client: httpx.AsyncClient, db: DB) -> None:
        a, b = await sides(client, db)
        for url in b.reads():
            r = await client.get(url, headers=a.operator)
            assert r.status_code == 404, (url, r.text)
            assert b.lodging.name not in r.text
        for url in a.reads()[:-1]:  # its own (a schedule is the facilitator's)
            assert (await client.get(url, headers=a.operator)).status_code == 200, url

    async def test_lists_never_include_b_rows_whatever_the_filter(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        a, b = await sides(client, db)
        for url in ("/v1/declarations", "/v1/payments"):
            seen = await visible_ids(client, url, a.operator)
            assert seen, url
            assert not seen & b.ids(), url
        for url, params in b.list_filters():
            assert await visible_ids(client, url, a.operator, **params) == set(), (url, params)

    async def test_operator_a_cannot_file_amend_pay_or_reverse_for_b(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        a, b = await sides(client, db)
        before = await scalar(db, "SELECT count(*) FROM declarations") + await scalar(
            db, "SELECT count(*) FROM payments"
        )
        for url, body in writes_on(b):
            r = await client.post(url, json=body, headers=a.operator)
            assert r.status_code in (403, 404), (url, r.text)
            assert r.status_code == 404 or url.endswith("/reversals"), (url, r.status_code)
        after = await scalar(db, "SELECT count(*) FROM declarations") + await scalar(
            db, "SELECT count(*) FROM payments"
        )
        assert after == before
        assert await scalar(db, "SELECT count(*) FROM payment_reversals") == 0


class TestFacilitatorIsolation:
    async def test_unauthorized_facilitator_gets_404_for_everything_of_b(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        a, b = await sides(client, db)
        for url in b.reads():
            r = await client.get(url, headers=a.fac)
            assert r.status_code == 404, (url, r.text)
        for url, params in b.list_filters():
            assert await visible_ids(client, url, a.fac, **params) == set(), (url, params)
        for url, body in writes_on(b):
            r = await client.post(url, json=body, headers=a.fac)
            assert r.status_code in (403, 404), (url, r.text)
            assert r.status_code == 404 or url.endswith("/reversals"), (url, r.status_code)

    async def test_authorized_facilitator_sees_only_what_it_filed_and_paid(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        a, _ = await sides(client, db)
        assert await visible_ids(client, "/v1/declarations", a.fac) == {
            a.facilitator_declaration["id"],
            a.schedule["results"][0]["declaration_id"],
        }
        assert await visible_ids(client, "/v1/payments", a.fac) == {a.facilitator_payment["id"]}
        for params in ({"lodging": a.lodging.tax_account}, {"filer_id": a.lodging.operator_id}):
            assert a.operator_declaration["id"] not in await visible_ids(
                client, "/v1/declarations", a.fac, **params
            )
        for url in (
            f"/v1/declarations/{a.operator_declaration['id']}",
            f"/v1/declarations/{a.operator_declaration['id']}/history",
            f"/v1/payments/{a.operator_payment['id']}",
            f"/v1/payments/{a.operator_payment['id']}/receipt",
        ):
            assert (await client.get(url, headers=a.fac)).status_code == 404, url
        amend = {"room_revenue": "1.00", "room_nights": 1, "declared": {"tax": "0.09"}}
        r = await client.post(
            f"/v1/declarations/{a.operator_declaration['id']}/amendments", json=amend, headers=a.fac
        )
        assert r.status_code == 404
        view = (
            await client.get(f"/v1/lodgings/{a.lodging.tax_account}/periods/{PERIOD}", headers=a.fac)
        ).json()
        assert [f["filer"]["id"] for f in view["filers"]] == [a.facilitator]
        assert view["paid_by"] == [
            {"payer": {"kind": "facilitator", "id": a.facilitator}, "amount": "180.00"}
        ]
        # the operator, the taxpayer, sees every filer of its lodging (documented intent)
        mine = (
            await client.get(f"/v1/lodgings/{a.lodging.tax_account}/periods/{PERIOD}", headers=a.operator)
        ).json()
        assert {f["filer"]["kind"] for f in mine["filers"]} == {"operator", "facilitator"}
        assert mine["paid_for_period"] == "1080.00"

    async def test_operator_amending_its_facilitators_declaration_is_403(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        a, _ = await sides(client, db)
        amend = {"room_revenue": "1.00", "room_nights": 1, "declared": {"tax": "0.09"}}
        r = await client.post(
            f"/v1/declarations/{a.facilitator_declaration['id']}/amendments", json=amend, headers=a.operator
        )
        assert r.status_code == 403

    async def test_schedule_rows_for_b_leak_nothing(self, client: httpx.AsyncClient, db: DB) -> None:
        a, b = await sides(client, db)
        rows = [
            {"tax_account": b.lodging.tax_account, "room_revenue": "500.00", "room_nights": 2},
            {"tax_account": "PR-0000000-0", "room_revenue": "500.00", "room_nights": 2},
        ]
        r = await client.post(
            "/v1/remittance-schedules", json={"period": PERIOD, "rows": rows}, headers=a.fac
        )
        assert r.status_code == 201, r.text
        reasons = [x["errors"][0]["reason"] for x in r.json()["results"]]
        assert reasons[0].replace(b.lodging.tax_account, "X") == reasons[1].replace("PR-0000000-0", "X")
        assert r.json()["accepted"] == 0
        for_other = await client.post(
            "/v1/remittance-schedules",
            json={"period": PERIOD, "facilitator_id": b.facilitator, "rows": rows},
            headers=a.fac,
        )
        assert for_other.status_code == 403

    async def test_facilitator_no_longer_authorized_cannot_pay_undesignated(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        """Its lodging stays visible (its own past filings), but paying needs an authorization
        in force: for the periods it designates, or today when it designates none."""
        hotel = await make_lodging(db)
        fac = new_id("fac")
        await authorize(db, hotel, fac, starts_on=date(2026, 1, 1), ends_on=date(2026, 3, 31))
        r = await client.post(
            "/v1/payments", json=payment(hotel.tax_account, periods=[]), headers=as_facilitator(fac)
        )
        assert r.status_code == 422, r.text
        assert r.json()["errors"][0]["pointer"] == "#/body/periods"
        designated = await client.post(
            "/v1/payments", json=payment(hotel.tax_account), headers=as_facilitator(fac)
        )
        assert designated.status_code == 422
        assert await scalar(db, "SELECT count(*) FROM payments") == 0
        current = new_id("fac")
        await authorize(db, hotel, current, starts_on=date(2026, 1, 1))
        ok = await client.post(
            "/v1/payments", json=payment(hotel.tax_account, periods=[]), headers=as_facilitator(current)
        )
        assert ok.status_code == 201, ok.text


class TestReadOnlyAndAgencyOnlyRoutes:
    async def test_auditor_and_dashboard_read_everything_and_write_nothing(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        a, b = await sides(client, db)
        schedule_body = {"period": PERIOD, "facilitator_id": b.facilitator, "rows": [{"tax_account": "x"}]}
        for headers in (AUDITOR, DASHBOARD):
            for url in b.reads():
                assert (await client.get(url, headers=headers)).status_code == 200, url
            assert b.ids() <= (
                await visible_ids(client, "/v1/declarations", headers)
                | await visible_ids(client, "/v1/payments", headers)
            )
            for url, body in [*writes_on(b), ("/v1/remittance-schedules", schedule_body)]:
                r = await client.post(url, json=body, headers=headers)
                assert r.status_code == 403, (url, r.text)
        assert await scalar(db, "SELECT count(*) FROM payment_reversals") == 0

    async def test_operator_and_facilitator_get_403_on_agency_only_routes(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        a, _ = await sides(client, db)
        for headers in (a.operator, a.fac):
            r = await client.get(
                "/v1/compliance", params={"jurisdiction": "PR", "period": PERIOD}, headers=headers
            )
            assert r.status_code == 403
            for p in (a.operator_payment, a.facilitator_payment):
                r = await client.post(
                    f"/v1/payments/{p['id']}/reversals", json={"reason": "x"}, headers=headers
                )
                assert r.status_code in (403, 404), r.text
            own = a.operator_payment if headers == a.operator else a.facilitator_payment
            r = await client.post(
                f"/v1/payments/{own['id']}/reversals", json={"reason": "x"}, headers=headers
            )
            assert r.status_code == 403
        r = await client.post(
            "/v1/remittance-schedules",
            json={"period": PERIOD, "rows": [{"tax_account": a.lodging.tax_account}]},
            headers=a.operator,
        )
        assert r.status_code == 403
        assert await scalar(db, "SELECT count(*) FROM payment_reversals") == 0


class TestReceiptVerification:
    async def test_only_the_printed_code_verifies_a_receipt(self, client: httpx.AsyncClient, db: DB) -> None:
        _, b = await sides(client, db)
        code = b.operator_payment["id"]
        for guess in (code, b.lodging.tax_account, b.lodging.lodging_id, "AAAA-BBBB-CCCC-DDDD", "----"):
            r = await client.get(f"/v1/receipts/verify/{guess}")
            assert r.status_code == 404, guess
            assert "amount" not in r.json()
        receipt = (await client.get(f"/v1/payments/{code}/receipt", headers=ADMIN)).json()
        ok = await client.get(f"/v1/receipts/verify/{receipt['verification_code']}")
        assert (ok.status_code, ok.json()["tax_account"]) == (200, b.lodging.tax_account)

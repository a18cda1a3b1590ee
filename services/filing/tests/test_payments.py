from __future__ import annotations

from datetime import date
from typing import Any

import httpx
from filing_factories import (
    ADMIN,
    DASHBOARD,
    DB,
    as_facilitator,
    as_operator,
    make_lodging,
    new_id,
    outbox,
    scalar,
)


def payment(tax_account: str, **fields: Any) -> dict[str, Any]:
    return {
        "tax_account": tax_account,
        "amount": "1080.00",
        "method": "check",
        "reference": "CHK 1042",
        "periods": [{"period": "2026-10", "amount": "900.00"}],
        **fields,
    }


class TestRecordPayment:
    async def test_same_payment_posted_twice_with_one_key_is_recorded_once(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        headers = {**as_operator(hotel.operator_id), "Idempotency-Key": "pay-2026-10-0001"}
        first = await client.post("/v1/payments", json=payment(hotel.tax_account), headers=headers)
        second = await client.post("/v1/payments", json=payment(hotel.tax_account), headers=headers)
        assert first.status_code == second.status_code == 201
        assert second.headers.get("idempotent-replayed") == "true"
        assert first.json()["id"] == second.json()["id"]
        assert await scalar(db, "SELECT count(*) FROM payments") == 1
        events = await outbox(db, hotel.tax_account)
        assert [t for t, _ in events] == ["roomtax.filing.payment.received.v1"]
        data = events[0][1]["data"]
        assert (data["amount"], data["payer_kind"], data["periods"]) == (
            "1080.00",
            "operator",
            [{"period": "2026-10", "amount": "900.00"}],
        )
        out = first.json()
        assert (out["unallocated"], out["status"], out["received_on"]) == (
            "180.00",
            "received",
            date.today().isoformat(),
        )
        other = await client.post(
            "/v1/payments", json=payment(hotel.tax_account, amount="1.00", periods=[]), headers=headers
        )
        assert other.status_code == 422

    async def test_validation(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        over = payment(hotel.tax_account, periods=[{"period": "2026-10", "amount": "2000.00"}])
        r = await client.post("/v1/payments", json=over, headers=headers)
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/periods"
        r = await client.post(
            "/v1/payments", json=payment(hotel.tax_account, method="bitcoin"), headers=headers
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/method"
        r = await client.post(
            "/v1/payments", json=payment(hotel.tax_account, received_on="2026-10-01"), headers=headers
        )
        assert r.status_code == 403
        r = await client.post(
            "/v1/payments", json=payment(hotel.tax_account), headers=as_operator("op-other")
        )
        assert r.status_code == 404
        r = await client.post(
            "/v1/payments", json=payment(hotel.tax_account), headers=as_facilitator("fac-x")
        )
        assert r.status_code == 404
        r = await client.post("/v1/payments", json=payment(hotel.tax_account), headers=DASHBOARD)
        assert r.status_code == 403

    async def test_agency_records_a_counter_payment_for_a_payer(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        body = payment(
            hotel.tax_account,
            method="cash",
            received_on="2026-11-09",
            payer={"kind": "operator", "id": hotel.operator_id},
        )
        r = await client.post("/v1/payments", json=body, headers=ADMIN)
        assert r.status_code == 201, r.text
        assert (r.json()["received_on"], r.json()["payer"]["id"]) == ("2026-11-09", hotel.operator_id)
        listed = await client.get(
            "/v1/payments", params={"period": "2026-10", "method": "cash"}, headers=DASHBOARD
        )
        assert [p["id"] for p in listed.json()["items"]] == [r.json()["id"]]
        none = await client.get("/v1/payments", params={"period": "2026-09"}, headers=DASHBOARD)
        assert none.json()["items"] == []


class TestReceipt:
    async def test_receipt_json_pdf_and_verification(self, client: httpx.AsyncClient, db: DB) -> None:
        hotel = await make_lodging(db, name="Hotel Milano")
        headers = as_operator(hotel.operator_id)
        paid = (await client.post("/v1/payments", json=payment(hotel.tax_account), headers=headers)).json()
        receipt = (await client.get(f"/v1/payments/{paid['id']}/receipt", headers=headers)).json()
        assert receipt["agency"] == "Puerto Rico Tourism Company"
        assert (receipt["lodging_name"], receipt["amount"], receipt["method_label"]) == (
            "Hotel Milano",
            "1080.00",
            "Check",
        )
        assert receipt["periods"] == [{"period": "2026-10", "amount": "900.00"}]
        code = receipt["verification_code"]
        assert len(code) == 19
        assert receipt["verify_url"].endswith(code)
        pdf = await client.get(
            f"/v1/payments/{paid['id']}/receipt", params={"format": "pdf"}, headers=headers
        )
        assert pdf.status_code == 200
        assert pdf.headers["content-type"] == "application/pdf"
        assert pdf.content.startswith(b"%PDF")
        verified = await client.get(f"/v1/receipts/verify/{code.lower().replace('-', '')}")
        assert verified.status_code == 200
        assert (verified.json()["valid"], verified.json()["amount"]) == (True, "1080.00")
        forged = await client.get("/v1/receipts/verify/AAAA-BBBB-CCCC-DDDD")
        assert forged.status_code == 404
        other = await client.get(f"/v1/payments/{paid['id']}/receipt", headers=as_operator("op-other"))
        assert other.status_code == 404


class TestReversal:
    async def test_bounced_check_is_reversed_once_by_a_new_record(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        hotel = await make_lodging(db)
        paid = (
            await client.post(
                "/v1/payments", json=payment(hotel.tax_account), headers=as_operator(hotel.operator_id)
            )
        ).json()
        url = f"/v1/payments/{paid['id']}/reversals"
        body = {"reason": "check returned unpaid (insufficient funds)"}
        assert (await client.post(url, json=body, headers=as_operator(hotel.operator_id))).status_code == 403
        r = await client.post(url, json=body, headers=ADMIN)
        assert r.status_code == 201, r.text
        assert (r.json()["payment_id"], r.json()["amount"]) == (paid["id"], "1080.00")
        again = await client.post(url, json=body, headers=ADMIN)
        assert again.status_code == 409
        now = (await client.get(f"/v1/payments/{paid['id']}", headers=ADMIN)).json()
        assert (now["status"], now["amount"], now["reversal"]["id"]) == (
            "reversed",
            "1080.00",
            r.json()["id"],
        )
        assert await scalar(db, "SELECT amount FROM payments WHERE id = :i", i=paid["id"]) == 1080
        types = [t for t, _ in await outbox(db, hotel.tax_account)]
        assert types == ["roomtax.filing.payment.received.v1", "roomtax.filing.payment.reversed.v1"]
        code = now and (await client.get(f"/v1/payments/{paid['id']}/receipt", headers=ADMIN)).json()
        verified = (await client.get(f"/v1/receipts/verify/{code['verification_code']}")).json()
        assert (verified["valid"], verified["status"]) == (False, "reversed")
        listed = await client.get("/v1/payments", params={"status": "reversed"}, headers=ADMIN)
        assert [p["id"] for p in listed.json()["items"]] == [paid["id"]]
        assert new_id("x")

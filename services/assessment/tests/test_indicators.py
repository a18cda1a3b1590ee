"""TADAT indicators over a known window: PR, periods 2026-03..2026-04, records as of 2026-04-30.

Lodgings (all PR hotels, 9%, registered 2025-01-01 unless said):
- A: 2026-03 declared on time (100,000.00 -> tax 9,000.00, due 2026-04-10); pays 9,100.00 on the
  due date (100.00 credit, refunded: requested 2026-04-15, paid 2026-04-25 -> 10 days).
- B: 2026-03 declared on time (9,000.00), pays 4,500.00 on the due date. Also 2025-01 (9,000.00,
  due 2025-02-10, unpaid) and 2025-12 (9,000.00, due 2026-01-10; 3,000.00 paid 2026-02-01), both
  notified 2026-03-02 and disputed in full: cases opened 2026-03-05 and 2026-03-06, sustained
  2026-03-20 and 2026-03-26 (15 and 20 days).
- C: 2026-03 declared late (2026-04-20; 50,000.00 -> 4,500.00) and paid 4,500.00 that day.
- D: files nothing. F: registered 2026-05-01 (nothing expected). V: a VI lodging (not counted).

P4-10: expected A, B, C, D for 2026-03 (2026-04 is due 2026-05-10, after as_of); on time A, B: 2/4.
P5-11: 2026-03 of A, B, C is due with principal 9,000 + 9,000 + 4,500 = 22,500.00; paid in full by
  the due date: A (1 of 3); by value 9,000 + 4,500 + 0 = 13,500.00 of 22,500.00 = 60.00%.
P5-12 on 2026-04-30: unpaid principal 9,000 (B 2025-01) + 6,000 (B 2025-12) + 4,500 (B 2026-03)
  = 19,500.00; older than 12 months (due before 2025-04-30): 9,000.00 = 46.15%. Collections of
  2025-05-01..2026-04-30: 3,000 + 9,000 + 4,500 + 4,500 = 21,000.00 (A's 100.00 credit was never
  applied to a period, so never posted); 19,500 / 21,000 = 92.86%.
P6-13: B's 2026-03 audited (opened 2026-04-21, closed 2026-04-28 after a notice: the records show
  110,000.00 of room revenue -> 9,900.00 tax, 900.00 more); coverage 1 of the 4 lodgings registered
  by 2026-04-30 (F is not) = 25.00; yield 900.00 from 1 audit closed.
P6-14: an intermediary filed 2026-04 for B, C and D; B and C filed their own returns (cross-checked),
  D did not (nothing to compare): 2 of 3 = 66.67; C declared 1,000.00 against the intermediary's
  5,000.00 (a shortfall finding): 1 of the 2 checked = 50.00.
P7: 2 disputes opened; median of 15 and 20 days = 17.5. P8: one refund, 10 days.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import httpx
import pytest
from assessment_factories import ADMIN, AUDITOR, Bus, new_account
from casework_factories import MAKER, today_is

from servicekit.testing import auth

CHECKER = auth("agency-officer", user_id="u-checker")


async def notify(client: httpx.AsyncClient, account: str, period: str) -> dict[str, Any]:
    r = await client.post(
        "/v1/notices",
        json={"tax_account": account, "period": period, "reason": "unpaid", "issued_on": "2026-03-02"},
        headers=ADMIN,
    )
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def dispute(client: httpx.AsyncClient, notice: dict[str, Any], operator: dict[str, str]) -> str:
    r = await client.post(
        f"/v1/notices/{notice['id']}/responses",
        json={"kind": "dispute", "disputed_amount": notice["amounts"]["total"], "statement": "x"},
        headers=operator,
    )
    assert r.status_code == 201, r.text
    cases = (
        await client.get("/v1/cases", params={"tax_account": notice["tax_account"]}, headers=MAKER)
    ).json()
    return next(str(c["id"]) for c in cases if c["notice_id"] == notice["id"])


async def sustain(client: httpx.AsyncClient, case_id: str) -> None:
    assert (await client.post(f"/v1/cases/{case_id}/review", headers=MAKER)).status_code == 200
    r = await client.post(
        f"/v1/cases/{case_id}/decision", json={"outcome": "sustain", "reasons": "owed"}, headers=MAKER
    )
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "decided"


async def refund(
    client: httpx.AsyncClient, account: str, operator: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    today_is(monkeypatch, date(2026, 4, 15))
    r = await client.post(f"/v1/accounts/{account}/refunds", json={"amount": "100.00"}, headers=operator)
    assert r.status_code == 201, r.text
    refund_id = r.json()["refund_id"]
    assert (await client.post(f"/v1/refunds/{refund_id}/review", headers=MAKER)).status_code == 200
    r = await client.post(
        f"/v1/refunds/{refund_id}/decision", json={"outcome": "approve", "reasons": "overpaid"}, headers=MAKER
    )
    ok = await client.post(
        f"/v1/proposals/{r.json()['pending_proposal_id']}/approve", json={}, headers=CHECKER
    )
    assert ok.status_code == 200, ok.text
    today_is(monkeypatch, date(2026, 4, 25))
    r = await client.post(
        f"/v1/refunds/{refund_id}/payment", json={"method": "ach", "reference": "ACH-1"}, headers=MAKER
    )
    assert r.status_code == 200, r.text
    ok = await client.post(
        f"/v1/proposals/{r.json()['pending_proposal_id']}/approve", json={}, headers=CHECKER
    )
    assert ok.status_code == 200, ok.text


async def known_window(client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch) -> None:
    today_is(monkeypatch, date(2026, 3, 2))
    a, b, c, d, f = (new_account() for _ in range(5))
    v = new_account("VI")
    for account, op in ((a, "op-ia"), (b, "op-ib"), (c, "op-ic"), (d, "op-id")):
        await bus.lodging(account, operator_id=op, registered_on="2025-01-01")
    await bus.lodging(f, operator_id="op-if", registered_on="2026-05-01")
    await bus.lodging(v, jurisdiction="VI", operator_id="op-iv", registered_on="2025-01-01")
    await bus.declare(b, "2025-01", filer_id="op-ib")
    await bus.declare(b, "2025-12", filer_id="op-ib")
    await bus.pay(b, "3000.00", date(2026, 2, 1), periods={"2025-12": "3000.00"})
    op_b = auth("operator", operator_id="op-ib")
    jan, dec = await notify(client, b, "2025-01"), await notify(client, b, "2025-12")
    today_is(monkeypatch, date(2026, 3, 5))
    first = await dispute(client, jan, op_b)
    today_is(monkeypatch, date(2026, 3, 6))
    second = await dispute(client, dec, op_b)
    today_is(monkeypatch, date(2026, 3, 20))
    await sustain(client, first)
    today_is(monkeypatch, date(2026, 3, 26))
    await sustain(client, second)
    today_is(monkeypatch, date(2026, 4, 10))
    await bus.declare(a, "2026-03", filer_id="op-ia")
    await bus.declare(b, "2026-03", filer_id="op-ib")
    await bus.declare(v, "2026-03", jurisdiction="VI", filer_id="op-iv")
    await bus.pay(a, "9100.00", date(2026, 4, 10), periods={"2026-03": "9100.00"})
    await bus.pay(b, "4500.00", date(2026, 4, 10), periods={"2026-03": "4500.00"})
    await bus.pay(v, "100.00", date(2026, 4, 10), jurisdiction="VI")
    today_is(monkeypatch, date(2026, 4, 20))
    await bus.declare(c, "2026-03", filer_id="op-ic", room_revenue="50000.00", filed_on=date(2026, 4, 20))
    await bus.pay(c, "4500.00", date(2026, 4, 20), periods={"2026-03": "4500.00"})
    await refund(client, a, auth("operator", operator_id="op-ia"), monkeypatch)
    await audit_and_crosschecks(client, bus, monkeypatch, audited=b, others=(b, c, d))


async def audit_and_crosschecks(
    client: httpx.AsyncClient,
    bus: Bus,
    monkeypatch: pytest.MonkeyPatch,
    *,
    audited: str,
    others: tuple[str, str, str],
) -> None:
    today_is(monkeypatch, date(2026, 4, 21))
    body = {"tax_account": audited, "periods": ["2026-03"], "reason": "risk", "source": "risk_score"}
    r = await client.post("/v1/audits", json=body, headers=ADMIN)
    assert r.status_code == 201, r.text
    base = f"/v1/audits/{r.json()['id']}"
    finding = {
        "period": "2026-03",
        "lines": {"room_revenue": "110000.00", "room_nights": 100},
        "note": "folios",
    }
    r = await client.post(f"{base}/findings", json=finding, headers=ADMIN)
    assert r.status_code == 200, r.text
    r = await client.post(f"{base}/notice", json={}, headers=ADMIN)
    assert (r.status_code, r.json()["notice"]["additional_tax"]) == (200, "900.00"), r.text
    today_is(monkeypatch, date(2026, 4, 28))
    r = await client.post(f"{base}/close", json={"outcome": "assessed", "note": "amended"}, headers=ADMIN)
    assert r.status_code == 200, r.text
    b, c, d = others
    on = date(2026, 4, 28)
    lines = {"room_revenue": "5000.00", "room_nights": 5}
    await bus.declare(b, "2026-04", filer_id="op-ib", lines=lines, filed_on=on)
    await bus.declare(c, "2026-04", filer_id="op-ic", lines={**lines, "room_revenue": "1000.00"}, filed_on=on)
    for account in (b, c, d):
        await bus.declare(
            account, "2026-04", filer_kind="facilitator", filer_id="fac-i", lines=lines, filed_on=on
        )


class TestIndicators:
    async def test_known_window(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        await known_window(client, bus, monkeypatch)
        today_is(monkeypatch, date(2026, 4, 30))
        r = await client.get(
            "/v1/indicators",
            params={"jurisdiction": "PR", "from": "2026-03", "to": "2026-04", "as_of": "2026-04-30"},
            headers=AUDITOR,
        )
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["window"] == {
            "from": "2026-03",
            "to": "2026-04",
            "starts_on": "2026-03-01",
            "ends_on": "2026-04-30",
            "as_of": "2026-04-30",
        }
        figures = {
            (f["code"], f["name"]): (f["value"], f["numerator"], f["denominator"]) for f in out["indicators"]
        }
        assert figures == {
            ("P4-10", "on_time_filing_rate"): ("50.00", "2", "4"),
            ("P5-11", "on_time_payment_rate_by_number"): ("33.33", "1", "3"),
            ("P5-11", "on_time_payment_rate_by_value"): ("60.00", "13500.00", "22500.00"),
            ("P5-12", "arrears_to_collections"): ("92.86", "19500.00", "21000.00"),
            ("P5-12", "arrears_older_than_12_months"): ("46.15", "9000.00", "19500.00"),
            ("P6-13", "audit_coverage"): ("25.00", "1", "4"),
            ("P6-13", "audit_yield"): ("900.00", "900.00", "1"),
            ("P6-14", "crosscheck_coverage"): ("66.67", "2", "3"),
            ("P6-14", "crosscheck_findings_rate"): ("50.00", "1", "2"),
            ("P7", "disputes_opened"): ("2", None, None),
            ("P7", "median_days_to_decision"): ("17.5", None, "2"),
            ("P8", "median_days_refund_request_to_payment"): ("10", None, "1"),
        }
        # what each part counts, so a client formats money as money and counts as integers
        units = {f["name"]: (f["numerator_unit"], f["denominator_unit"]) for f in out["indicators"]}
        money, count = ("amount", "amount"), ("count", "count")
        assert units == {
            "on_time_filing_rate": count,
            "on_time_payment_rate_by_number": count,
            "on_time_payment_rate_by_value": money,
            "arrears_to_collections": money,
            "arrears_older_than_12_months": money,
            "audit_coverage": count,
            "audit_yield": ("amount", "count"),
            "crosscheck_coverage": count,
            "crosscheck_findings_rate": count,
            "disputes_opened": (None, None),
            "median_days_to_decision": (None, "count"),
            "median_days_refund_request_to_payment": (None, "count"),
        }
        assert all(f["definition"] for f in out["indicators"])
        assert [f["name"] for f in out["indicators"] if f["value"] is None] == []
        coverage = next(f for f in out["indicators"] if f["name"] == "audit_coverage")
        assert coverage["definition"] == (
            "Lodgings with an audit opened in the window (2026-03-01 to 2026-04-30) as a percentage of "
            "the lodgings registered by the window's last day (PR §2(4), §9, §10, §32)."
        )
        # the values a client needs to word the definitions in its reader's language
        terms = {f["name"]: f["terms"] for f in out["indicators"] if f["terms"]}
        assert terms == {
            "arrears_to_collections": {"end": "2026-04-30", "year_from": "2025-05-01"},
            "arrears_older_than_12_months": {"year_ago": "2025-04-30"},
            "audit_coverage": {
                "starts_on": "2026-03-01",
                "ends_on": "2026-04-30",
                "jurisdiction": "PR",
                "section": "§2(4), §9, §10, §32",
            },
            "audit_yield": {"starts_on": "2026-03-01", "ends_on": "2026-04-30"},
            "crosscheck_coverage": {"jurisdiction": "PR", "section": "§2(20), §24(A), §32"},  # its parameters
        }
        arrears = next(f for f in out["indicators"] if f["name"] == "arrears_to_collections")
        assert arrears["definition"].endswith(
            "from payments received in the 12 months ending that day (2025-05-01 to 2026-04-30)."
        )
        assert {f["reason_code"] for f in out["indicators"]} == {None}
        # VI: only lodging V; its 2026-03 is due 2026-04-30, not before as_of -- nothing expected
        vi = await client.get(
            "/v1/indicators",
            params={"jurisdiction": "VI", "from": "2026-03", "to": "2026-04", "as_of": "2026-04-30"},
            headers=AUDITOR,
        )
        first = vi.json()["indicators"][0]
        assert (first["value"], first["denominator"], first["reason"], first["reason_code"]) == (
            None,
            "0",
            "nothing to measure in the window (the denominator is zero)",
            "nothing_to_measure",
        )
        vi_p6 = {
            f["name"]: (f["value"], f["reason"], f["reason_code"])
            for f in vi.json()["indicators"]
            if f["code"][:2] == "P6"
        }
        empty = "nothing to measure in the window (the denominator is zero)"
        assert vi_p6 == {
            "audit_coverage": ("0.00", None, None),
            "audit_yield": (None, "no audit was closed in the window", "no_audit_closed"),
            "crosscheck_coverage": (None, empty, "nothing_to_measure"),
            "crosscheck_findings_rate": (None, empty, "nothing_to_measure"),
        }


class TestIndicatorAccess:
    async def test_agency_only_and_bad_windows(self, client: httpx.AsyncClient) -> None:
        params = {"jurisdiction": "PR", "from": "2026-01", "to": "2026-10"}
        for who in (auth("operator", operator_id="op-x"), auth("facilitator", facilitator_id="f-x")):
            assert (await client.get("/v1/indicators", params=params, headers=who)).status_code == 403
        assert (
            await client.get("/v1/indicators", params=params, headers=auth("dashboard"))
        ).status_code == 200
        backwards = await client.get("/v1/indicators", params={**params, "to": "2025-12"}, headers=AUDITOR)
        assert backwards.status_code == 422
        assert backwards.json()["errors"][0]["pointer"] == "#/query/to"
        month = await client.get("/v1/indicators", params={**params, "from": "2026-13"}, headers=AUDITOR)
        assert month.status_code == 422
        assert month.json()["errors"][0]["pointer"] == "#/query/from"
        future = await client.get("/v1/indicators", params={**params, "as_of": "2099-01-01"}, headers=AUDITOR)
        assert future.status_code == 422
        assert future.json()["errors"][0]["pointer"] == "#/query/as_of"

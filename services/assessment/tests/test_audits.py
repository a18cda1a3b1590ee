"""Audits: scope, records request letter, findings per period, the proposed assessment computed by
taxcore, the notice of audit assessment, closure; overlapping scopes are a 409 naming the field."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import yaml
from assessment_factories import ADMIN, AUDITOR, TODAY, Bus, new_account
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from test_jobs_and_notices import pdf_text

import taxcore
from assessment.audits.repository import audit_coverage
from servicekit.testing import auth
from taxcore.periods import Period

TAXCORE_GOLDEN = Path(taxcore.__file__).resolve().parents[1] / "golden"
OPERATOR = auth("operator", operator_id="op-au")
OTHER = auth("operator", operator_id="op-au-other")
#: the proposed assessment of ``audited_lodging`` with 2,000.00 the OTA kept found (taxcore's golden case)
GOLDEN_VI_AUDIT = yaml.safe_load((TAXCORE_GOLDEN / "vi_audit.yaml").read_text(encoding="utf-8"))


async def audited_lodging(bus: Bus) -> tuple[str, str]:
    """A VI hotel that declared 8,000.00 for 2026-03 (tax 1,000.00) and nothing the OTAs kept."""
    account = new_account("VI")
    await bus.lodging(account, jurisdiction="VI", operator_id="op-au")
    event = await bus.declare(
        account,
        "2026-03",
        jurisdiction="VI",
        filer_id="op-au",
        lines={"room_revenue": "8000.00", "room_nights": 40},
    )
    return account, str(event.data["declaration_id"])


async def post(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], status: int = 200
) -> dict[str, Any]:
    r = await client.post(path, json=body, headers=ADMIN)
    assert r.status_code == status, r.text
    return r.json()  # type: ignore[no-any-return]


async def open_audit(client: httpx.AsyncClient, account: str, periods: list[str]) -> dict[str, Any]:
    body = {"tax_account": account, "periods": periods, "reason": "cross-check gap", "source": "crosscheck"}
    return await post(client, "/v1/audits", body, 201)


class TestAuditWorkflow:
    async def test_from_scope_to_closure(self, client: httpx.AsyncClient, bus: Bus) -> None:
        account, decl = await audited_lodging(bus)
        audit = await open_audit(client, account, ["2026-04", "2026-03"])
        assert (audit["status"], audit["periods"], audit["section"], audit["opened_on"]) == (
            "open",
            ["2026-03", "2026-04"],
            "§54(d)",
            TODAY.isoformat(),
        )
        base = f"/v1/audits/{audit['id']}"
        requested = await post(client, f"{base}/records-request", {})
        assert (requested["status"], requested["records_due_on"]) == ("records_requested", "2026-12-30")
        letter = (await client.get(f"{base}/letter", headers=OPERATOR)).json()
        assert letter["text"] == (
            "Under §54(d) the agency is auditing the tax periods 2026-03, 2026-04. "
            "Please make the records listed below available to the auditor by 2026-12-30."
        )
        assert (letter["agency"], letter["due_on"], len(letter["records"])) == (
            "Virgin Islands Bureau of Internal Revenue",
            "2026-12-30",
            4,
        )
        pdf = await client.get(f"{base}/letter.pdf", headers=OPERATOR)
        assert pdf.headers["content-type"] == "application/pdf"
        text = pdf_text(pdf.content)
        assert pdf.headers["content-language"] == "en"  # a VI lodging: English
        assert "Records request" in text
        assert "Records due: December 30, 2026" in text
        assert f"Tax account: {account}" in text
        under = "Under §54(d) the agency is auditing the tax periods 2026-03, 2026-04."
        assert under in " ".join(text.split())
        spanish = pdf_text((await client.get(f"{base}/letter.pdf?lang=es", headers=OPERATOR)).content)
        assert "Requerimiento de documentos" in spanish
        assert "Documentos requeridos para: 30 de diciembre de 2026" in spanish

        lines = {"room_revenue": "8000.00", "intermediary_retained": "2000.00", "room_nights": 40}
        found = await post(
            client, f"{base}/findings", {"period": "2026-03", "lines": lines, "note": "OTA statements"}
        )
        assert found["status"] == "findings_recorded"
        assert found["findings"]["2026-03"]["lines"]["intermediary_retained"] == "2000.00"

        proposed = (await client.get(f"{base}/proposed-assessment", headers=OPERATOR)).json()
        assert proposed["additional_tax"] == "250.00"
        assert proposed["periods"] == [GOLDEN_VI_AUDIT["cases"][0]["output"]]
        noticed = await post(client, f"{base}/notice", {})
        notice = noticed["notice"]
        assert (noticed["status"], notice["additional_tax"], notice["response_due_on"]) == (
            "notice_issued",
            "250.00",
            "2026-12-30",
        )
        [amend] = notice["amendments"]
        assert (amend["period"], amend["method"], amend["href"]) == (
            "2026-03",
            "POST",
            f"/v1/declarations/{decl}/amendments",
        )
        assert amend["body"]["intermediary_retained"] == "2000.00"
        assert amend["body"]["declared"] == {
            "taxable_base": "10000.00",
            "tax": "1250.00",
            "impact_fee": "0.00",
            "total": "1250.00",
        }
        r = await client.post(
            f"{base}/findings", json={"period": "2026-04", "lines": lines, "note": "x"}, headers=ADMIN
        )
        assert r.status_code == 409
        closed = await post(client, f"{base}/close", {"outcome": "assessed", "note": "amendment filed"})
        assert (closed["status"], closed["closed"]["outcome"]) == ("closed", "assessed")
        # a closed audit no longer holds its periods
        again = await open_audit(client, account, ["2026-04"])
        assert again["status"] == "open"

    async def test_a_period_without_a_return_is_assessed_as_a_new_return(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account, _ = await audited_lodging(bus)
        audit = await open_audit(client, account, ["2026-05"])
        base = f"/v1/audits/{audit['id']}"
        lines = {"room_revenue": "4000.00", "room_nights": 20}
        await post(client, f"{base}/findings", {"period": "2026-05", "lines": lines, "note": "bank deposits"})
        notice = (await post(client, f"{base}/notice", {}))["notice"]
        assert notice["additional_tax"] == "500.00"  # 12.5% of 4,000.00, nothing filed
        [amend] = notice["amendments"]
        assert (amend["href"], amend["body"]["lodging"], amend["body"]["period"]) == (
            "/v1/declarations",
            account,
            "2026-05",
        )
        assert amend["body"]["declared"]["total"] == "500.00"

    async def test_coverage_and_yield_for_the_indicators(
        self, client: httpx.AsyncClient, bus: Bus, db: async_sessionmaker[AsyncSession]
    ) -> None:
        account, _ = await audited_lodging(bus)
        await bus.lodging(new_account("VI"), jurisdiction="VI", operator_id="op-au")  # not audited
        audit = await open_audit(client, account, ["2026-03"])
        base = f"/v1/audits/{audit['id']}"
        lines = {"room_revenue": "8400.00", "room_nights": 40}
        await post(client, f"{base}/findings", {"period": "2026-03", "lines": lines, "note": "folios"})
        await post(client, f"{base}/notice", {})
        await post(client, f"{base}/close", {"outcome": "agreed", "note": "paid"})
        async with db() as session:
            got = await audit_coverage(
                session, jurisdiction="VI", first=Period.parse("2026-11"), last=Period.parse("2026-11")
            )
            before = await audit_coverage(
                session, jurisdiction="VI", first=Period.parse("2026-10"), last=Period.parse("2026-10")
            )
        assert (got.lodgings, got.audited, got.closed, got.assessed) == (2, 1, 1, Decimal("50.00"))
        assert (before.audited, before.closed, before.assessed) == (0, 0, Decimal("0.00"))


class TestAuditBadInput:
    async def test_periods_already_under_audit_are_a_409_and_nothing_changes(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account, _ = await audited_lodging(bus)
        first = await open_audit(client, account, ["2026-02", "2026-03"])
        body = {"tax_account": account, "periods": ["2026-01", "2026-03"], "reason": "again"}
        r = await client.post("/v1/audits", json=body, headers=ADMIN)
        assert r.status_code == 409
        problem = r.json()
        assert problem["errors"] == [
            {"pointer": "#/body/periods/1", "detail": f"already under open audit {first['id']}"}
        ]
        listed = (await client.get("/v1/audits", params={"tax_account": account}, headers=ADMIN)).json()
        assert [a["id"] for a in listed] == [first["id"]]

    async def test_field_errors(self, client: httpx.AsyncClient, bus: Bus) -> None:
        account, _ = await audited_lodging(bus)
        cases = [
            ({"tax_account": "VI-0000000-0", "periods": ["2026-03"], "reason": "x"}, "#/body/tax_account"),
            ({"tax_account": account, "periods": ["2026-03", "2026-03"], "reason": "x"}, "#/body/periods/1"),
            ({"tax_account": account, "periods": ["2027-01"], "reason": "x"}, "#/body/periods/0"),
        ]
        for body, pointer in cases:
            r = await client.post("/v1/audits", json=body, headers=ADMIN)
            assert r.status_code == 422, r.text
            assert r.json()["errors"][0]["pointer"] == pointer
        audit = await open_audit(client, account, ["2026-03"])
        base = f"/v1/audits/{audit['id']}"
        r = await client.post(
            f"{base}/findings", json={"period": "2025-01", "lines": {}, "note": "x"}, headers=ADMIN
        )
        assert (r.status_code, r.json()["errors"][0]["pointer"]) == (422, "#/body/period")
        r = await client.post(f"{base}/records-request", json={"due_on": TODAY.isoformat()}, headers=ADMIN)
        assert (r.status_code, r.json()["errors"][0]["pointer"]) == (422, "#/body/due_on")
        assert (await client.post(f"{base}/notice", json={}, headers=ADMIN)).status_code == 409
        r = await client.post(f"{base}/close", json={"outcome": "assessed", "note": "x"}, headers=ADMIN)
        assert (r.status_code, r.json()["errors"][0]["pointer"]) == (422, "#/body/outcome")
        assert (await client.get(f"{base}/letter", headers=ADMIN)).status_code == 404  # no request yet


class TestAuditIsolation:
    async def test_the_operator_sees_its_own_others_get_404_and_only_staff_write(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account, _ = await audited_lodging(bus)
        audit = await open_audit(client, account, ["2026-03"])
        base = f"/v1/audits/{audit['id']}"
        await post(client, f"{base}/records-request", {"due_on": date(2027, 1, 15).isoformat()})
        for path in (base, f"{base}/letter", f"{base}/letter.pdf", f"{base}/proposed-assessment"):
            assert (await client.get(path, headers=OPERATOR)).status_code == 200, path
            assert (await client.get(path, headers=OTHER)).status_code == 404, path
            assert (
                await client.get(path, headers=auth("facilitator", facilitator_id="f-au"))
            ).status_code == 404
        assert (await client.get("/v1/audits", headers=OTHER)).json() == []
        assert [a["id"] for a in (await client.get("/v1/audits", headers=OPERATOR)).json()] == [audit["id"]]
        writes = [
            ("/v1/audits", {"tax_account": account, "periods": ["2026-04"], "reason": "x"}),
            (f"{base}/records-request", {}),
            (f"{base}/findings", {"period": "2026-03", "lines": {}, "note": "x"}),
            (f"{base}/notice", {}),
            (f"{base}/close", {"outcome": "no_change", "note": "x"}),
        ]
        for path, body in writes:
            for who in (OPERATOR, AUDITOR):
                r = await client.post(path, json=body, headers=who)
                assert r.status_code == 403, (path, r.text)
            assert (await client.post(path, json=body, headers=OTHER)).status_code == (
                403 if path == "/v1/audits" else 404
            )

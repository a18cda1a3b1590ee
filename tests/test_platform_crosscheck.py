"""Cross-checks across services: an intermediary's remittance schedule at filing reports more
for a lodging than its operator declared, and assessment records the finding on the operator's
declaration (VI §54(b)(1)), visible to the operator and the agency, not to another operator.
The agency then opens an audit from the risk list, records the base the folios show, and files
the notice's amendment at filing on the lodging's behalf: assessment's account of the period is
the amended return plus the intermediary's own, as for any return.

Real processes (registry, filing, assessment), real TCP, a real broker; driven through HTTP only.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from platform_harness import TODAY, Api, Platform, eventually, new_client

from taxcore.periods import Period

M = Period.of(TODAY).prev()  # a closed month: returns for it may be filed


@pytest.fixture(scope="module")
async def platform() -> AsyncIterator[Platform]:
    p = Platform(prefix="roomtax_e2e_crosscheck")
    try:
        await p.start(("registry", "filing", "assessment"))
        yield p
    finally:
        p.stop()


async def test_an_intermediary_reporting_more_puts_a_finding_on_the_operators_declaration(
    platform: Platform,
) -> None:
    tag = uuid.uuid4().hex[:6]
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    apis: list[Api] = [admin]
    try:

        async def party(kind: str, name: str) -> dict[str, Any]:
            body = {"name": f"{name} {tag}", "email": f"tax@{kind}-{tag}.example"}
            out: dict[str, Any] = await admin.post("registry", f"/v1/{kind}", body, expect=201)
            return out

        hotelier, other, ota = (
            await party("operators", "Sapphire Beach Hotel LLC"),
            await party("operators", "Another Operator"),
            await party("facilitators", "CaribStays OTA"),
        )
        lodging = await admin.post(
            "registry",
            "/v1/lodgings",
            {
                "jurisdiction": "VI",
                "lodging_class": "hotel",
                "name": f"Sapphire Beach {tag}",
                "address": {"line1": "1 Smith Bay", "municipality": "St. Thomas"},
                "room_count": 20,
                "operator_id": hotelier["id"],
                "registered_on": (M.first_day - timedelta(days=365)).isoformat(),
            },
            expect=201,
        )
        account = lodging["tax_account"]
        await admin.post(
            "registry",
            f"/v1/lodgings/{account}/authorizations",
            {"facilitator_id": ota["id"], "starts_on": (M.first_day - timedelta(days=365)).isoformat()},
            expect=201,
        )
        pms = await new_client(platform, admin, f"sapphire-pms-{tag}", "operator", operator_id=hotelier["id"])
        stranger = await new_client(platform, admin, f"other-pms-{tag}", "operator", operator_id=other["id"])
        ota_api = await new_client(
            platform, admin, f"caribstays-{tag}", "facilitator", facilitator_id=ota["id"]
        )
        apis += [pms, stranger, ota_api]

        async def filing_knows() -> bool:
            mine = await pms.call("GET", "filing", f"/v1/lodgings/{account}/periods/{M}")
            theirs = await ota_api.call("GET", "filing", f"/v1/lodgings/{account}/periods/{M}")
            return mine.status_code == 200 and theirs.status_code == 200

        await eventually(filing_knows)
        # the hotel declares 8,000.00 of room revenue (12.5% = 1,000.00) and nothing kept by OTAs
        decl = await pms.post(
            "filing",
            "/v1/declarations",
            {
                "lodging": account,
                "period": str(M),
                "room_revenue": "8000.00",
                "room_nights": 40,
                "declared": {"taxable_base": "8000.00", "tax": "1000.00", "total": "1000.00"},
            },
            expect=201,
        )
        # the OTA reports 9,000.00 paid for stays there, 1,000.00 of it kept: 10,000.00 of gross (§54(b)(1))
        schedule = await ota_api.post(
            "filing",
            "/v1/remittance-schedules",
            {
                "period": str(M),
                "rows": [
                    {
                        "tax_account": account,
                        "room_revenue": "9000.00",
                        "intermediary_retained": "1000.00",
                        "room_nights": 45,
                        "declared_taxable_base": "10000.00",
                        "declared_tax": "1250.00",
                        "declared_total": "1250.00",
                    }
                ],
            },
            expect=201,
        )
        assert (schedule["status"], schedule["accepted"]) == ("accepted", 1)

        path = f"/v1/declarations/{decl['id']}/crosschecks"

        async def finding() -> list[dict[str, Any]] | None:
            r = await pms.call("GET", "assessment", path)
            return r.json() if r.status_code == 200 and r.json() else None  # type: ignore[no-any-return]

        # two events through a consumer group that may still be joining on a loaded CI machine
        found = await eventually(finding, timeout=180)
        assert [
            (f["rule"], f["declaration_id"], f["declared"], f["reported"], f["difference"], f["section"])
            for f in found
        ] == [("intermediary_shortfall", decl["id"], "8000.00", "10000.00", "2000.00", "§54(b)(1)")]
        assert found[0]["message"] == (
            f"declared gross receipts 8000.00 are 2000.00 below the 10000.00 that online intermediaries "
            f"reported for the lodging in {M} (tolerance 100.00)"
        )
        agency = await admin.get(
            "assessment", "/v1/crosschecks", params={"jurisdiction": "VI", "period": str(M)}
        )
        assert [(f["tax_account"], f["rule"]) for f in agency] == [(account, "intermediary_shortfall")]
        assert (await stranger.call("GET", "assessment", path)).status_code == 404
        assert (
            await stranger.call("GET", "assessment", f"/v1/accounts/{account}/crosschecks")
        ).status_code == 404
        assert (await pms.call("GET", "assessment", "/v1/crosschecks")).status_code == 403

        # ------------------------------------------------ audit selection, the audit, its amendment
        [row] = await admin.get("assessment", "/v1/risk-scores", params={"jurisdiction": "VI"})
        assert (row["tax_account"], row["rank"]) == (account, 1)
        assert {f["factor"]: f["points"] for f in row["factors"]}["findings"] == "5.00"
        audit = await admin.post(
            "assessment", row["open_audit"]["href"], row["open_audit"]["body"], expect=201
        )
        assert audit["periods"] == [str(M)]
        base = f"/v1/audits/{audit['id']}"
        await admin.post("assessment", f"{base}/records-request", {}, expect=200)
        letter = await pms.get("assessment", f"{base}/letter")
        assert letter["periods"] == [str(M)]
        # the folios show 9,000.00 of the hotel's own room revenue, not 8,000.00
        lines = {"room_revenue": "9000.00", "room_nights": 45}
        await admin.post(
            "assessment", f"{base}/findings", {"period": str(M), "lines": lines, "note": "folios"}
        )
        notice = (await admin.post("assessment", f"{base}/notice", {}, expect=200))["notice"]
        assert notice["additional_tax"] == "125.00"
        [amend] = notice["amendments"]
        assert amend["href"] == f"/v1/declarations/{decl['id']}/amendments"
        amended = await admin.post("filing", amend["href"], amend["body"], expect=201)
        assert (amended["version"], amended["filer"], amended["flagged"]) == (2, decl["filer"], False)

        async def assessed() -> dict[str, Any] | None:
            st = await pms.get("assessment", f"/v1/accounts/{account}/statement")
            [period] = [p for p in st["periods"] if p["period"] == str(M)]
            versions = {f["filer_kind"]: f["version"] for f in period["filings"]}
            return period if versions.get("operator") == 2 else None

        period = await eventually(assessed)
        assert period["principal"]["tax"] == "2375.00"  # 1,125.00 amended + the OTA's own 1,250.00
        await admin.post(
            "assessment", f"{base}/close", {"outcome": "assessed", "note": "amended"}, expect=200
        )
    finally:
        for api in apis:
            await api.close()

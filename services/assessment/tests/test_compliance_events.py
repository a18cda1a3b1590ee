"""Cross-check findings and audit steps are events (topic ``assessment.cases``), committed with
their rows, published once, and in the account's timeline."""

from __future__ import annotations

import json
from typing import Any

import httpx
from assessment_factories import ADMIN, TODAY, Bus, cloud_event, new_account, rows
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]
OPERATOR = auth("operator", operator_id="op-ce")
OTHER = auth("operator", operator_id="op-ce-other")
FINDINGS = "roomtax.assessment.crosscheck.findings.recorded.v1"
AUDIT_STEP = "roomtax.assessment.audit.step.recorded.v1"


async def events(db: DB, account: str, event_type: str) -> list[tuple[str, dict[str, Any]]]:
    found = await rows(
        db,
        "SELECT topic, payload FROM outbox WHERE key = :a AND event_type = :t ORDER BY id",
        a=account,
        t=event_type,
    )
    return [(topic, (p if isinstance(p, dict) else json.loads(p))["data"]) for topic, p in found]


async def timeline(client: httpx.AsyncClient, account: str, prefix: str) -> list[tuple[Any, ...]]:
    r = await client.get(f"/v1/accounts/{account}/timeline", headers=OPERATOR)
    assert r.status_code == 200, r.text
    return [
        (e["kind"], e["period"], e["amount"], e["section"], e["summary"])
        for e in r.json()["entries"]
        if e["kind"].startswith(prefix)
    ]


class TestCrosscheckEvents:
    async def test_a_finding_is_published_once_and_its_clearing_too(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI", operator_id="op-ce")
        first = await bus.declare(
            account,
            "2026-03",
            jurisdiction="VI",
            filer_id="op-ce",
            filing_id="f-ce-op",
            lines={"room_revenue": "8000.00", "room_nights": 40},
        )
        assert await events(db, account, FINDINGS) == []  # checked, nothing to compare, no event
        row = await bus.declare(
            account,
            "2026-03",
            jurisdiction="VI",
            filer_kind="facilitator",
            filer_id="fac-ce",
            lines={"room_revenue": "9000.00", "intermediary_retained": "1000.00", "room_nights": 45},
        )
        [(topic, data)] = await events(db, account, FINDINGS)
        decl = str(first.data["declaration_id"])
        assert topic == "assessment.cases"
        assert {k: v for k, v in data.items() if k not in ("run_id", "findings")} == {
            "tax_account": account,
            "jurisdiction": "VI",
            "period": "2026-03",
            "declaration_id": decl,
            "intermediary_declarations": [row.data["declaration_id"]],
            "checked_on": row.data["filed_on"],  # the filing date, not today: replays agree
        }
        [item] = data["findings"]
        assert (item["rule"], item["declared"], item["reported"], item["difference"], item["section"]) == (
            "intermediary_shortfall",
            "8000.00",
            "10000.00",
            "2000.00",
            "§54(b)(1)",
        )
        assert item["parameters"] == {"tolerance": "100.00", "amount": "50.00", "share": "0.01"}
        # the same schedule row delivered again under another event id: no run, no event
        again = cloud_event(row.type, dict(row.data), key=account)
        await bus.send(again)
        assert len(await events(db, account, FINDINGS)) == 1
        # the operator amends to the intermediaries' gross: an event with no findings (cleared)
        second = await bus.declare(
            account,
            "2026-03",
            jurisdiction="VI",
            filer_id="op-ce",
            filing_id="f-ce-op",
            version=2,
            supersedes=decl,
            lines={"room_revenue": "10000.00", "room_nights": 40},
        )
        published = await events(db, account, FINDINGS)
        assert [(d["declaration_id"], d["findings"]) for _, d in published] == [
            (decl, [item]),
            (second.data["declaration_id"], []),
        ]
        assert await timeline(client, account, "crosscheck.") == [
            (
                "crosscheck.finding",
                "2026-03",
                "2000.00",
                "§54(b)(1)",
                f"intermediary_shortfall: {item['message']}",
            ),
            (
                "crosscheck.cleared",
                "2026-03",
                None,
                None,
                f"cross-check of 2026-03: no finding on declaration {second.data['declaration_id']}",
            ),
        ]
        r = await client.get(f"/v1/accounts/{account}/timeline", headers=OTHER)
        assert r.status_code == 404


class TestAuditEvents:
    async def test_every_step_is_an_event_and_a_timeline_entry(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI", operator_id="op-ce")
        await bus.declare(
            account,
            "2026-03",
            jurisdiction="VI",
            filer_id="op-ce",
            lines={"room_revenue": "8000.00", "room_nights": 40},
        )

        async def post(path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
            r = await client.post(path, json=body, headers=ADMIN)
            assert r.status_code == status, r.text
            return r.json()  # type: ignore[no-any-return]

        opened = {"tax_account": account, "periods": ["2026-03"], "reason": "OTA gap", "source": "crosscheck"}
        audit = await post("/v1/audits", opened, 201)
        base = f"/v1/audits/{audit['id']}"
        await post(f"{base}/records-request", {})
        lines = {"room_revenue": "8000.00", "intermediary_retained": "2000.00", "room_nights": 40}
        await post(f"{base}/findings", {"period": "2026-03", "lines": lines, "note": "OTA statements"})
        await post(f"{base}/notice", {})
        await post(f"{base}/close", {"outcome": "assessed", "note": "amendment filed"})
        # a refused step (the audit is closed) writes nothing and publishes nothing
        r = await client.post(f"{base}/records-request", json={}, headers=ADMIN)
        assert r.status_code == 409

        published = await events(db, account, AUDIT_STEP)
        assert {t for t, _ in published} == {"assessment.cases"}
        brief = [
            (
                d["step"],
                d["period"],
                d["records_due_on"],
                d["additional_tax"],
                d["response_due_on"],
                d["outcome"],
                d["by"],
                d["on"],
            )
            for _, d in published
        ]
        on = TODAY.isoformat()
        assert brief == [
            ("opened", None, None, None, None, None, "client:test-agency-admin-None", on),
            ("records_requested", None, "2026-12-30", None, None, None, "client:test-agency-admin-None", on),
            ("finding", "2026-03", None, None, None, None, "client:test-agency-admin-None", on),
            ("notice", None, None, "250.00", "2026-12-30", None, "client:test-agency-admin-None", on),
            ("closed", None, None, None, None, "assessed", "client:test-agency-admin-None", on),
        ]
        assert {
            (d["audit_id"], d["tax_account"], d["section"], tuple(d["periods"])) for _, d in published
        } == {(audit["id"], account, "§54(d)", ("2026-03",))}
        assert published[0][1]["step_id"] == audit["id"]
        assert len({d["step_id"] for _, d in published}) == 5
        assert await timeline(client, account, "audit.") == [
            ("audit.opened", None, None, "§54(d)", "audit opened for 2026-03 (crosscheck): OTA gap"),
            ("audit.records_requested", None, None, "§54(d)", "audit: records requested, due 2026-12-30"),
            ("audit.finding", "2026-03", None, "§54(d)", "audit finding for 2026-03: OTA statements"),
            (
                "audit.notice",
                None,
                "250.00",
                "§54(d)",
                "notice of audit assessment: 250.00 additional tax, response due 2026-12-30",
            ),
            ("audit.closed", None, None, "§54(d)", "audit closed (assessed): amendment filed"),
        ]

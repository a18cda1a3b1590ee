"""Non-filers (PR §32; VI §54(d)), deficiency notices (PR §2(25), §33, §34) and bond draws (PR §33)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
from assessment_factories import ADMIN, Bus, cloud_event, new_account, posted_by_payment, rows, statement
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth, pdf_text

DB = async_sessionmaker[AsyncSession]


class TestNonFilers:
    async def test_estimate_is_raised_once_and_superseded_by_the_late_declaration(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        account = new_account()
        await bus.lodging(account, registered_on="2025-01-01")
        await bus.declare(account, "2025-01", room_revenue="100000.00")
        await bus.declare(account, "2025-02", room_revenue="120000.00")
        r = await client.post("/v1/jobs/non-filers", params={"as_of": "2025-04-15"}, headers=ADMIN)
        assert r.status_code == 200, r.text
        raised = [x for x in r.json()["raised"] if x["tax_account"] == account]
        # 2025-03 was due 2025-04-10 (§28): estimated from the highest filed base, 120,000 x 9%
        assert [(x["period"], x["tax"]) for x in raised] == [("2025-03", "10800.00")]
        again = await client.post("/v1/jobs/non-filers", params={"as_of": "2025-04-15"}, headers=ADMIN)
        assert [x for x in again.json()["raised"] if x["tax_account"] == account] == []

        est = (await statement(client, account, "2025-05-01"))["periods"][2]
        assert est["basis"] == "estimate"
        assert est["estimate"]["status"] == "in_force"
        assert est["principal"]["tax"] == "10800.00"
        assert est["fines"] == "10500.00"  # §47: 21 days without a declaration x $500

        await bus.declare(account, "2025-03", room_revenue="90000.00", filed_on=date(2025, 5, 20))
        replaced = (await statement(client, account, "2025-06-01"))["periods"][2]
        assert replaced["basis"] == "declaration"
        assert replaced["principal"]["tax"] == "8100.00"
        assert replaced["estimate"]["status"] == "superseded"
        assert replaced["estimate"]["tax"] == "10800.00"  # kept, not deleted
        assert replaced["fines"] == "20000.00"  # §47: filed 40 days late x $500 (cap $25,000)
        # a statement for a date before the declaration still shows the estimate
        assert (await statement(client, account, "2025-05-01"))["periods"][2]["basis"] == "estimate"
        assert await rows(db, "SELECT count(*) FROM estimates WHERE tax_account = :a", a=account) == [(1,)]
        types = [
            r[0]
            for r in await rows(
                db,
                "SELECT payload->'data'->>'basis' FROM outbox WHERE key = :a "
                "AND event_type = 'roomtax.assessment.account.assessed.v1' ORDER BY id",
                a=account,
            )
        ]
        assert types == ["declaration", "declaration", "estimate", "declaration"]

    async def test_a_vi_timeshare_estimate_carries_the_highest_impact_fee_of_its_history(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        """VI §54(b)(2)-(3): owner unit-days cannot be inferred from room values, so the
        estimate takes the highest fee among the history periods (taxcore.rules.estimate)."""
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI", lodging_class="timeshare", registered_on="2025-01-01")
        vi = {"jurisdiction": "VI", "lodging_class": "timeshare"}
        await bus.declare(account, "2025-01", room_revenue="100000.00", timeshare_owner_unit_days=300, **vi)
        await bus.declare(account, "2025-02", room_revenue="80000.00", timeshare_owner_unit_days=322, **vi)
        # 2025-03 was due 2025-04-30 (§54(f): 30 days after the month)
        r = await client.post("/v1/jobs/non-filers", params={"as_of": "2025-05-05"}, headers=ADMIN)
        assert r.status_code == 200, r.text
        raised = [x for x in r.json()["raised"] if x["tax_account"] == account]
        # base: the highest filed base, 100,000.00 x 12.5% = 12,500.00; fee: the highest
        # filed fee, 322 unit-days x $25 = 8,050.00 (before the fix: 0.00)
        assert [(x["period"], x["tax"], x["impact_fee"]) for x in raised] == [
            ("2025-03", "12500.00", "8050.00")
        ]

    async def test_the_one_obligation_rule_estimates_a_mid_month_activity_not_a_suspended_month(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        """taxcore.obligations.must_file, the rule filing's compliance report applies too."""
        account = new_account()
        await bus.lodging(
            account,
            registered_on="2025-01-01",
            statuses=[
                {"status": "active", "effective_from": "2025-01-01"},
                {"status": "suspended", "effective_from": "2025-02-01"},  # all of February
                {"status": "active", "effective_from": "2025-03-10"},  # active March 10-19 only
                {"status": "suspended", "effective_from": "2025-03-20"},
            ],
        )
        await bus.declare(account, "2025-01", room_revenue="100000.00")
        r = await client.post("/v1/jobs/non-filers", params={"as_of": "2025-04-15"}, headers=ADMIN)
        assert r.status_code == 200, r.text
        raised = [(x["period"], x["tax"]) for x in r.json()["raised"] if x["tax_account"] == account]
        assert raised == [("2025-03", "9000.00")]

    async def test_an_estimate_uses_the_class_and_licence_in_force_in_its_period(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        """PR §2(16): the rate "for the period of occupancy"; a licence granted later is not applied."""
        account = new_account()
        history = [
            {"effective_from": "2025-01-01", "lodging_class": "hotel", "casino": False},
            {"effective_from": "2025-03-01", "lodging_class": "hotel", "casino": True},
        ]
        await bus.lodging(account, registered_on="2025-01-01", attributes=history[:1])
        await bus.declare(account, "2025-01", room_revenue="100000.00")
        await bus.lodging(
            account,
            registered_on="2025-01-01",
            attributes=history,
            event_type="roomtax.registry.lodging.attributes_changed.v1",
        )
        r = await client.post("/v1/jobs/non-filers", params={"as_of": "2025-04-15"}, headers=ADMIN)
        raised = [(x["period"], x["tax"]) for x in r.json()["raised"] if x["tax_account"] == account]
        # February at the hotel's 9%; March at the casino rate of 11% (§24(B))
        assert raised == [("2025-02", "9000.00"), ("2025-03", "11000.00")]
        assert await rows(
            db,
            "SELECT period, lodging_class FROM estimates WHERE tax_account = :a ORDER BY period",
            a=account,
        ) == [("2025-02", "hotel"), ("2025-03", "hotel")]

    async def test_no_history_needs_a_per_night_value(self, client: httpx.AsyncClient, bus: Bus) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI", registered_on="2025-01-15", room_count=10)
        r = await client.post("/v1/jobs/non-filers", params={"as_of": "2025-03-05"}, headers=ADMIN)
        assert [x["period"] for x in r.json()["skipped"] if x["tax_account"] == account] == ["2025-01"]
        r = await client.post(
            "/v1/jobs/non-filers", params={"as_of": "2025-03-05", "industry_cost": "100.00"}, headers=ADMIN
        )
        mine = [x for x in r.json()["raised"] if x["tax_account"] == account]
        # 2025-01 due 2025-03-02 (§54(f)); 10 rooms x 31 days x $100 x occupancy 1 = 31,000 x 12.5%
        assert [(x["period"], x["tax"]) for x in mine] == [("2025-01", "3875.00")]

    async def test_suspended_lodging_is_not_estimated_and_only_admin_runs_jobs(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(
            account,
            registered_on="2025-01-01",
            statuses=[
                {"status": "active", "effective_from": "2025-01-01"},
                {"status": "closed", "effective_from": "2025-01-01"},
            ],
        )
        r = await client.post(
            "/v1/jobs/non-filers", params={"as_of": "2025-06-01", "industry_cost": "50"}, headers=ADMIN
        )
        assert [x for x in r.json()["raised"] if x["tax_account"] == account] == []
        denied = await client.post("/v1/jobs/non-filers", headers=auth("agency-auditor"))
        assert denied.status_code == 403
        future = await client.post("/v1/jobs/non-filers", params={"as_of": "2027-01-01"}, headers=ADMIN)
        assert future.status_code == 422


class TestNotices:
    async def test_notice_letter_and_dispute_with_undisputed_part_paid(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account, operator_id="op-n")
        await bus.declare(account, "2025-01")  # tax 9,000.00 due 2025-02-10
        r = await client.post(
            "/v1/notices",
            json={
                "tax_account": account,
                "period": "2025-01",
                "reason": "tax declared but not paid",
                "issued_on": "2025-03-01",
            },
            headers=ADMIN,
        )
        assert r.status_code == 201, r.text
        notice = r.json()
        # 19 days late: §46 interest 900 x 19/365 = 46.85; no surcharge before day 31
        assert notice["amounts"] == {
            "tax": "9000.00",
            "impact_fee": "0.00",
            "penalty": "0.00",
            "interest": "46.85",
            "fine": "0.00",
            "total": "9046.85",
        }
        assert notice["response_deadline"] == "2025-03-31"
        assert notice["response_term"]["provisional"] is True
        assert notice["status"] == "lapsed"  # seen from (pinned) today, 2026-11-30, unanswered and unpaid

        # PR letters are in Spanish unless asked (test_documents.py); English here
        pdf = await client.get(
            notice["letter_url"], params={"lang": "en"}, headers=auth("operator", operator_id="op-n")
        )
        assert pdf.status_code == 200
        assert pdf.headers["content-type"] == "application/pdf"
        assert pdf.content.startswith(b"%PDF")
        text = pdf_text(pdf.content)
        assert "or dispute it by March 31, 2025 (30 days, §2(25); §33; §34)." in text
        assert "To dispute part of it, first pay the part you do not dispute (§34)." in text
        assert "may be charged against your bond (§33)." in text
        other = await client.get(notice["letter_url"], headers=auth("operator", operator_id="op-x"))
        assert other.status_code == 404

        url = f"/v1/notices/{notice['id']}/responses"
        operator = auth("operator", operator_id="op-n")
        early = await client.post(
            url,
            json={"kind": "dispute", "disputed_amount": "5000.00", "responded_on": "2025-03-10"},
            headers=operator,
        )
        assert early.status_code == 422
        assert early.json()["errors"][0]["pointer"] == "#/body/disputed_amount"
        assert "§34" in early.json()["detail"]
        await bus.pay(account, "4046.85", date(2025, 3, 10), periods={"2025-01": "4046.85"})
        ok = await client.post(
            url,
            json={
                "kind": "dispute",
                "disputed_amount": "5000.00",
                "responded_on": "2025-03-10",
                "statement": "rooms comped",
            },
            headers=operator,
        )
        assert ok.status_code == 201, ok.text
        assert ok.json()["status"] == "disputed"
        assert ok.json()["responses"][0]["undisputed_amount"] == "4046.85"
        twice = await client.post(
            url, json={"kind": "accept", "responded_on": "2025-03-11"}, headers=operator
        )
        assert twice.status_code == 409
        # a disputed notice is not charged to the bond
        await bus.bond(account)
        lapsed = await client.post("/v1/jobs/lapsed-notices", params={"as_of": "2025-04-15"}, headers=ADMIN)
        assert [x for x in lapsed.json()["requested"] if x["tax_account"] == account] == []

    async def test_lapsed_unpaid_notice_requests_a_bond_draw_once_and_the_draw_pays(
        self, client: httpx.AsyncClient, bus: Bus, db: DB
    ) -> None:
        account = new_account()
        await bus.lodging(account)
        bond_id = await bus.bond(account, amount="5000.00")
        await bus.declare(account, "2025-01")
        r = await client.post(
            "/v1/notices",
            json={"tax_account": account, "period": "2025-01", "reason": "unpaid", "issued_on": "2025-03-01"},
            headers=ADMIN,
        )
        notice = r.json()
        run = await client.post("/v1/jobs/lapsed-notices", params={"as_of": "2025-04-15"}, headers=ADMIN)
        mine = [x for x in run.json()["requested"] if x["tax_account"] == account]
        assert [(x["notice_id"], x["amount"], x["bond_id"]) for x in mine] == [
            (notice["id"], "5000.00", bond_id)
        ]
        rerun = await client.post("/v1/jobs/lapsed-notices", params={"as_of": "2025-04-16"}, headers=ADMIN)
        assert [x for x in rerun.json()["requested"] if x["tax_account"] == account] == []
        events = await rows(
            db,
            "SELECT event_id, payload FROM outbox WHERE key = :a AND event_type = "
            "'roomtax.assessment.bond.draw.requested.v1'",
            a=account,
        )
        assert len(events) == 1
        assert events[0][1]["data"]["amount"] == "5000.00"
        assert events[0][1]["data"]["period"] == "2025-01"
        # the registry records the draw; the money pays the notice's period
        drawn = cloud_event(
            "roomtax.registry.bond.drawn.v1",
            {
                "draw_id": "draw-1",
                "bond_id": bond_id,
                "tax_account": account,
                "amount": "5000.00",
                "drawn_on": "2025-04-20",
                "reason": "§33",
                "request_event_id": events[0][0],
                "remaining": "0.00",
            },
            key=account,
        )
        assert await bus.send(drawn) == "applied"
        body = await statement(client, account, "2025-04-20")
        assert body["periods"][0]["total_paid"] == "5000.00"
        assert await posted_by_payment(db, account) == {"bond-draw-draw-1": Decimal("5000.00")}
        status = (await client.get(f"/v1/notices/{notice['id']}", headers=ADMIN)).json()
        assert status["status"] == "bond_draw_requested"
        assert status["bond_draw_request"]["amount"] == "5000.00"

    async def test_vi_notice_cites_only_vi_law_and_neither_a_prepayment_nor_a_bond(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI", registered_on="2025-01-01", operator_id="op-v")
        await bus.declare(account, "2025-01", jurisdiction="VI")  # due 2025-03-02 (§54(f))
        await bus.bond(account)  # even a bond on file is not drawn: VI requires none (§54)
        r = await client.post(
            "/v1/notices",
            json={"tax_account": account, "period": "2025-01", "reason": "unpaid", "issued_on": "2025-04-01"},
            headers=ADMIN,
        )
        assert r.status_code == 201, r.text
        notice = r.json()
        assert notice["section"] == "§54(d)"
        pdf = await client.get(notice["letter_url"], headers=auth("operator", operator_id="op-v"))
        text = pdf_text(pdf.content)
        assert "or dispute it by May 1, 2025 (30 days, §54(d) (33 V.I.C. § 45))." in text
        assert "Interest keeps accruing on what remains unpaid." in text
        for foreign in ("PR", "§34", "§33", "bond", "first pay the part"):
            assert foreign not in text
        # no prepayment rule in VI: a dispute of part is recorded with nothing paid
        ok = await client.post(
            f"/v1/notices/{notice['id']}/responses",
            json={"kind": "dispute", "disputed_amount": "100.00", "responded_on": "2025-04-10"},
            headers=auth("operator", operator_id="op-v"),
        )
        assert ok.status_code == 201, ok.text
        assert ok.json()["status"] == "disputed"
        # and a lapsed VI notice never asks for a bond draw
        other = await client.post(
            "/v1/notices",
            json={"tax_account": account, "period": "2025-01", "reason": "again", "issued_on": "2025-06-01"},
            headers=ADMIN,
        )
        assert other.status_code == 201, other.text
        lapsed = await client.post("/v1/jobs/lapsed-notices", params={"as_of": "2025-08-01"}, headers=ADMIN)
        assert [x for x in lapsed.json()["requested"] if x["tax_account"] == account] == []

    async def test_notice_for_nothing_owed_is_a_conflict(self, client: httpx.AsyncClient, bus: Bus) -> None:
        account = new_account()
        await bus.lodging(account)
        await bus.declare(account, "2025-01")
        await bus.pay(account, "9000.00", date(2025, 2, 10))
        r = await client.post(
            "/v1/notices",
            json={"tax_account": account, "period": "2025-01", "reason": "x", "issued_on": "2025-03-01"},
            headers=ADMIN,
        )
        assert r.status_code == 409
        r = await client.post(
            "/v1/notices",
            json={"tax_account": account, "period": "2025-01", "reason": "x"},
            headers=auth("operator", operator_id="op-1"),
        )
        assert r.status_code == 403

"""Payment plans: request, grant, installments matched to payments, default, and the holds.

PR, period 2026-06: room revenue 100,000.00 at 9% = tax 9,000.00, due 2026-07-10, declared on
time and unpaid. The §46 surcharge (provisional) is 5% of the unpaid tax from day 31 after the
due date, 10% from day 61; §46 interest (provisional) 10% a year on the unpaid tax.
Grace after an installment's due date: 15 days (``cases.plan_grace_days``, provisional).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import pytest
from assessment_factories import ADMIN, AUDITOR, Bus, new_account, rows, statement
from casework_factories import MAKER, disputed, today_is
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.plans.schedule import Receipt, Term, evaluate
from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]
OPERATOR = auth("operator", operator_id="op-plan")


async def owing(bus: Bus, monkeypatch: pytest.MonkeyPatch) -> str:
    today_is(monkeypatch, date(2026, 7, 20))
    account = new_account()
    await bus.lodging(account, operator_id="op-plan")
    await bus.bond(account, amount="5000.00")
    await bus.declare(account, "2026-06", filer_id="op-plan")
    return account


def body(down: str, *lines: tuple[str, str], as_of: str = "2026-08-01", **extra: Any) -> dict[str, Any]:
    return {
        "as_of": as_of,
        "down_payment": {"due_on": "2026-08-05", "amount": down},
        "installments": [{"due_on": d, "amount": a} for d, a in lines],
        **extra,
    }


async def plan_events(db: DB, account: str) -> list[str]:
    return [
        r[0]
        for r in await rows(
            db,
            "SELECT event_type FROM outbox WHERE key = :a AND event_type LIKE 'roomtax.assessment.plan.%' "
            "ORDER BY id",
            a=account,
        )
    ]


class TestGrantPlan:
    async def test_plan_holds_collection_until_it_defaults(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await owing(bus, monkeypatch)
        # a notice before the plan: its 30-day term ends 2026-08-19
        r = await client.post(
            "/v1/notices",
            json={"tax_account": account, "period": "2026-06", "reason": "unpaid", "issued_on": "2026-07-20"},
            headers=ADMIN,
        )
        assert r.status_code == 201, r.text
        first_notice = r.json()["id"]
        today_is(monkeypatch, date(2026, 8, 1))
        # the taxpayer asks; the request is in the agency's queue
        req = await client.post(
            f"/v1/accounts/{account}/plan-requests",
            json={"installments": 2, "explanation": "low season"},
            headers=OPERATOR,
        )
        assert req.status_code == 201, req.text
        assert req.json()["status"] == "pending"
        queue = await client.get("/v1/plan-requests", headers=MAKER)
        assert [q["id"] for q in queue.json()] == [req.json()["id"]]
        # day 22 after the due date: 9,000.00 + interest 9,000 x 10% x 22/365 = 54.25
        assert (await statement(client, account, "2026-08-01"))["periods"][0]["balance"] == "9054.25"
        projected = (await statement(client, account, "2026-10-01"))["periods"][0]
        wrong = await client.post(
            f"/v1/accounts/{account}/plans",
            json=body(
                "1000.00", ("2026-09-01", "4000.00"), ("2026-10-01", "4000.00"), request_id=req.json()["id"]
            ),
            headers=MAKER,
        )
        assert wrong.status_code == 422, wrong.text
        assert wrong.json()["errors"] == [
            {
                "pointer": "#/body/installments",
                "detail": "the down payment and installments add up to 9000.00, not the planned amount "
                "9054.25 (the balance on 2026-08-01)",
            }
        ]
        assert await rows(db, "SELECT count(*) FROM payment_plans WHERE tax_account = :a", a=account) == [
            (0,)
        ]
        assert await plan_events(db, account) == ["roomtax.assessment.plan.requested.v1"]
        granted = await client.post(
            f"/v1/accounts/{account}/plans",
            json=body(
                "1054.25", ("2026-09-01", "4000.00"), ("2026-10-01", "4000.00"), request_id=req.json()["id"]
            ),
            headers=MAKER,
        )
        assert granted.status_code == 201, granted.text
        plan = granted.json()
        assert (plan["periods"], plan["planned_amount"], plan["status"], plan["granted_by"]) == (
            ["2026-06"],
            "9054.25",
            "current",
            "user:u-maker",
        )
        assert [
            (i["number"], i["due_on"], i["amount"], i["status"], i["grace_ends_on"]) for i in plan["schedule"]
        ] == [
            (0, "2026-08-05", "1054.25", "due", "2026-08-20"),
            (1, "2026-09-01", "4000.00", "due", "2026-09-16"),
            (2, "2026-10-01", "4000.00", "due", "2026-10-16"),
        ]
        # the plan lowers nothing: the statement of a later date is what it was before the grant
        # (interest and the §46 surcharge keep accruing on what is unpaid)
        after = (await statement(client, account, "2026-10-01"))["periods"][0]
        assert (after["interest"], after["balance"]) == (projected["interest"], projected["balance"])
        assert Decimal(after["interest"]) > Decimal("54.25")
        mine = await client.get(f"/v1/accounts/{account}/plan-requests", headers=OPERATOR)
        assert [(x["status"], x["plan_id"]) for x in mine.json()] == [("granted", plan["id"])]
        assert (await client.get("/v1/plan-requests", headers=MAKER)).json() == []
        # overlapping plan: 409 on the periods, nothing written
        again = await client.post(
            f"/v1/accounts/{account}/plans",
            json=body("1054.25", ("2026-09-01", "8000.00")),
            headers=MAKER,
        )
        assert again.status_code == 409, again.text
        assert again.json()["errors"][0]["pointer"] == "#/body/periods"
        # no new notice while the plan is current
        notice = await client.post(
            "/v1/notices",
            json={"tax_account": account, "period": "2026-06", "reason": "unpaid"},
            headers=ADMIN,
        )
        assert notice.status_code == 409, notice.text
        assert notice.json()["errors"][0]["pointer"] == "#/body/period"
        # the down payment, matched to installment 0 when it arrives
        today_is(monkeypatch, date(2026, 8, 4))
        await bus.pay(account, "1054.25", date(2026, 8, 4))
        shown = (await client.get(f"/v1/plans/{plan['id']}", headers=OPERATOR)).json()
        assert [(i["number"], i["paid"], i["paid_on"], i["status"]) for i in shown["schedule"]] == [
            (0, "1054.25", "2026-08-04", "paid"),
            (1, "0.00", None, "due"),
            (2, "0.00", None, "due"),
        ]
        # the first notice lapsed on 2026-08-19, but the plan is current: no bond draw
        today_is(monkeypatch, date(2026, 8, 25))
        lapsed = await client.post("/v1/jobs/lapsed-notices", params={"as_of": "2026-08-25"}, headers=ADMIN)
        assert lapsed.json()["requested"] == []
        today_is(monkeypatch, date(2026, 9, 17))
        before = await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-09-16"}, headers=ADMIN)
        assert before.json()["steps"] == []
        assert (await client.get(f"/v1/plans/{plan['id']}", params={}, headers=AUDITOR)).json()["status"] == (
            "defaulted"  # today (2026-09-17) installment 1 is past its grace
        )
        run = await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-09-17"}, headers=ADMIN)
        assert [(s["step"], s["on"]) for s in run.json()["steps"]] == [("defaulted", "2026-09-17")]
        owed = (await statement(client, account, "2026-09-17"))["periods"][0]["balance"]
        [notice_row] = await rows(
            db,
            "SELECT total, reason FROM notices WHERE tax_account = :a AND id <> :n",
            a=account,
            n=first_notice,
        )
        assert str(notice_row[0]) == owed
        assert notice_row[1].startswith(
            f"payment plan {plan['id']} defaulted: installment 1 of 4000.00 due 2026-09-01"
        )
        # running it again changes nothing
        rerun = await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-09-17"}, headers=ADMIN)
        assert rerun.json()["steps"] == []
        # collection resumes: the lapsed notice's bond draw is asked
        draws = await client.post("/v1/jobs/lapsed-notices", params={"as_of": "2026-09-17"}, headers=ADMIN)
        assert [(d["notice_id"], d["amount"]) for d in draws.json()["requested"]] == [
            (first_notice, "5000.00")
        ]
        assert await plan_events(db, account) == [
            "roomtax.assessment.plan.requested.v1",
            "roomtax.assessment.plan.granted.v1",
            "roomtax.assessment.plan.installment.paid.v1",
            "roomtax.assessment.plan.defaulted.v1",
        ]
        timeline = (await client.get(f"/v1/accounts/{account}/timeline", headers=OPERATOR)).json()["entries"]
        assert [(e["on"], e["kind"]) for e in timeline if e["kind"].startswith("plan.")] == [
            ("2026-08-01", "plan.requested"),
            ("2026-08-01", "plan.granted"),
            ("2026-08-04", "plan.installment_paid"),
            ("2026-09-17", "plan.defaulted"),
        ]

    async def test_completed_plan(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await owing(bus, monkeypatch)
        today_is(monkeypatch, date(2026, 8, 1))
        granted = await client.post(
            f"/v1/accounts/{account}/plans",
            json={
                "as_of": "2026-08-01",
                "installments": [
                    {"due_on": "2026-08-15", "amount": "5000.00"},
                    {"due_on": "2026-09-15", "amount": "4054.25"},
                ],
            },
            headers=MAKER,
        )
        assert granted.status_code == 201, granted.text
        plan_id = granted.json()["id"]
        # money designated to another period does not count toward the plan
        today_is(monkeypatch, date(2026, 9, 30))
        await bus.pay(account, "5100.00", date(2026, 8, 14), periods={"2026-07": "100.00"})
        await bus.pay(account, "4054.25", date(2026, 9, 20))  # late, but within the grace
        today_is(monkeypatch, date(2026, 9, 30))
        shown = (await client.get(f"/v1/plans/{plan_id}", headers=OPERATOR)).json()
        assert (shown["status"], shown["status_since"], shown["paid"], shown["remaining"]) == (
            "completed",
            "2026-09-20",
            "9054.25",
            "0.00",
        )
        assert [(i["number"], i["paid_on"]) for i in shown["schedule"]] == [
            (1, "2026-08-14"),
            (2, "2026-09-20"),
        ]
        assert await plan_events(db, account) == [
            "roomtax.assessment.plan.granted.v1",
            "roomtax.assessment.plan.installment.paid.v1",
            "roomtax.assessment.plan.installment.paid.v1",
            "roomtax.assessment.plan.completed.v1",
        ]


class TestRefusedPlans:
    async def test_disputed_period(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        account, case = await disputed(client, bus, "op-plan-d")
        r = await client.post(
            f"/v1/accounts/{account}/plans",
            json={"as_of": "2025-04-01", "installments": [{"due_on": "2025-05-01", "amount": "1.00"}]},
            headers=MAKER,
        )
        assert r.status_code == 409, r.text
        assert r.json()["errors"] == [
            {
                "pointer": "#/body/periods/0",
                "detail": f"2025-01 cannot be planned: case {case['id']}: the dispute is not decided",
            }
        ]
        assert await rows(db, "SELECT count(*) FROM payment_plans WHERE tax_account = :a", a=account) == [
            (0,)
        ]

    async def test_bad_schedules_and_roles(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await owing(bus, monkeypatch)
        today_is(monkeypatch, date(2026, 8, 1))
        url = f"/v1/accounts/{account}/plans"
        early = await client.post(url, json=body("1054.25", ("2026-08-05", "8000.00")), headers=MAKER)
        assert early.status_code == 422
        assert early.json()["errors"][0]["pointer"] == "#/body/installments/0/due_on"
        nothing = await client.post(
            url, json=body("1054.25", ("2026-09-01", "8000.00"), periods=["2026-05"]), headers=MAKER
        )
        assert nothing.status_code == 422
        assert nothing.json()["errors"][0] == {
            "pointer": "#/body/periods/0",
            "detail": "2026-05 owes nothing on 2026-08-01",
        }
        for who in (AUDITOR, OPERATOR):
            denied = await client.post(url, json=body("1054.25", ("2026-09-01", "8000.00")), headers=who)
            assert denied.status_code == 403, denied.text
        operator_grant = await client.post(
            f"/v1/accounts/{account}/plan-requests",
            json={"installments": 2, "explanation": "x"},
            headers=MAKER,
        )
        assert operator_grant.status_code == 403
        assert await rows(db, "SELECT count(*) FROM payment_plans WHERE tax_account = :a", a=account) == [
            (0,)
        ]

    async def test_declined_request(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await owing(bus, monkeypatch)
        req = await client.post(
            f"/v1/accounts/{account}/plan-requests",
            json={"installments": 12, "explanation": "x"},
            headers=OPERATOR,
        )
        rid = req.json()["id"]
        declined = await client.post(
            f"/v1/plan-requests/{rid}/decline", json={"reasons": "too long"}, headers=MAKER
        )
        assert declined.status_code == 200, declined.text
        assert (declined.json()["status"], declined.json()["declined"]["reasons"]) == ("declined", "too long")
        twice = await client.post(
            f"/v1/plan-requests/{rid}/decline", json={"reasons": "again"}, headers=MAKER
        )
        assert twice.status_code == 409
        grant = await client.post(
            f"/v1/accounts/{account}/plans",
            json={"installments": [{"due_on": "2026-09-01", "amount": "9000.00"}], "request_id": rid},
            headers=MAKER,
        )
        assert grant.status_code == 409
        assert grant.json()["errors"][0]["pointer"] == "#/body/request_id"


class TestPlanIsolation:
    async def test_another_operator_gets_404(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await owing(bus, monkeypatch)
        today_is(monkeypatch, date(2026, 8, 1))
        req = await client.post(
            f"/v1/accounts/{account}/plan-requests",
            json={"installments": 1, "explanation": "x"},
            headers=OPERATOR,
        )
        plan = await client.post(
            f"/v1/accounts/{account}/plans",
            json={"installments": [{"due_on": "2026-09-01", "amount": "9054.25"}]},
            headers=MAKER,
        )
        assert plan.status_code == 201, plan.text
        other = auth("operator", operator_id="op-other")
        for url in (
            f"/v1/plans/{plan.json()['id']}",
            f"/v1/plan-requests/{req.json()['id']}",
            f"/v1/accounts/{account}/plans",
            f"/v1/accounts/{account}/plan-requests",
        ):
            assert (await client.get(url, headers=other)).status_code == 404, url
        for url, payload in (
            (f"/v1/accounts/{account}/plan-requests", {"installments": 1, "explanation": "x"}),
            (f"/v1/plan-requests/{req.json()['id']}/decline", {"reasons": "x"}),
        ):
            assert (await client.post(url, json=payload, headers=other)).status_code == 404, url
        assert (await client.get("/v1/plan-requests", headers=other)).status_code == 403
        assert (await client.post("/v1/jobs/payment-plans", headers=other)).status_code == 403
        assert (await client.post("/v1/jobs/payment-plans", headers=AUDITOR)).status_code == 403
        assert (
            await client.get("/v1/plan-requests", headers=auth("dashboard", user_id="u-d"))
        ).status_code == 403
        assert [
            p["id"] for p in (await client.get(f"/v1/accounts/{account}/plans", headers=OPERATOR)).json()
        ] == [plan.json()["id"]]


class TestSchedule:
    """``plans.schedule.evaluate``: installments filled in order, a returned payment undone."""

    TERMS = [Term(0, date(2026, 1, 10), Decimal("100.00")), Term(1, date(2026, 2, 10), Decimal("100.00"))]

    def test_returned_payment_defaults_after_the_grace(self) -> None:
        moves = [
            Receipt(date(2026, 1, 5), Decimal("100.00")),
            Receipt(date(2026, 2, 1), Decimal("100.00")),
            Receipt(date(2026, 2, 20), Decimal("-100.00")),  # the second payment returned
        ]
        late = evaluate(self.TERMS, moves, grace_days=15, on=date(2026, 2, 25))
        assert (late.status, late.paid) == ("current", Decimal("100.00"))
        assert [(i.status, i.paid_on) for i in late.installments] == [
            ("paid", date(2026, 1, 5)),
            ("late", None),
        ]
        missed = evaluate(self.TERMS, moves, grace_days=15, on=date(2026, 2, 26))
        assert (missed.status, missed.since, missed.defaulted_by) == (
            "defaulted",
            date(2026, 2, 26),
            self.TERMS[1],
        )
        assert [i.status for i in missed.installments] == ["paid", "missed"]

    def test_completed_the_day_the_money_reaches_the_plan(self) -> None:
        moves = [Receipt(date(2026, 1, 5), Decimal("150.00")), Receipt(date(2026, 2, 1), Decimal("50.00"))]
        done = evaluate(self.TERMS, moves, grace_days=15, on=date(2026, 3, 31))
        assert (done.status, done.since) == ("completed", date(2026, 2, 1))
        assert [(i.paid, i.paid_on) for i in done.installments] == [
            (Decimal("100.00"), date(2026, 1, 5)),
            (Decimal("100.00"), date(2026, 2, 1)),
        ]

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
from assessment_factories import ADMIN, AUDITOR, Bus, cloud_event, new_account, rows, statement
from casework_factories import MAKER, disputed, today_is
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.accounts.ledger import BalanceCache, Facts
from assessment.models import Payment, PaymentReversal
from assessment.plans import repository as plans_repository
from assessment.plans.hold import receipts
from assessment.plans.models import PaymentPlan
from assessment.plans.schedule import Receipt, Term, equal_amounts, evaluate, monthly
from servicekit.testing import auth
from taxcore.parameters import default_tree

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


async def down_paid_plan(
    client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str]:
    """The plan of 9,054.25: down payment 1,054.25 due 2026-08-05 (paid 2026-08-04),
    installments of 4,000.00 due 2026-09-01 (grace to 2026-09-16) and 2026-10-01."""
    account = await owing(bus, monkeypatch)
    today_is(monkeypatch, date(2026, 8, 1))
    granted = await client.post(
        f"/v1/accounts/{account}/plans",
        json=body("1054.25", ("2026-09-01", "4000.00"), ("2026-10-01", "4000.00")),
        headers=MAKER,
    )
    assert granted.status_code == 201, granted.text
    await bus.pay(account, "1054.25", date(2026, 8, 4))
    return account, granted.json()["id"]


async def plan_steps(client: httpx.AsyncClient, plan_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    shown = (await client.get(f"/v1/plans/{plan_id}", headers=AUDITOR)).json()
    return [(s["step"], s["on"], s["details"]) for s in shown["steps"]]


class TestReturnedInstallment:
    """A payment that paid an installment is returned: the installment is unpaid again."""

    async def test_reopened_then_paid_again(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account, plan_id = await down_paid_plan(client, bus, monkeypatch)
        today_is(monkeypatch, date(2026, 8, 30))
        cheque = await bus.pay(account, "4000.00", date(2026, 8, 28), payment_id="pay-plan-cheque")
        returned = await bus.reverse(account, cheque, "4000.00", date(2026, 8, 30), reversal_id="rev-plan-1")
        shown = (await client.get(f"/v1/plans/{plan_id}", headers=OPERATOR)).json()
        assert (shown["status"], shown["paid"], shown["remaining"]) == ("current", "1054.25", "8000.00")
        assert [
            (i["number"], i["paid"], i["paid_on"], i["status"], i["reopened_on"]) for i in shown["schedule"]
        ] == [
            (0, "1054.25", "2026-08-04", "paid", None),
            (1, "0.00", None, "due", "2026-08-30"),
            (2, "0.00", None, "due", None),
        ]
        reopened = (
            "installment_reopened",
            "2026-08-30",
            {
                "number": 1,
                "amount": "4000.00",
                "unpaid": "4000.00",
                "paid_on": "2026-08-28",
                "pay_by": "2026-09-16",
                "reversal_id": "rev-plan-1",
                "payment_id": "pay-plan-cheque",
            },
        )
        assert await plan_steps(client, plan_id) == [
            ("installment_paid", "2026-08-04", {"number": 0, "amount": "1054.25"}),
            ("installment_paid", "2026-08-28", {"number": 1, "amount": "4000.00"}),
            reopened,
        ]
        # the reversal delivered again, or replayed under another event id, adds nothing; nor the job
        assert await bus.send(returned) != "applied"
        data = {**returned.data}
        await bus.send(cloud_event("roomtax.filing.payment.reversed.v1", data, key=account))
        job = await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-08-30"}, headers=ADMIN)
        assert job.json()["steps"] == []
        assert len(await plan_steps(client, plan_id)) == 3
        [event] = await rows(
            db,
            "SELECT payload FROM outbox WHERE key = :a "
            "AND event_type = 'roomtax.assessment.plan.installment.reopened.v1'",
            a=account,
        )
        assert event[0]["data"] == {
            "plan_id": plan_id,
            "tax_account": account,
            "number": 1,
            "amount": "4000.00",
            "due_on": "2026-09-01",
            "paid_on": "2026-08-28",
            "reopened_on": "2026-08-30",
            "unpaid": "4000.00",
            "pay_by": "2026-09-16",
            "reversal_id": "rev-plan-1",
            "payment_id": "pay-plan-cheque",
        }
        # paid again within the grace: recorded paid again (a key of the second cycle)
        today_is(monkeypatch, date(2026, 9, 10))
        await bus.pay(account, "4000.00", date(2026, 9, 10))
        shown = (await client.get(f"/v1/plans/{plan_id}", headers=OPERATOR)).json()
        assert [(i["number"], i["paid_on"], i["status"], i["reopened_on"]) for i in shown["schedule"]] == [
            (0, "2026-08-04", "paid", None),
            (1, "2026-09-10", "paid", None),
            (2, None, "due", None),
        ]
        assert (await plan_steps(client, plan_id))[3:] == [
            ("installment_paid", "2026-09-10", {"number": 1, "amount": "4000.00"})
        ]
        assert await rows(db, "SELECT key FROM plan_steps WHERE subject_id = :p ORDER BY seq", p=plan_id) == [
            ("installment_paid:0",),
            ("installment_paid:1",),
            ("installment_reopened:1:1",),
            ("installment_paid:1:1",),
        ]
        assert await plan_events(db, account) == [
            "roomtax.assessment.plan.granted.v1",
            "roomtax.assessment.plan.installment.paid.v1",
            "roomtax.assessment.plan.installment.paid.v1",
            "roomtax.assessment.plan.installment.reopened.v1",
            "roomtax.assessment.plan.installment.paid.v1",
        ]
        timeline = (await client.get(f"/v1/accounts/{account}/timeline", headers=OPERATOR)).json()["entries"]
        assert [
            (e["on"], e["kind"], e["summary"]) for e in timeline if e["kind"].startswith("plan.installment")
        ] == [
            ("2026-08-04", "plan.installment_paid", "installment 0 paid"),
            ("2026-08-28", "plan.installment_paid", "installment 1 paid"),
            (
                "2026-08-30",
                "plan.installment_reopened",
                "installment 1 unpaid again: the payment was returned; 4000.00 to pay by 2026-09-16",
            ),
            ("2026-09-10", "plan.installment_paid", "installment 1 paid"),
        ]

    async def test_returned_after_the_grace_defaults_the_next_day(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account, plan_id = await down_paid_plan(client, bus, monkeypatch)
        today_is(monkeypatch, date(2026, 9, 20))
        cheque = await bus.pay(account, "4000.00", date(2026, 8, 28))
        # the grace of installment 1 ended 2026-09-16 with it paid: no default on the 17th
        assert (
            await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-09-17"}, headers=ADMIN)
        ).json()["steps"] == []
        await bus.reverse(account, cheque, "4000.00", date(2026, 9, 20), reversal_id="rev-plan-late")
        shown = (await client.get(f"/v1/plans/{plan_id}", headers=OPERATOR)).json()
        assert shown["status"] == "current"
        assert [(i["number"], i["status"], i["reopened_on"]) for i in shown["schedule"]] == [
            (0, "paid", None),
            (1, "missed", "2026-09-20"),
            (2, "due", None),
        ]
        step, on, details = (await plan_steps(client, plan_id))[-1]
        assert (step, on, details["pay_by"]) == ("installment_reopened", "2026-09-20", "2026-09-20")
        same_day = await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-09-20"}, headers=ADMIN)
        assert same_day.json()["steps"] == []
        today_is(monkeypatch, date(2026, 9, 21))
        run = await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-09-21"}, headers=ADMIN)
        assert [(s["step"], s["on"]) for s in run.json()["steps"]] == [("defaulted", "2026-09-21")]
        step, on, details = (await plan_steps(client, plan_id))[-1]
        assert (step, details["number"], details["due_on"], details["unpaid"]) == (
            "defaulted",
            1,
            "2026-09-01",
            "4000.00",
        )
        owed = (await statement(client, account, "2026-09-21"))["periods"][0]["balance"]
        [(total,)] = await rows(db, "SELECT total FROM notices WHERE tax_account = :a", a=account)
        assert str(total) == owed
        assert (await client.get(f"/v1/plans/{plan_id}", headers=AUDITOR)).json()[
            "status_since"
        ] == "2026-09-21"

    async def test_completed_plan_reopened_then_defaulted(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account, plan_id = await down_paid_plan(client, bus, monkeypatch)
        today_is(monkeypatch, date(2026, 9, 30))
        await bus.pay(account, "4000.00", date(2026, 8, 28))
        last = await bus.pay(account, "4000.00", date(2026, 9, 29))
        assert (await client.get(f"/v1/plans/{plan_id}", headers=AUDITOR)).json()["status"] == "completed"
        today_is(monkeypatch, date(2026, 10, 5))
        await bus.reverse(account, last, "4000.00", date(2026, 10, 5), reversal_id="rev-plan-last")
        shown = (await client.get(f"/v1/plans/{plan_id}", headers=AUDITOR)).json()
        assert (shown["status"], shown["paid"], shown["remaining"]) == ("current", "5054.25", "4000.00")
        assert [(s, on) for s, on, _ in await plan_steps(client, plan_id)][-3:] == [
            ("completed", "2026-09-29"),
            ("installment_reopened", "2026-10-05"),
            ("reopened", "2026-10-05"),
        ]
        assert (await plan_steps(client, plan_id))[-1][2] == {
            "paid": "5054.25",
            "remaining": "4000.00",
            "reversal_id": "rev-plan-last",
        }
        # open again: the daily job finds it, and defaults it after installment 2's grace (2026-10-16)
        today_is(monkeypatch, date(2026, 10, 16))
        quiet = await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-10-16"}, headers=ADMIN)
        assert quiet.json()["steps"] == []
        today_is(monkeypatch, date(2026, 10, 17))
        run = await client.post("/v1/jobs/payment-plans", params={"as_of": "2026-10-17"}, headers=ADMIN)
        assert [(s["step"], s["on"]) for s in run.json()["steps"]] == [("defaulted", "2026-10-17")]
        assert (await plan_events(db, account))[-4:] == [
            "roomtax.assessment.plan.completed.v1",
            "roomtax.assessment.plan.installment.reopened.v1",
            "roomtax.assessment.plan.reopened.v1",
            "roomtax.assessment.plan.defaulted.v1",
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

    async def test_equal_installments_split_to_the_cent_monthly(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await owing(bus, monkeypatch)
        today_is(monkeypatch, date(2026, 8, 1))
        url = f"/v1/accounts/{account}/plans"
        down = {"due_on": "2026-08-05", "amount": "1054.25"}
        refused = [
            (
                {"as_of": "2026-08-01", "down_payment": down},
                ("#/body/installments", "give the installments or equal_installments (one of them)"),
            ),
            (
                {
                    **body("1054.25", ("2026-09-01", "8000.00")),
                    "equal_installments": {"count": 2, "first_due_on": "2026-09-01"},
                },
                ("#/body/installments", "give the installments or equal_installments (one of them)"),
            ),
            (
                {
                    "as_of": "2026-08-01",
                    "down_payment": {"due_on": "2026-08-05", "amount": "9054.25"},
                    "equal_installments": {"count": 2, "first_due_on": "2026-09-01"},
                },
                ("#/body/down_payment/amount", "leaves nothing for the installments of the planned 9054.25"),
            ),
            (
                {
                    "as_of": "2026-08-01",
                    "down_payment": {"due_on": "2026-08-05", "amount": "9053.25"},
                    "equal_installments": {"count": 120, "first_due_on": "2026-09-01"},
                },
                ("#/body/equal_installments/count", "120 installments of 1.00 would be under one cent each"),
            ),
        ]
        for payload, (pointer, detail) in refused:
            r = await client.post(url, json=payload, headers=MAKER)
            assert (r.status_code, r.json()["errors"][0]) == (422, {"pointer": pointer, "detail": detail})
        assert await rows(db, "SELECT count(*) FROM payment_plans WHERE tax_account = :a", a=account) == [
            (0,)
        ]
        granted = await client.post(
            url,
            json={
                "as_of": "2026-08-01",
                "down_payment": down,
                "equal_installments": {"count": 3, "first_due_on": "2026-08-31"},
            },
            headers=MAKER,
        )
        assert granted.status_code == 201, granted.text
        plan = granted.json()
        # 9,054.25 owed on 2026-08-01, less 1,054.25 down: 8,000.00 / 3 = 2,666.66 twice, the
        # two cents left over on the last; the 31st, then the last day of a 30-day month
        assert plan["planned_amount"] == "9054.25"
        assert [(i["number"], i["due_on"], i["amount"]) for i in plan["schedule"]] == [
            (0, "2026-08-05", "1054.25"),
            (1, "2026-08-31", "2666.66"),
            (2, "2026-09-30", "2666.66"),
            (3, "2026-10-31", "2666.68"),
        ]


class TestRequestQueue:
    async def test_one_request_per_account_waits_for_the_agency(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        account = await owing(bus, monkeypatch)
        url = f"/v1/accounts/{account}/plan-requests"
        first = await client.post(
            url, json={"installments": 3, "explanation": "low season"}, headers=OPERATOR
        )
        assert first.status_code == 201, first.text
        rid = first.json()["id"]
        for lang, detail in (
            ("en", f"request {rid} of 2026-07-20 still waits for the agency's answer"),
            ("es", f"la solicitud {rid} del 2026-07-20 aún espera la respuesta de la agencia"),
        ):
            again = await client.post(
                url,
                json={"installments": 6, "explanation": "more"},
                headers={**OPERATOR, "Accept-Language": lang},
            )
            assert again.status_code == 409, again.text
            assert again.json()["errors"] == [{"pointer": "#/request/status", "detail": detail}]
        assert await rows(db, "SELECT id FROM plan_requests WHERE tax_account = :a", a=account) == [(rid,)]
        assert await plan_events(db, account) == ["roomtax.assessment.plan.requested.v1"]
        # once the agency has answered, the taxpayer may ask again
        declined = await client.post(
            f"/v1/plan-requests/{rid}/decline", json={"reasons": "no"}, headers=MAKER
        )
        assert declined.status_code == 200, declined.text
        second = await client.post(url, json={"installments": 6, "explanation": "more"}, headers=OPERATOR)
        assert second.status_code == 201, second.text
        mine = await client.get(url, headers=OPERATOR)
        assert [(x["id"], x["status"]) for x in mine.json()] == [
            (rid, "declined"),
            (second.json()["id"], "pending"),
        ]
        queue = await client.get("/v1/plan-requests", headers=MAKER)
        assert [q["id"] for q in queue.json()] == [second.json()["id"]]

    async def test_the_queue_shows_the_oldest_waiting_requests(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        asked = []
        for months in (2, 3, 4):
            account = await owing(bus, monkeypatch)
            r = await client.post(
                f"/v1/accounts/{account}/plan-requests",
                json={"installments": months, "explanation": "x"},
                headers=OPERATOR,
            )
            assert r.status_code == 201, r.text
            asked.append(r.json()["id"])
        declined = await client.post(
            f"/v1/plan-requests/{asked[1]}/decline", json={"reasons": "no"}, headers=MAKER
        )
        assert declined.status_code == 200, declined.text
        queue = await client.get("/v1/plan-requests", headers=MAKER)
        assert [(q["id"], q["status"], q["installments"]) for q in queue.json()] == [
            (asked[0], "pending", 2),
            (asked[2], "pending", 4),
        ]
        monkeypatch.setattr(plans_repository, "QUEUE_LIMIT", 1)
        assert [q["id"] for q in (await client.get("/v1/plan-requests", headers=MAKER)).json()] == [asked[0]]


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

    def test_returned_before_the_due_date_is_due_again(self) -> None:
        moves = [
            Receipt(date(2026, 1, 5), Decimal("100.00"), "p1"),
            Receipt(date(2026, 1, 20), Decimal("100.00"), "p2"),
            Receipt(date(2026, 2, 1), Decimal("-100.00"), "r2"),  # p2 returned before 2026-02-10
        ]
        before = evaluate(self.TERMS, moves, grace_days=15, on=date(2026, 1, 31))
        assert (before.status, before.since) == ("completed", date(2026, 1, 20))
        back = evaluate(self.TERMS, moves, grace_days=15, on=date(2026, 2, 1))
        assert (back.status, back.paid) == ("current", Decimal("100.00"))
        assert [(i.status, i.paid_on, i.reopened_on, i.reopened_by) for i in back.installments] == [
            ("paid", date(2026, 1, 5), None, None),
            ("due", None, date(2026, 2, 1), "r2"),
        ]
        defaulted = evaluate(self.TERMS, moves, grace_days=15, on=date(2026, 2, 26))
        assert (defaulted.status, defaulted.since, defaulted.defaulted_by) == (
            "defaulted",
            date(2026, 2, 26),
            self.TERMS[1],
        )

    def test_returned_after_the_grace_defaults_the_day_after(self) -> None:
        moves = [
            Receipt(date(2026, 1, 5), Decimal("100.00")),
            Receipt(date(2026, 3, 1), Decimal("-100.00"), "r1"),  # installment 0's grace ended 2026-01-25
        ]
        on_the_day = evaluate(self.TERMS, moves, grace_days=15, on=date(2026, 3, 1))
        # installment 1 (due 2026-02-10) defaulted the plan on 2026-02-26 in any case
        assert (on_the_day.status, on_the_day.since, on_the_day.defaulted_by) == (
            "defaulted",
            date(2026, 2, 26),
            self.TERMS[1],
        )
        one = [self.TERMS[0]]
        assert evaluate(one, moves, grace_days=15, on=date(2026, 2, 28)).status == "completed"
        state = evaluate(one, moves, grace_days=15, on=date(2026, 3, 1))
        assert (state.status, [(i.status, i.reopened_on) for i in state.installments]) == (
            "current",
            [("missed", date(2026, 3, 1))],
        )
        after = evaluate(one, moves, grace_days=15, on=date(2026, 3, 2))
        assert (after.status, after.since, after.defaulted_by) == (
            "defaulted",
            date(2026, 3, 2),
            self.TERMS[0],
        )

    def test_completed_the_day_the_money_reaches_the_plan(self) -> None:
        moves = [Receipt(date(2026, 1, 5), Decimal("150.00")), Receipt(date(2026, 2, 1), Decimal("50.00"))]
        done = evaluate(self.TERMS, moves, grace_days=15, on=date(2026, 3, 31))
        assert (done.status, done.since) == ("completed", date(2026, 2, 1))
        assert [(i.paid, i.paid_on) for i in done.installments] == [
            (Decimal("100.00"), date(2026, 1, 5)),
            (Decimal("100.00"), date(2026, 2, 1)),
        ]


class TestReceipts:
    """``plans.hold.receipts``: what a plan counts of the account's payments and reversals."""

    @staticmethod
    def facts(*reversals: tuple[str, str, date]) -> Facts:
        law = default_tree()
        pay = Payment(
            payment_id="p1",
            tax_account="PR-1",
            jurisdiction="PR",
            amount=Decimal("300.00"),
            method="ach",
            received_on=date(2026, 8, 5),
            payer_kind="operator",
            payer_id="op-1",
            designations=[{"period": "2026-01", "amount": "100.00"}],  # outside the plan
            source="filing",
        )
        rvs = [
            PaymentReversal(
                reversal_id=rid,
                payment_id="p1",
                tax_account="PR-1",
                amount=Decimal(a),
                reversed_on=on,
                reason="r",
            )
            for rid, a, on in reversals
        ]
        return Facts("PR-1", "PR", payments=[pay], reversals=rvs, balances=BalanceCache(law=law))

    PLAN = PaymentPlan(periods=["2026-02"], balance_as_of=date(2026, 8, 1))

    def test_the_payment_less_what_it_designated_elsewhere(self) -> None:
        assert receipts(self.facts(), self.PLAN) == [Receipt(date(2026, 8, 5), Decimal("200.00"), "p1")]

    def test_partial_reversals_never_take_back_more_than_was_counted(self) -> None:
        got = receipts(
            self.facts(("r2", "150.00", date(2026, 8, 20)), ("r1", "150.00", date(2026, 8, 10))), self.PLAN
        )
        assert got == [
            Receipt(date(2026, 8, 5), Decimal("200.00"), "p1"),
            Receipt(date(2026, 8, 10), Decimal("-150.00"), "r1"),
            Receipt(date(2026, 8, 20), Decimal("-50.00"), "r2"),  # 200 counted: 50 left to take back
        ]


class TestEqualInstallments:
    """``plans.schedule.monthly`` and ``equal_amounts``: the even split the screens grant."""

    def test_month_ends_are_clamped_and_come_back(self) -> None:
        assert monthly(date(2026, 1, 31), 4) == [
            date(2026, 1, 31),
            date(2026, 2, 28),
            date(2026, 3, 31),
            date(2026, 4, 30),
        ]
        assert monthly(date(2027, 11, 15), 3) == [date(2027, 11, 15), date(2027, 12, 15), date(2028, 1, 15)]
        assert monthly(date(2028, 1, 29), 2) == [date(2028, 1, 29), date(2028, 2, 29)]

    def test_the_cents_left_over_go_on_the_last(self) -> None:
        assert equal_amounts(Decimal("100.00"), 3) == [Decimal("33.33"), Decimal("33.33"), Decimal("33.34")]
        assert equal_amounts(Decimal("0.05"), 5) == [Decimal("0.01")] * 5
        assert equal_amounts(Decimal("0.04"), 5) is None
        assert equal_amounts(Decimal("12.50"), 1) == [Decimal("12.50")]

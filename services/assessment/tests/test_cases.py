"""Cases: a dispute from filing to decision and appeal, with exact balances before and after.

Scenario (PR, period 2025-01: tax 9,000.00 due 2025-02-10, declared on time): a deficiency
notice on 2025-03-01 (9,046.85), the undisputed 4,046.85 paid on 2025-03-10 and 5,000.00
disputed that day. The payment pays the tax first (payments.application_order: tax, impact fee,
penalty, interest, fine), so 4,953.15 of the tax is left and none of the interest is paid: the
§46 interest 9,000 x 10% x 19/365 = 46.849315 (02-11..03-01) and the §33 interest
9,000 x 10% x 9/365 = 22.191781 (03-02..03-10) stay owed. The §46 surcharge is 5% of the unpaid
tax from day 31 (03-13). Interest is rounded once per kind (§46, §33) on the statement.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
import pytest
from assessment_factories import ADMIN, Bus, posted_by_payment, rows, statement
from casework_factories import MAKER, disputed, today_is
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

DB = async_sessionmaker[AsyncSession]
CHECKER = auth("agency-admin", user_id="u-checker")
OTHER_OFFICER = auth("agency-officer", user_id="u-officer-2")
MACHINE = auth("agency-admin")  # a client token: no person


async def balance(client: httpx.AsyncClient, account: str, on: str) -> str:
    period: str = (await statement(client, account, on))["periods"][0]["balance"]
    return period


class TestCaseTimeline:
    async def test_reduce_decision_with_maker_checker_and_exact_balances(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        account, case = await disputed(client, bus)
        assert case["status"] == "filed"
        assert case["disputed_amount"] == "5000.00"
        assert case["collection_hold"] == f"case {case['id']}: the dispute is not decided"
        assert case["collection_hold_reason"] == {"code": "not_decided", "case_id": case["id"], "on": None}
        url = f"/v1/cases/{case['id']}"

        r = await client.post(f"{url}/review", headers=MAKER)
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "under_review"
        r = await client.post(
            f"{url}/hearing",
            json={"hearing_on": "2025-04-01", "video_link": "https://meet.example/case"},
            headers=MAKER,
        )
        assert r.json()["status"] == "hearing_scheduled"

        # 2025-04-01 without a decision: tax 4,953.15; surcharge 5% x 4,953.15 = 247.66;
        # §46 interest 46.85; §33 interest 22.191781 + 4,953.15 x 10% x 3/365 = 4.071082 (03-11..13)
        # + 5,200.81 x 10% x 19/365 = 27.072710 (03-14..04-01) = 53.34 -> 100.19 interest;
        # 4,953.15 + 247.66 + 100.19 = 5,301.00
        assert await balance(client, account, "2025-04-01") == "5301.00"
        r = await client.post(
            f"{url}/decision",
            json={"outcome": "reduce", "amounts": {"tax": "6000.00"}, "reasons": "comped rooms proven"},
            headers=MAKER,
        )
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "decision_proposed"
        proposal_id = r.json()["pending_proposal_id"]
        proposal = (await client.get(f"/v1/proposals/{proposal_id}", headers=MAKER)).json()
        # it would lower what is owed today by 5,301.00 - 2,109.12 (below): an admin approves
        assert (proposal["amount"], proposal["admin_approval_required"]) == ("3191.88", True)
        assert await balance(client, account, "2025-04-01") == "5301.00"  # a proposal changes nothing

        own = await client.post(
            f"/v1/proposals/{proposal_id}/approve", json={}, headers=auth("agency-admin", user_id="u-maker")
        )
        assert own.status_code == 409
        assert own.json()["errors"][0]["pointer"] == "#/proposal/proposed_by"
        small = await client.post(f"/v1/proposals/{proposal_id}/approve", json={}, headers=OTHER_OFFICER)
        assert small.status_code == 403  # above the threshold: an admin, not an officer
        machine = await client.post(f"/v1/proposals/{proposal_id}/approve", json={}, headers=MACHINE)
        assert machine.status_code == 403  # no person on the token
        ok = await client.post(
            f"/v1/proposals/{proposal_id}/approve", json={"note": "agreed"}, headers=CHECKER
        )
        assert ok.status_code == 200, ok.text
        assert (ok.json()["status"], ok.json()["reviewed_by"]) == ("approved", "u-checker")
        again = await client.post(f"/v1/proposals/{proposal_id}/approve", json={}, headers=CHECKER)
        assert again.status_code == 409

        decided = (await client.get(url, headers=MAKER)).json()
        assert decided["status"] == "decided"
        assert decided["decision"] == {
            "outcome": "reduce",
            "amounts": {"tax": "6000.00"},
            "reasons": "comped rooms proven",
            "decided_on": "2025-04-01",
            "decided_by": "u-checker",
            "proposed_by": "u-maker",
            "appeal_deadline": "2025-05-01",  # cases.appeal_days: 30 (provisional)
        }
        assert [s["step"] for s in decided["steps"]] == [
            "filed",
            "under_review",
            "hearing_scheduled",
            "decision_proposed",
            "decided",
        ]
        twice = await client.post(
            f"{url}/decision", json={"outcome": "cancel", "reasons": "again"}, headers=MAKER
        )
        assert twice.status_code == 409

        # the day before the decision: unchanged; §33 22.191781 + 4.071082 + 5,200.81 x 10% x
        # 18/365 = 25.647995 = 51.91, so 4,953.15 + 247.66 + 46.85 + 51.91 = 5,299.57
        assert await balance(client, account, "2025-03-31") == "5299.57"
        # from the decision date the tax is 6,000.00 from the due date: the 03-10 payment pays
        # 4,046.85 of the tax (1,953.15 left) and no interest; §46 6,000 x 10% x 19/365 = 31.23;
        # surcharge 5% x 1,953.15 = 97.66 from 03-13; §33 interest 6,000 x 10% x 9/365 = 14.794521
        # (03-02..03-10) + 1,953.15 x 10% x 3/365 = 1.605329 (03-11..13) + 2,050.81 x 10% x
        # 19/365 = 10.675448 (03-14..04-01) = 27.08; balance 1,953.15 + 97.66 + 31.23 + 27.08
        # = 2,109.12
        after = await statement(client, account, "2025-04-01", explain=True)
        period = after["periods"][0]
        assert period["balance"] == "2109.12"
        assert period["principal"]["tax"] == "6000.00"
        assert period["adjustments"] == [
            {
                "fact_id": period["adjustments"][0]["fact_id"],
                "kind": "reduce",
                "component": "tax",
                "effective_on": "2025-04-01",
                "amount": "-3000.00",
                "section": "§14; §15; §34",
                "reason": "comped rooms proven",
                "proposed_by": "u-maker",
                "approved_by": "u-checker",
                "reversed_on": None,
            }
        ]
        [step] = [s for s in period["explain"]["balance"] if s["rule"] == "rule5.balance.adjustment.reduce"]
        assert (step["inputs"]["approved_by"], step["inputs"]["proposed_by"]) == ("u-checker", "u-maker")
        assert step["citation"] == "§14; §15; §34"
        # a month later: surcharge 10% x 1,953.15 = 195.32 from day 61 (04-12); §33 interest
        # 14.794521 + 1.605329 + 2,050.81 x 10% x 30/365 = 16.855973 (03-14..04-12)
        # + 2,148.47 x 10% x 19/365 = 11.183816 (04-13..05-01) = 44.44; §46 31.23;
        # 1,953.15 + 195.32 + 31.23 + 44.44 = 2,224.14
        assert await balance(client, account, "2025-05-01") == "2224.14"

        # the payment's postings: all 4,046.85 to the tax, before and after the reduction
        assert list((await posted_by_payment(db, account)).values()) == [Decimal("4046.85")]
        by_component = await rows(
            db,
            "SELECT component, sum(amount) FROM collection_postings WHERE tax_account = :a "
            "GROUP BY component ORDER BY component",
            a=account,
        )
        assert by_component == [("tax", Decimal("4046.85"))]
        types = [
            r[0]
            for r in await rows(
                db,
                "SELECT event_type FROM outbox WHERE key = :a AND topic = 'assessment.cases' ORDER BY id",
                a=account,
            )
        ]
        assert types == [
            "roomtax.assessment.case.step.recorded.v1",  # filed
            "roomtax.assessment.case.step.recorded.v1",  # under review
            "roomtax.assessment.case.step.recorded.v1",  # hearing
            "roomtax.assessment.proposal.made.v1",
            "roomtax.assessment.case.step.recorded.v1",  # decision proposed
            "roomtax.assessment.proposal.reviewed.v1",
            "roomtax.assessment.adjustment.recorded.v1",
            "roomtax.assessment.case.step.recorded.v1",  # decided
        ]
        timeline = (await client.get(f"/v1/accounts/{account}/timeline", headers=MAKER)).json()
        assert [e["kind"] for e in timeline["entries"]] == [
            "notice.issued",
            "payment.received",
            "case.filed",
            "case.under_review",
            "case.hearing_scheduled",
            "proposal.made",
            "case.decision_proposed",
            "proposal.approved",
            "adjustment.reduce",
            "case.decided",
        ]
        # what a person wrote, apart from the summary's words (clients translate the rest by kind)
        notes = {e["kind"]: e["note"] for e in timeline["entries"]}
        assert (notes["proposal.approved"], notes["payment.received"]) == ("agreed", None)

    async def test_bad_decisions_change_nothing(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 1))
        account, case = await disputed(client, bus, "op-d")
        url = f"/v1/cases/{case['id']}"
        early = await client.post(
            f"{url}/decision", json={"outcome": "cancel", "reasons": "x"}, headers=MAKER
        )
        assert early.status_code == 409  # not under review yet
        await client.post(f"{url}/review", headers=MAKER)
        for body, pointer in [
            ({"outcome": "reduce", "amounts": {"tax": "9500.00"}, "reasons": "x"}, "#/body/amounts/tax"),
            ({"outcome": "reduce", "amounts": {"penalty": "1.00"}, "reasons": "x"}, "#/body/amounts/penalty"),
            ({"outcome": "reduce", "reasons": "x"}, "#/body/amounts"),
            ({"outcome": "sustain", "amounts": {"tax": "1.00"}, "reasons": "x"}, "#/body/amounts"),
        ]:
            r = await client.post(f"{url}/decision", json=body, headers=MAKER)
            assert r.status_code == 422, r.text
            assert r.json()["errors"][0]["pointer"] == pointer
        hearing = await client.post(f"{url}/hearing", json={"hearing_on": "2025-04-20"}, headers=MAKER)
        assert hearing.status_code == 422
        assert hearing.json()["errors"][0]["pointer"] == "#/body/place"
        operator = await client.post(f"{url}/review", headers=auth("operator", operator_id="op-d"))
        assert operator.status_code == 403
        assert await rows(db, "SELECT count(*) FROM proposals WHERE tax_account = :a", a=account) == [(0,)]
        assert await rows(db, "SELECT count(*) FROM adjustment_facts WHERE tax_account = :a", a=account) == [
            (0,)
        ]


class TestAppealPausesCollection:
    async def test_no_bond_draw_while_undecided_in_the_appeal_term_or_under_appeal(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 10))
        account, case = await disputed(client, bus, "op-e")
        await bus.bond(account, amount="5000.00")
        url = f"/v1/cases/{case['id']}"

        async def draws(as_of: str) -> list[str]:
            today_is(monkeypatch, date.fromisoformat(as_of))  # the job runs for today
            r = await client.post("/v1/jobs/lapsed-notices", params={"as_of": as_of}, headers=ADMIN)
            assert r.status_code == 200, r.text
            return [x["amount"] for x in r.json()["requested"] if x["tax_account"] == account]

        assert await draws("2025-04-10") == []  # the dispute is undecided
        await client.post(f"{url}/review", headers=MAKER)
        sustain = await client.post(
            f"{url}/decision", json={"outcome": "sustain", "reasons": "no evidence of comps"}, headers=MAKER
        )
        assert sustain.status_code == 200, sustain.text
        assert sustain.json()["decision"]["appeal_deadline"] == "2025-05-10"
        assert sustain.json()["decision"]["decided_by"] == "u-maker"  # sustaining lowers nothing: one person
        assert (
            sustain.json()["collection_hold"]
            == f"case {case['id']}: the term to appeal runs until 2025-05-10"
        )
        assert sustain.json()["collection_hold_reason"] == {
            "code": "appeal_term",
            "case_id": case["id"],
            "on": "2025-05-10",
        }
        assert await draws("2025-04-15") == []  # the term to appeal runs
        appeal = await client.post(
            f"{url}/appeal",
            json={"grounds": "the hearing ignored our records"},
            headers=auth("operator", operator_id="op-e"),
        )
        assert appeal.status_code == 200, appeal.text
        assert appeal.json()["status"] == "under_appeal"
        assert appeal.json()["collection_hold"] == f"case {case['id']}: the decision is under appeal"
        assert appeal.json()["collection_hold_reason"]["code"] == "under_appeal"
        assert await draws("2025-06-01") == []  # under appeal
        again = await client.post(
            f"{url}/appeal", json={"grounds": "again"}, headers=auth("operator", operator_id="op-e")
        )
        assert again.status_code == 409
        done = await client.post(
            f"{url}/appeal/resolution",
            json={"outcome": "upheld", "reasons": "decision stands"},
            headers=CHECKER,
        )
        assert done.json()["status"] == "closed"
        assert done.json()["collection_hold"] is None
        assert done.json()["collection_hold_reason"] is None
        # the sustained balance on 2025-06-01 is drawn on the bond, up to its 5,000.00
        assert await draws("2025-06-01") == ["5000.00"]

    async def test_appeal_after_the_term_is_refused(
        self, client: httpx.AsyncClient, bus: Bus, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 4, 10))
        account, case = await disputed(client, bus, "op-f")
        url = f"/v1/cases/{case['id']}"
        await client.post(f"{url}/review", headers=MAKER)
        await client.post(f"{url}/decision", json={"outcome": "sustain", "reasons": "r"}, headers=MAKER)
        today_is(monkeypatch, date(2025, 5, 20))
        late = await client.post(
            f"{url}/appeal", json={"grounds": "late"}, headers=auth("operator", operator_id="op-f")
        )
        assert late.status_code == 409
        assert late.json()["errors"][0]["pointer"] == "#/body/filed_on"


class TestNewDecisionOnAppeal:
    async def test_an_appeal_replacing_the_decision_is_a_new_fact_from_its_day_by_two_people(
        self, client: httpx.AsyncClient, bus: Bus, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        today_is(monkeypatch, date(2025, 3, 15))
        account, case = await disputed(client, bus, "op-ap")
        url = f"/v1/cases/{case['id']}"
        await client.post(f"{url}/review", headers=MAKER)
        today_is(monkeypatch, date(2025, 4, 1))
        r = await client.post(
            f"{url}/decision",
            json={"outcome": "reduce", "amounts": {"tax": "6000.00"}, "reasons": "comped rooms proven"},
            headers=MAKER,
        )
        await client.post(
            f"/v1/proposals/{r.json()['pending_proposal_id']}/approve", json={}, headers=CHECKER
        )
        assert await balance(client, account, "2025-04-01") == "2109.12"  # TestCaseTimeline
        notice = (await client.get(f"/v1/notices/{case['notice_id']}", headers=MAKER)).json()
        assert (notice["status"], notice["case"]["outcome"], notice["case"]["decided_on"]) == (
            "reduced",
            "reduce",
            "2025-04-01",
        )
        today_is(monkeypatch, date(2025, 4, 10))
        appeal = await client.post(
            f"{url}/appeal", json={"grounds": "no tax was due"}, headers=auth("operator", operator_id="op-ap")
        )
        assert appeal.json()["status"] == "under_appeal"

        today_is(monkeypatch, date(2025, 4, 20))
        before = await statement(client, account, "2025-04-19")
        owed = (await statement(client, account, "2025-04-20"))["totals"]["balance"]
        missing = await client.post(
            f"{url}/appeal/resolution", json={"outcome": "replaced", "reasons": "r"}, headers=MAKER
        )
        assert missing.status_code == 422
        assert missing.json()["errors"][0]["pointer"] == "#/body/decision"
        extra = await client.post(
            f"{url}/appeal/resolution",
            json={"outcome": "upheld", "reasons": "r", "decision": {"outcome": "cancel"}},
            headers=MAKER,
        )
        assert extra.status_code == 422
        higher = await client.post(
            f"{url}/appeal/resolution",
            json={
                "outcome": "replaced",
                "reasons": "r",
                "decision": {"outcome": "reduce", "amounts": {"tax": "9500.00"}},
            },
            headers=MAKER,
        )
        assert higher.status_code == 422
        assert higher.json()["errors"][0]["pointer"] == "#/body/decision/amounts/tax"

        proposed = await client.post(
            f"{url}/appeal/resolution",
            json={
                "outcome": "replaced",
                "reasons": "the rooms were exempt",
                "decision": {"outcome": "cancel"},
            },
            headers=MAKER,
        )
        assert proposed.status_code == 200, proposed.text
        assert proposed.json()["status"] == "under_appeal"  # until a second person approves
        proposal_id = proposed.json()["pending_proposal_id"]
        proposal = (await client.get(f"/v1/proposals/{proposal_id}", headers=MAKER)).json()
        assert (proposal["action"], proposal["amount"]) == ("case.appeal_decide", owed)  # all that was owed
        assert await balance(client, account, "2025-04-20") == owed  # a proposal changes nothing
        own = await client.post(
            f"/v1/proposals/{proposal_id}/approve", json={}, headers=auth("agency-admin", user_id="u-maker")
        )
        assert own.status_code == 409
        ok = await client.post(f"/v1/proposals/{proposal_id}/approve", json={}, headers=CHECKER)
        assert ok.status_code == 200, ok.text

        closed = (await client.get(url, headers=MAKER)).json()
        assert closed["status"] == "closed"
        assert closed["appeal"] == {
            "outcome": "replaced",
            "reasons": "the rooms were exempt",
            "resolved_on": "2025-04-20",
            "decision": {"outcome": "cancel", "amounts": {}},
            "decided_by": "u-checker",
            "proposed_by": "u-maker",
        }
        # from the resolution the assessment is void: nothing owed, the 4,046.85 paid is credit
        after = await statement(client, account, "2025-04-20")
        assert (after["totals"]["balance"], after["credit"]["total"]) == ("0.00", "4046.85")
        # the cancellation replaces the reduction (taxcore: the latest decision in force wins)
        assert [a["kind"] for a in after["periods"][0]["adjustments"]] == ["cancel"]
        notice = (await client.get(f"/v1/notices/{case['notice_id']}", headers=MAKER)).json()
        assert (notice["status"], notice["case"]["outcome"], notice["case"]["status"]) == (
            "cancelled",
            "cancel",
            "closed",
        )
        # a statement dated before the resolution keeps the first decision
        assert await statement(client, account, "2025-04-19") == before
        kinds = [
            r[0]
            for r in await rows(
                db,
                "SELECT payload->'data'->>'step' FROM outbox WHERE key = :a "
                "AND event_type = 'roomtax.assessment.case.step.recorded.v1' ORDER BY id",
                a=account,
            )
        ]
        assert kinds[-3:] == ["appealed", "appeal_decision_proposed", "appeal_resolved"]

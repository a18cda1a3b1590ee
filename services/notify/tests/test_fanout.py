"""Tenancy of webhooks: a subscriber receives only the events about data it may read."""

from __future__ import annotations

import httpx
import pytest
from notify_factories import (
    ADMIN,
    DB,
    apply,
    audit_step,
    declaration,
    event,
    lodging,
    notice,
    plan_granted,
    scalar,
    webhook,
)

from notify.settings import NotifySettings
from servicekit.testing import auth

OP_A = auth("operator", operator_id="op-a")
OP_B = auth("operator", operator_id="op-b")
FAC_F = auth("facilitator", facilitator_id="fac-f")
FAC_G = auth("facilitator", facilitator_id="fac-g")
FILED = "roomtax.filing.declaration.filed.v1"
NOTICE = "roomtax.assessment.notice.issued.v1"
RUN = "roomtax.distribution.run.posted.v1"
GRANTED = "roomtax.registry.authorization.granted.v1"
PAID = "roomtax.filing.payment.received.v1"
REVERSED = "roomtax.filing.payment.reversed.v1"
URL = "http://127.0.0.1:9/hooks"


async def receivers(db: DB, event_id: str) -> list[str]:
    async with db() as session:
        from sqlalchemy import text

        rows = await session.execute(
            text(
                "SELECT s.owner_kind || ':' || s.owner_id FROM deliveries d "
                "JOIN subscriptions s ON s.id = d.subscription_id WHERE d.event_id = :e ORDER BY 1"
            ),
            {"e": event_id},
        )
        return [r[0] for r in rows]


@pytest.fixture
async def everyone(client: httpx.AsyncClient) -> None:
    for headers in (OP_A, OP_B, FAC_F, FAC_G, ADMIN):
        await webhook(client, headers, URL, FILED, NOTICE, GRANTED, PAID, REVERSED)
    await webhook(client, OP_A, URL, RUN)
    await webhook(client, ADMIN, URL, RUN)


@pytest.mark.usefixtures("everyone")
class TestTenancy:
    async def test_declaration_goes_to_its_operator_its_filer_and_the_agency(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        account = await lodging(db, notify_settings, operator_id="op-a")
        ev = declaration(account, filer_kind="facilitator", filer_id="fac-f")
        assert await apply(db, notify_settings, ev) == "applied"
        assert await receivers(db, ev.id) == ["agency:agency", "facilitator:fac-f", "operator:op-a"]

    async def test_operators_own_declaration_not_to_a_facilitator(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        account = await lodging(db, notify_settings, operator_id="op-a")
        ev = declaration(account, filer_kind="operator", filer_id="op-a")
        await apply(db, notify_settings, ev)
        assert await receivers(db, ev.id) == ["agency:agency", "operator:op-a"]

    async def test_notice_to_the_operator_and_agency_never_a_facilitator(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        account = await lodging(db, notify_settings, operator_id="op-b")
        ev = notice(account)
        await apply(db, notify_settings, ev)
        assert await receivers(db, ev.id) == ["agency:agency", "operator:op-b"]

    async def test_authorization_to_the_facilitator_named(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        account = await lodging(db, notify_settings, operator_id="op-a")
        data = {
            "authorization_id": "auth-1",
            "lodging_id": f"lodging-{account}",
            "tax_account": account,
            "facilitator_id": "fac-g",
            "starts_on": "2026-01-01",
            "ends_on": None,
        }
        ev = event(GRANTED, data)
        await apply(db, notify_settings, ev)
        assert await receivers(db, ev.id) == ["agency:agency", "facilitator:fac-g", "operator:op-a"]

    async def test_a_payment_and_its_reversal_go_to_the_facilitator_that_paid(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        account = await lodging(db, notify_settings, operator_id="op-a")
        paid = event(
            PAID,
            {
                "payment_id": "pay-f",
                "tax_account": account,
                "jurisdiction": "PR",
                "amount": "10.00",
                "method": "check",
                "received_on": "2026-12-01",
                "payer_kind": "facilitator",
                "payer_id": "fac-f",
                "periods": [],
            },
        )
        await apply(db, notify_settings, paid)
        reversed_ = event(
            REVERSED,
            {
                "reversal_id": "rev-f",
                "payment_id": "pay-f",
                "tax_account": account,
                "jurisdiction": "PR",
                "amount": "10.00",
                "reversed_on": "2026-12-02",
                "reason": "check returned unpaid",
            },
        )
        await apply(db, notify_settings, reversed_)
        expected = ["agency:agency", "facilitator:fac-f", "operator:op-a"]
        assert await receivers(db, paid.id) == expected
        assert await receivers(db, reversed_.id) == expected

    async def test_distribution_runs_are_the_agencys_alone(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        ev = event(RUN, {"run_id": "run-1", "jurisdiction": "PR"})
        await apply(db, notify_settings, ev)
        assert await receivers(db, ev.id) == ["agency:agency"]

    async def test_event_before_its_lodging_waits_for_the_snapshot(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        ev = notice("PR-LATE-1")
        await apply(db, notify_settings, ev)
        assert await receivers(db, ev.id) == ["agency:agency"]
        assert await scalar(db, "SELECT awaiting_lodging FROM events WHERE event_id = :e", e=ev.id) is True
        await lodging(db, notify_settings, operator_id="op-b", tax_account="PR-LATE-1")
        assert await receivers(db, ev.id) == ["agency:agency", "operator:op-b"]
        assert await scalar(db, "SELECT awaiting_lodging FROM events WHERE event_id = :e", e=ev.id) is False

    async def test_redelivered_event_queues_nothing_new(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        account = await lodging(db, notify_settings, operator_id="op-a")
        ev = declaration(account)
        assert await apply(db, notify_settings, ev) == "applied"
        assert await apply(db, notify_settings, ev) == "duplicate"
        assert await scalar(db, "SELECT count(*) FROM deliveries WHERE event_id = :e", e=ev.id) == 2

    async def test_disabled_and_deleted_subscriptions_get_nothing(
        self, client: httpx.AsyncClient, db: DB, notify_settings: NotifySettings
    ) -> None:
        mine = (await client.get("/v1/webhooks", headers=OP_A)).json()["items"]
        for w in mine:
            assert (await client.delete(f"/v1/webhooks/{w['id']}", headers=OP_A)).status_code == 204
        account = await lodging(db, notify_settings, operator_id="op-a")
        ev = declaration(account)
        await apply(db, notify_settings, ev)
        assert await receivers(db, ev.id) == ["agency:agency"]

    async def test_the_body_is_the_cloudevent(self, db: DB, notify_settings: NotifySettings) -> None:
        import json

        account = await lodging(db, notify_settings, operator_id="op-a")
        ev = declaration(account)
        await apply(db, notify_settings, ev)
        body = json.loads(await scalar(db, "SELECT body FROM events WHERE event_id = :e", e=ev.id))
        assert body == {**ev.model_dump(mode="json", exclude={"sequence"})}
        assert (body["specversion"], body["type"], body["data"]["tax_account"]) == ("1.0", FILED, account)


PLAN_GRANTED = "roomtax.assessment.plan.granted.v1"
AUDIT_STEP = "roomtax.assessment.audit.step.recorded.v1"
CROSSCHECK = "roomtax.assessment.crosscheck.findings.recorded.v1"


class TestCaseWorkEvents:
    """Plans and audits go to the lodging's operator (assessment shows them to it); what the
    cross-checks found is the agency's risk work alone; no facilitator gets any of them."""

    @pytest.fixture
    async def case_watchers(self, client: httpx.AsyncClient) -> None:
        for headers in (OP_A, OP_B, FAC_F, ADMIN):
            await webhook(client, headers, URL, PLAN_GRANTED, AUDIT_STEP, CROSSCHECK)

    @pytest.mark.usefixtures("case_watchers")
    async def test_plans_and_audits_to_the_operator_findings_to_the_agency(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        account = await lodging(db, notify_settings, operator_id="op-a")
        plan = event(PLAN_GRANTED, plan_granted(account))
        audit = event(AUDIT_STEP, audit_step(account, "records_requested"))
        findings = event(
            CROSSCHECK,
            {
                "run_id": "cc-1",
                "tax_account": account,
                "jurisdiction": "PR",
                "period": "2026-10",
                "declaration_id": "d-1",
                "intermediary_declarations": ["d-2"],
                "checked_on": "2026-12-01",
                "findings": [],
            },
        )
        for ev in (plan, audit, findings):
            assert await apply(db, notify_settings, ev) == "applied"
        assert await receivers(db, plan.id) == ["agency:agency", "operator:op-a"]
        assert await receivers(db, audit.id) == ["agency:agency", "operator:op-a"]
        assert await receivers(db, findings.id) == ["agency:agency"]

"""Case work in a real browser, from both sides: a taxpayer answers a notice, amends a
return and asks for a refund; the agency's work queues, a dispute worked from review to a
decision approved by a second person (maker-checker), and a refund through its steps, in
English and Spanish; a taxpayer and a read-only role see what their role allows."""

from __future__ import annotations

import calendar
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any

import pytest
from platform_harness import TODAY, Api, eventually
from playwright.async_api import Browser, expect
from web_browser import (
    LAST_MONTH,
    TWO_MONTHS_AGO,
    Walker,
    WebStack,
    guesthouse,
    person,
    platform_with_web,
    sign_in,
    walker,
)

from taxcore.periods import Period
from web.i18n import Lang


async def declare(admin: Api, lodging: dict[str, Any], period: Period, operator_id: str) -> None:
    await admin.post(
        "filing",
        "/v1/declarations",
        {
            "lodging": lodging["tax_account"],
            "period": str(period),
            "room_revenue": "1000.00",
            "room_nights": 10,
            "declared": {"tax": "90.00"},
            "filer": {"kind": "operator", "id": operator_id},
        },
        expect=201,
    )


@dataclass
class Stack(WebStack):
    disputed: dict[str, Any]  # the lodging whose notice is disputed
    refunding: dict[str, Any]  # the lodging with a credit and a refund request
    answering: dict[str, Any]  # the lodging whose notice the operator answers in the portal
    planning: dict[str, Any]  # the lodging owing a late return, paid through a payment plan
    open_notice_id: str
    case_id: str
    refund_id: str
    people: dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
async def stack() -> AsyncIterator[Stack]:
    async with platform_with_web("roomtax_e2e_casework") as (platform, web, admin):
        op = await admin.post("registry", "/v1/operators", {"name": "Hospedajes Culebra"}, expect=201)
        disputed = await guesthouse(admin, op["id"], "Casa Flamenco", "3 Calle Sol")
        refunding = await guesthouse(admin, op["id"], "Villa Tamarindo", "3 Calle Sol")
        answering = await guesthouse(admin, op["id"], "Casa Coquí", "3 Calle Sol")
        planning = await guesthouse(admin, op["id"], "Casa Ceiba", "3 Calle Sol")

        async def filing_knows() -> bool:
            for lg in (disputed, refunding, answering, planning):
                r = await admin.call("GET", "filing", f"/v1/lodgings/{lg['id']}/periods/{LAST_MONTH}")
                if r.status_code != 200:
                    return False
            return True

        await eventually(filing_knows)
        # a late return, unpaid: the agency notifies the deficiency and the operator disputes it all
        await declare(admin, disputed, TWO_MONTHS_AGO, op["id"])
        await declare(admin, answering, TWO_MONTHS_AGO, op["id"])
        await declare(admin, planning, TWO_MONTHS_AGO, op["id"])
        # 90.00 of tax (9%, §24(B)) paid with 200.00: a 110.00 credit, of which 100.00 is asked back
        await declare(admin, refunding, LAST_MONTH, op["id"])
        await admin.post(
            "filing",
            "/v1/payments",
            {
                "tax_account": refunding["tax_account"],
                "amount": "200.00",
                "method": "electronic_transfer",
                "periods": [{"period": str(LAST_MONTH), "amount": "200.00"}],
                "payer": {"kind": "operator", "id": op["id"]},
            },
            expect=201,
        )

        async def assessed() -> bool:
            owed = [
                await admin.call("GET", "assessment", f"/v1/accounts/{lg['tax_account']}/statement")
                for lg in (disputed, answering, planning)
            ]
            credit = await admin.call(
                "GET", "assessment", f"/v1/accounts/{refunding['tax_account']}/statement"
            )
            if any(r.status_code != 200 for r in [*owed, credit]):
                return False
            return all(r.json()["periods"] for r in owed) and credit.json()["credit"]["total"] == "110.00"

        await eventually(assessed)
        notice = await admin.post(
            "assessment",
            "/v1/notices",
            {"tax_account": disputed["tax_account"], "period": str(TWO_MONTHS_AGO), "reason": "unpaid"},
            expect=201,
        )
        await admin.post(
            "assessment",
            f"/v1/notices/{notice['id']}/responses",
            {"kind": "dispute", "disputed_amount": notice["amounts"]["total"], "statement": "we filed"},
            expect=201,
        )
        open_notice = await admin.post(
            "assessment",
            "/v1/notices",
            {"tax_account": answering["tax_account"], "period": str(TWO_MONTHS_AGO), "reason": "unpaid"},
            expect=201,
        )
        [case] = await admin.get("assessment", "/v1/cases", params={"tax_account": disputed["tax_account"]})
        refund = await admin.post(
            "assessment",
            f"/v1/accounts/{refunding['tax_account']}/refunds",
            {"amount": "100.00"},
            expect=201,
        )
        people = {
            role: await person(admin, role, **({"operator_id": op["id"]} if role == "operator" else {}))
            for role in ("agency-officer", "agency-admin", "agency-auditor", "operator")
        }
        other = await admin.post("registry", "/v1/operators", {"name": "Otro Operador"}, expect=201)
        people["other-operator"] = await person(admin, "operator", operator_id=other["id"])
        await web.wait_ready()
        yield Stack(
            platform,
            web,
            admin,
            disputed,
            refunding,
            answering,
            planning,
            open_notice["id"],
            case["id"],
            refund["refund_id"],
            people,
        )


async def signed_in(browser: Browser, stack: Stack, role: str, name: str, spanish: bool = False) -> Walker:
    w = await walker(browser, stack, name)
    await sign_in(w, stack.people[role]["email"], spanish=spanish)
    await expect(w.page.locator("h1")).to_have_text({False: "Overview", True: "Resumen"}[spanish])
    return w


async def portal_walker(
    browser: Browser, stack: Stack, role: str, name: str, spanish: bool = False
) -> Walker:
    w = await walker(browser, stack, name)
    await sign_in(w, stack.people[role]["email"], spanish=spanish)
    await expect(w.page.locator("h1")).to_have_text({False: "My lodgings", True: "Mis alojamientos"}[spanish])
    return w


class TestTaxpayerAnswers:
    async def test_the_operator_disputes_a_notice_in_spanish(self, stack: Stack, browser: Browser) -> None:
        w = await portal_walker(browser, stack, "operator", "answer-es", spanish=True)
        page = w.page
        await page.get_by_role("link", name="Casa Coquí").click()
        row = page.locator("#notices tbody tr")
        await expect(row).to_have_count(1)
        await expect(row).to_contain_text("abierta")
        await w.check("lodging-notices-es")
        await row.get_by_role("link").click()
        total = (await stack.admin.get("assessment", f"/v1/notices/{stack.open_notice_id}"))["amounts"][
            "total"
        ]
        await expect(page.locator("#notice-total")).to_have_text(f"${Decimal(total):,.2f}")
        await page.select_option("#f-kind", "dispute")
        await page.fill("#f-disputed_amount", "mucho")
        await page.get_by_role("button", name="Enviar la respuesta").click()
        await expect(page.locator("#e-disputed_amount")).to_have_text(
            "Indique un importe en dólares y centavos, como 1234.50."
        )
        await w.check("notice-error-es")
        unchanged = await stack.admin.get("assessment", f"/v1/notices/{stack.open_notice_id}")
        assert (unchanged["status"], unchanged["responses"]) == ("open", [])
        await page.fill("#f-disputed_amount", total)
        await page.fill("#f-statement", "Las noches eran de cortesía.")
        await page.get_by_role("button", name="Enviar la respuesta").click()
        await expect(page.locator("#notice-status")).to_have_text("impugnada")
        await expect(page.locator("#notice-responses")).to_contain_text("Las noches eran de cortesía.")
        await w.check("notice-disputed-es")
        cases = await stack.admin.get(
            "assessment", "/v1/cases", params={"tax_account": stack.answering["tax_account"]}
        )
        assert [(c["status"], c["disputed_amount"]) for c in cases] == [("filed", total)]

    async def test_the_operator_amends_a_return_and_sees_its_versions(
        self, stack: Stack, browser: Browser
    ) -> None:
        w = await portal_walker(browser, stack, "operator", "amend-en")
        page = w.page
        await page.get_by_role("link", name="Casa Coquí").click()
        month = TWO_MONTHS_AGO.first_day.strftime("%B %Y")
        await page.get_by_role("link", name=f"See declaration {month}").click()
        await page.get_by_role("link", name="Amend").click()
        await expect(page.locator("h1")).to_have_text("Amend a declaration")
        await expect(page.locator("#f-room_revenue")).to_have_value("1000.00")
        await page.fill("#f-room_revenue", "800.00")
        await page.fill("#f-declared_tax", "72.00")
        await expect(page.locator("#preview-tax")).to_have_text("$72.00")  # 9% of $800.00 (§24(B))
        await w.check("amend")
        await page.get_by_role("button", name="File the amendment").click()
        await expect(page.locator("#declaration-tax")).to_have_text("$72.00")
        await expect(page.locator("#history tbody tr")).to_have_count(2)
        await w.check("amended")
        versions = await stack.admin.get(
            "filing", "/v1/declarations", params={"lodging": stack.answering["tax_account"]}
        )
        assert sorted((d["version"], d["computed"]["tax"]) for d in versions["items"]) == [
            (1, "90.00"),
            (2, "72.00"),
        ]

    async def test_a_refund_above_the_credit_is_refused_next_to_the_amount(
        self, stack: Stack, browser: Browser
    ) -> None:
        w = await portal_walker(browser, stack, "operator", "refund-en")
        page = w.page
        await page.get_by_role("link", name="Villa Tamarindo").click()
        await page.get_by_role("link", name="Request a refund").click()
        await expect(page.locator("#credit")).to_have_text("$110.00")
        await page.fill("#f-amount", "50.00")  # 100.00 of the 110.00 is already asked back
        await page.get_by_role("button", name="Request the refund").click()
        await expect(page.locator(".refusal")).to_contain_text("Not done:")
        await w.check("refund-refused")
        await page.fill("#f-amount", "5.00")
        await page.get_by_role("button", name="Request the refund").click()
        await expect(page.locator("#refunds-table tbody tr")).to_have_count(2)
        await w.check("refunds")
        refunds = await stack.admin.get(
            "assessment", f"/v1/accounts/{stack.refunding['tax_account']}/refunds"
        )
        assert sorted(r["amount"] for r in refunds) == ["100.00", "5.00"]

    async def test_another_operator_sees_none_of_it(self, stack: Stack, browser: Browser) -> None:
        w = await walker(browser, stack, "answers-isolation")
        await sign_in(w, stack.people["other-operator"]["email"])
        for path in (
            f"/portal/notices/{stack.open_notice_id}",
            f"/portal/notices/{stack.open_notice_id}/letter.pdf",
            f"/portal/lodgings/{stack.refunding['id']}/refund",
        ):
            r = await w.page.goto(stack.web.url + path)
            assert r is not None
            assert r.status == 404, path
            assert "Casa Coquí" not in await w.page.content()
        csrf = await w.page.locator("header input[name=csrf_token]").first.get_attribute("value")
        r2 = await w.page.request.post(
            f"{stack.web.url}/portal/notices/{stack.open_notice_id}/respond",
            form={"csrf_token": csrf or "", "kind": "accept"},
            max_redirects=0,
        )
        assert r2.status == 404
        r3 = await w.page.request.post(
            f"{stack.web.url}/portal/lodgings/{stack.refunding['id']}/refund",
            form={"csrf_token": csrf or "", "amount": "1.00"},
            max_redirects=0,
        )
        assert r3.status == 404
        refunds = await stack.admin.get(
            "assessment", f"/v1/accounts/{stack.refunding['tax_account']}/refunds"
        )
        assert "1.00" not in [r["amount"] for r in refunds]


class TestDisputeToDecision:
    async def test_officer_proposes_checker_approves_in_two_languages(
        self, stack: Stack, browser: Browser
    ) -> None:
        officer = await signed_in(browser, stack, "agency-officer", "officer-en")
        page = officer.page
        await page.get_by_role("link", name="Work queues").click()
        row = page.locator(f"#case-{stack.case_id}")
        await expect(row).to_contain_text("Casa Flamenco")
        await expect(row).to_contain_text("filed")
        await officer.check("queues")
        await row.get_by_role("link", name="Casa Flamenco").click()
        await expect(page.locator("h1")).to_have_text(f"Dispute of {TWO_MONTHS_AGO.first_day:%B %Y}")
        await officer.check("case-filed")
        await page.get_by_role("button", name="Start the review").click()
        await expect(page.locator("#case-status")).to_have_text("under review")
        await page.get_by_role("button", name="Record the decision").click()  # no outcome, no reasons
        await expect(page.locator("#e-reasons")).to_have_text("Write the reasons of the decision.")
        await officer.check("case-decision-error")
        await page.select_option("#f-outcome", "reduce")
        await page.fill("#f-tax", "50.00")
        await page.fill("#f-reasons", "Ten room nights were comps for staff.")
        await page.get_by_role("button", name="Record the decision").click()
        await expect(page.locator("#case-status")).to_have_text("decision proposed")
        await officer.check("case-proposed")
        await page.locator("#case-pending").get_by_role("link", name="see the proposal").click()
        await expect(page.locator("#proposal-status")).to_have_text("pending")
        # the maker sees why there is no button, and the API refuses the form posted anyway
        await expect(page.locator("#why-no-review")).to_have_text(
            "You made this proposal: another person must approve or reject it (maker-checker)."
        )
        await expect(page.get_by_role("button", name="Approve")).to_have_count(0)
        await officer.check("proposal-maker")
        proposal_url = page.url
        proposal_id = proposal_url.rsplit("/", 1)[1]
        csrf = await page.locator("header input[name=csrf_token]").first.get_attribute("value")
        forced = await page.request.post(
            f"{proposal_url}/approve", form={"csrf_token": csrf or "", "note": ""}, max_redirects=0
        )
        assert forced.status == 409
        assert "cannot also approve" in await forced.text()
        shown = await stack.admin.get("assessment", f"/v1/proposals/{proposal_id}")
        assert (shown["status"], shown["proposed_by"]) == ("pending", stack.people["agency-officer"]["id"])

        auditor = await signed_in(browser, stack, "agency-auditor", "auditor-es", spanish=True)
        await auditor.goto(f"/agency/proposals/{proposal_id}", "proposal-auditor-es")
        await expect(auditor.page.locator("#why-no-review")).to_have_text(
            "Su rol consulta la gestión de casos; la revisa un oficial o administrador de la agencia."
        )
        await expect(auditor.page.locator("main button")).to_have_count(0)

        checker = await signed_in(browser, stack, "agency-admin", "checker-es", spanish=True)
        cpage = checker.page
        await cpage.get_by_role("link", name="Colas de trabajo").click()
        queued = cpage.locator(f"#proposal-{proposal_id}")
        await expect(queued).to_contain_text("Puede aprobarla o rechazarla.")
        await checker.check("queues-es")
        await cpage.locator(f"#proposal-{proposal_id}").get_by_role("link").click()
        await cpage.fill("#f-note", "Conforme.")
        await cpage.get_by_role("button", name="Aprobar").click()
        await expect(cpage.locator("#proposal-status")).to_have_text("aprobado")
        await checker.check("proposal-approved-es")
        reviewed = await stack.admin.get("assessment", f"/v1/proposals/{proposal_id}")
        assert (reviewed["status"], reviewed["reviewed_by"], reviewed["note"]) == (
            "approved",
            stack.people["agency-admin"]["id"],
            "Conforme.",
        )
        await cpage.get_by_role("link", name="Lo que decide").click()
        await expect(cpage.locator("#case-status")).to_have_text("decidido")
        await expect(cpage.locator("#case-decision")).to_contain_text("$50.00")
        await checker.check("case-decided-es")
        # decided cases leave the queue; the lodging page keeps the case and the timeline
        await cpage.goto(f"{stack.web.url}/agency/queues")
        await expect(cpage.locator(f"#case-{stack.case_id}")).to_have_count(0)
        await cpage.goto(f"{stack.web.url}/agency/lodgings/{stack.disputed['id']}")
        await expect(cpage.locator("#lodging-cases tbody tr")).to_have_count(1)
        await expect(cpage.locator("#lodging-cases")).to_contain_text("decidido")
        await expect(cpage.locator("#timeline")).to_contain_text("Conforme.")
        await checker.check("lodging-casework-es")


class TestRefundSteps:
    async def test_review_propose_and_a_second_person_approves(self, stack: Stack, browser: Browser) -> None:
        officer = await signed_in(browser, stack, "agency-officer", "refund-officer")
        page = officer.page
        await officer.goto("/agency/queues", "refund-queue")
        row = page.locator(f"#refund-{stack.refund_id}")
        await expect(row).to_contain_text("$100.00")
        await expect(row).to_contain_text("requested")
        await row.get_by_role("link").click()
        await page.get_by_role("button", name="Start the review").click()
        await expect(page.locator("#refund-status")).to_have_text("under review")
        await page.select_option("#f-outcome", "approve")
        await page.fill("#f-reasons", "Paid 200.00 against 90.00 of tax.")
        await page.get_by_role("button", name="Record the decision").click()
        await expect(page.locator("#refund-pending")).to_be_visible()
        await officer.check("refund-proposed")
        await page.locator("#refund-pending").get_by_role("link").click()
        await expect(page.get_by_role("button", name="Approve")).to_have_count(0)

        checker = await signed_in(browser, stack, "agency-admin", "refund-checker")
        await checker.goto(f"/agency/refunds/{stack.refund_id}", "refund-checker")
        await checker.page.locator("#refund-pending").get_by_role("link").click()
        await checker.page.get_by_role("button", name="Approve").click()
        await expect(checker.page.locator("#proposal-status")).to_have_text("approved")
        shown = await stack.admin.get("assessment", f"/v1/refunds/{stack.refund_id}")
        steps = [s["step"] for s in shown["steps"]]
        assert (shown["status"], steps) == ("approved", ["under_review", "approved"])
        await checker.goto(f"/agency/refunds/{stack.refund_id}", "refund-approved")
        await expect(checker.page.locator("#refund-steps li")).to_have_count(3)
        await expect(checker.page.get_by_role("button", name="Propose the payment")).to_be_visible()


class TestPaymentPlans:
    async def test_asked_declined_asked_again_granted_and_followed(
        self, stack: Stack, browser: Browser
    ) -> None:
        account, lodging_id = stack.planning["tax_account"], stack.planning["id"]
        owed = Decimal(
            (await stack.admin.get("assessment", f"/v1/accounts/{account}/statement"))["totals"]["balance"]
        )
        assert owed > 0
        operator = await portal_walker(browser, stack, "operator", "plan-ask-es", spanish=True)
        page = operator.page
        await page.get_by_role("link", name="Casa Ceiba").click()
        await page.get_by_role("link", name="Solicitar un plan de pagos").click()
        await expect(page.locator("#balance")).to_have_text(f"${owed:,.2f}")
        await page.get_by_role("button", name="Enviar la solicitud").click()
        await expect(page.locator("#e-installments")).to_have_text(
            "Indique un número de plazos mensuales del 1 al 120."
        )
        await expect(page.locator("#e-explanation")).to_have_text(
            "Explique a la agencia por qué necesita un plan."
        )
        await operator.check("plan-ask-errors-es")
        assert await stack.admin.get("assessment", f"/v1/accounts/{account}/plan-requests") == []
        await page.fill("#f-installments", "3")
        await page.fill("#f-explanation", "Temporada baja.")
        await page.get_by_role("button", name="Enviar la solicitud").click()
        await expect(page.locator("#plan-requests-table tbody tr")).to_have_count(1)
        await expect(page.locator("#plan-requests-table")).to_contain_text("pendiente")
        # one request at a time: the page says it waits and no longer offers to ask
        waits = f"Su solicitud del {Lang('es').date(TODAY)} espera la respuesta de la agencia."
        await expect(page.locator("#plan-request-waiting")).to_have_text(waits)
        await expect(page.get_by_role("link", name="Solicitar un plan de pagos")).to_have_count(0)
        await operator.check("plan-asked-es")
        await page.goto(f"{stack.web.url}/portal/lodgings/{lodging_id}/plan-request")
        await expect(page.locator("#plan-request-waiting")).to_have_text(waits)
        await expect(page.locator("#f-installments")).to_have_count(0)
        await page.go_back()
        [first] = await stack.admin.get("assessment", f"/v1/accounts/{account}/plan-requests")
        assert (first["installments"], first["explanation"], first["status"]) == (
            3,
            "Temporada baja.",
            "pending",
        )

        officer = await signed_in(browser, stack, "agency-officer", "plan-officer")
        opage = officer.page
        await officer.goto("/agency/queues", "plan-queue")
        queued = opage.locator(f"#plan-request-{first['id']}")
        await expect(queued).to_contain_text("Casa Ceiba")
        await queued.get_by_role("link").click()
        await expect(opage.locator("#plan-request-explanation")).to_have_text("Temporada baja.")
        await expect(opage.locator("#f-count")).to_have_value("3")
        await expect(opage.locator("#owing-total")).to_have_text(f"${owed:,.2f}")
        await officer.check("plan-grant-form")
        await opage.get_by_role("button", name="Decline the request").click()
        await expect(opage.locator("#e-reasons")).to_have_text("Write the reasons of the decision.")
        await opage.fill("#f-reasons", "Pay a down payment first.")
        await opage.get_by_role("button", name="Decline the request").click()
        await expect(opage.locator(f"#plan-request-{first['id']}")).to_contain_text(
            "declined: Pay a down payment first."
        )
        await officer.check("plan-declined")

        await page.goto(f"{stack.web.url}/portal/lodgings/{lodging_id}/plan-request")
        await page.fill("#f-installments", "3")
        await page.fill("#f-explanation", "Con un pago inicial.")
        await page.get_by_role("button", name="Enviar la solicitud").click()
        await expect(page.locator("#plan-requests-table tbody tr")).to_have_count(2)
        second = next(
            r
            for r in await stack.admin.get("assessment", f"/v1/accounts/{account}/plan-requests")
            if r["status"] == "pending"
        )

        await officer.goto(
            f"/agency/lodgings/{lodging_id}/plan?request_id={second['id']}", "plan-grant-second"
        )
        first_due = date.fromisoformat(await opage.locator("#f-first_due_on").input_value())
        assert first_due == next_month(TODAY)
        down_due = TODAY + timedelta(days=5)
        await opage.fill("#f-down_amount", "cien")
        await opage.fill("#f-down_due_on", down_due.isoformat())
        await opage.get_by_role("button", name="Grant the plan").click()
        await expect(opage.locator("#e-down_amount")).to_have_text(
            "Enter an amount in dollars and cents, like 1234.50."
        )
        assert await stack.admin.get("assessment", f"/v1/accounts/{account}/plans") == []
        await opage.fill("#f-down_amount", "100.00")
        await opage.get_by_role("button", name="Grant the plan").click()
        await expect(opage.locator("#plan-status")).to_have_text("current")
        await officer.check("plan-granted")
        # what the 100.00 down payment leaves, in three: each share rounded down to the cent,
        # the cents left over on the last; monthly on the first due date's day
        rest = owed - Decimal("100.00")
        share = (rest / 3).quantize(Decimal("0.01"), rounding=ROUND_DOWN)
        dues = [first_due, next_month(first_due), next_month(next_month(first_due))]
        expected = [(0, down_due.isoformat(), "100.00")] + [
            (n, d.isoformat(), str(a))
            for n, d, a in zip((1, 2, 3), dues, (share, share, rest - 2 * share), strict=True)
        ]
        [plan] = await stack.admin.get("assessment", f"/v1/accounts/{account}/plans")
        assert [(i["number"], i["due_on"], i["amount"]) for i in plan["schedule"]] == expected
        assert (plan["planned_amount"], plan["request_id"], plan["granted_by"]) == (
            str(owed),
            second["id"],
            f"user:{stack.people['agency-officer']['id']}",
        )
        await expect(opage.locator("#plan-schedule tbody tr")).to_have_count(4)
        await expect(opage.locator("#installment-3")).to_contain_text(f"${rest - 2 * share:,.2f}")

        await page.goto(f"{stack.web.url}/portal/lodgings/{lodging_id}")
        await expect(page.locator("#plans-table")).to_contain_text("vigente")
        await page.locator("#plans-table").get_by_role("link").click()
        await expect(page.locator("#plan-schedule tbody tr")).to_have_count(4)
        await expect(page.locator("#plan-remaining")).to_have_text(f"${owed:,.2f}")
        await expect(page.locator("#installment-0")).to_contain_text("por vencer")
        await operator.check("plan-followed-es")

        # the agency's plan pages in Spanish; an officer reads who granted it by name
        officer_es = await signed_in(browser, stack, "agency-officer", "plan-officer-es", spanish=True)
        await officer_es.goto(f"/agency/plans/{plan['id']}", "plan-agency-es")
        await expect(officer_es.page.locator("h1")).to_have_text(f"Plan de pagos de ${owed:,.2f}")
        granter = officer_es.page.locator("main p .person").first
        await expect(granter).to_have_text(stack.people["agency-officer"]["name"])
        await expect(officer_es.page.locator("#plan-status")).to_have_text("vigente")
        await officer_es.goto(f"/agency/lodgings/{lodging_id}/plan", "plan-grant-es")
        await expect(officer_es.page.locator("h1")).to_contain_text("plan de pagos")
        # its only month owing is in the current plan: no form that assessment would refuse
        await expect(officer_es.page.locator("#nothing-to-plan")).to_contain_text("Ningún mes adeudado")
        await expect(officer_es.page.locator("#grant-form")).to_have_count(0)
        await officer_es.goto(f"/agency/lodgings/{lodging_id}", "plan-lodging-es")
        await expect(officer_es.page.locator("#plans-table")).to_contain_text("vigente")

        auditor = await signed_in(browser, stack, "agency-auditor", "plan-auditor")
        await auditor.goto(f"/agency/lodgings/{lodging_id}/plan", "plan-auditor")
        await expect(auditor.page.locator("main")).to_contain_text(
            "Your role reads case work; an agency officer or administrator grants plans."
        )
        await expect(auditor.page.get_by_role("button", name="Grant the plan")).to_have_count(0)

        other = await walker(browser, stack, "plan-isolation")
        await sign_in(other, stack.people["other-operator"]["email"])
        for path in (f"/portal/plans/{plan['id']}", f"/portal/lodgings/{lodging_id}/plan-request"):
            r = await other.page.goto(stack.web.url + path)
            assert r is not None
            assert r.status == 404, path
            assert "Casa Ceiba" not in await other.page.content()
        csrf = await other.page.locator("header input[name=csrf_token]").first.get_attribute("value")
        forced = await other.page.request.post(
            f"{stack.web.url}/portal/lodgings/{lodging_id}/plan-request",
            form={"csrf_token": csrf or "", "installments": "2", "explanation": "x"},
            max_redirects=0,
        )
        assert forced.status == 404
        asked = await stack.admin.get("assessment", f"/v1/accounts/{account}/plan-requests")
        assert sorted(r["explanation"] for r in asked) == ["Con un pago inicial.", "Temporada baja."]


def next_month(day: date) -> date:
    """``day``'s day of the next month, or that month's last day where it is shorter."""
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


class TestWhoSeesCaseWork:
    async def test_a_taxpayer_gets_no_agency_page_and_unknown_ids_are_not_found(
        self, stack: Stack, browser: Browser
    ) -> None:
        w = await walker(browser, stack, "casework-isolation")
        await sign_in(w, stack.people["operator"]["email"])
        await expect(w.page.locator("h1")).to_have_text("My lodgings")
        for path in (
            "/agency/queues",
            f"/agency/cases/{stack.case_id}",
            f"/agency/refunds/{stack.refund_id}",
        ):
            r = await w.page.goto(stack.web.url + path)
            assert r is not None
            assert r.status == 403, path
            assert "Casa Flamenco" not in await w.page.content()
        officer = await signed_in(browser, stack, "agency-officer", "casework-404")
        for path in ("/agency/cases/nope", "/agency/proposals/nope", "/agency/refunds/nope"):
            r = await officer.page.goto(stack.web.url + path)
            assert r is not None
            assert r.status == 404, path
            await expect(officer.page.locator("h1")).to_have_text("Not found")
        await expect(officer.page).to_have_url(re.compile(r"/agency/refunds/nope$"))

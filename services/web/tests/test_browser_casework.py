"""Case work in a real browser, from both sides: a taxpayer answers a notice, amends a
return and asks for a refund; the agency's work queues, a dispute worked from review to a
decision approved by a second person (maker-checker), and a refund through its steps, in
English and Spanish; a taxpayer and a read-only role see what their role allows."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from platform_harness import Api, eventually
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

        async def filing_knows() -> bool:
            for lg in (disputed, refunding, answering):
                r = await admin.call("GET", "filing", f"/v1/lodgings/{lg['id']}/periods/{LAST_MONTH}")
                if r.status_code != 200:
                    return False
            return True

        await eventually(filing_knows)
        # a late return, unpaid: the agency notifies the deficiency and the operator disputes it all
        await declare(admin, disputed, TWO_MONTHS_AGO, op["id"])
        await declare(admin, answering, TWO_MONTHS_AGO, op["id"])
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
                for lg in (disputed, answering)
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

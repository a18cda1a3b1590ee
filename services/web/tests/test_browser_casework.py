"""Case work in a real browser: the agency's work queues, a dispute worked from review to a
decision approved by a second person (maker-checker), and a refund through its steps, in
English and Spanish; a taxpayer and a read-only role see what their role allows."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from platform_harness import Api, Platform, eventually
from playwright.async_api import Browser, expect
from web_browser import (
    LAST_MONTH,
    TWO_MONTHS_AGO,
    Walker,
    WebProcess,
    new_walker,
    person,
    platform_with_web,
    sign_in,
)

from taxcore.periods import Period


@dataclass
class Stack:
    platform: Platform
    web: WebProcess
    admin: Api
    disputed: dict[str, Any]  # the lodging whose notice is disputed
    refunding: dict[str, Any]  # the lodging with a credit and a refund request
    case_id: str
    refund_id: str
    people: dict[str, dict[str, Any]]


async def lodging(admin: Api, operator_id: str, name: str) -> dict[str, Any]:
    created: dict[str, Any] = await admin.post(
        "registry",
        "/v1/lodgings",
        {
            "jurisdiction": "PR",
            "lodging_class": "guesthouse",
            "name": name,
            "address": {"line1": "3 Calle Sol", "municipality": "Culebra"},
            "room_count": 6,
            "operator_id": operator_id,
            "registered_on": TWO_MONTHS_AGO.first_day.isoformat(),
        },
        expect=201,
    )
    return created


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


@pytest.fixture(scope="module")
async def stack() -> AsyncIterator[Stack]:
    async with platform_with_web("roomtax_e2e_casework") as (platform, web, admin):
        op = await admin.post("registry", "/v1/operators", {"name": "Hospedajes Culebra"}, expect=201)
        disputed = await lodging(admin, op["id"], "Casa Flamenco")
        refunding = await lodging(admin, op["id"], "Villa Tamarindo")

        async def filing_knows() -> bool:
            for lg in (disputed, refunding):
                r = await admin.call("GET", "filing", f"/v1/lodgings/{lg['id']}/periods/{LAST_MONTH}")
                if r.status_code != 200:
                    return False
            return True

        await eventually(filing_knows)
        # a late return, unpaid: the agency notifies the deficiency and the operator disputes it all
        await declare(admin, disputed, TWO_MONTHS_AGO, op["id"])
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
            owed = await admin.call("GET", "assessment", f"/v1/accounts/{disputed['tax_account']}/statement")
            credit = await admin.call(
                "GET", "assessment", f"/v1/accounts/{refunding['tax_account']}/statement"
            )
            if owed.status_code != 200 or credit.status_code != 200:
                return False
            return bool(owed.json()["periods"]) and credit.json()["credit"]["total"] == "110.00"

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
        await web.wait_ready()
        yield Stack(platform, web, admin, disputed, refunding, case["id"], refund["refund_id"], people)


async def signed_in(browser: Browser, stack: Stack, role: str, name: str, spanish: bool = False) -> Walker:
    w = await new_walker(browser, stack.web.url, stack.platform.logs, name)
    await sign_in(w, stack.people[role]["email"], spanish=spanish)
    await expect(w.page.locator("h1")).to_have_text({False: "Overview", True: "Resumen"}[spanish])
    return w


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
        w = await new_walker(browser, stack.web.url, stack.platform.logs, "casework-isolation")
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

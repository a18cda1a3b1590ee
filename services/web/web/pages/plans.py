"""Payment plans on both sides, over assessment's plan APIs.

The taxpayer asks for a plan from the lodging's page (how many installments, why) and
follows each plan's schedule; the agency works the requests from its queues (grant or
decline, with the reasons) and grants a plan directly from a lodging's page: the balance
of the months owing, an optional down payment, and equal monthly installments that
assessment splits to the cent (``equal_installments``). Every rule stays in assessment
(what can be planned, the schedule's dates and sums, who grants): the pages show its
refusals next to the fields they name, in the person's language. A plan lowers nothing
(interest and charges keep accruing); it defers collection, so one person grants it.
"""

from __future__ import annotations

import asyncio
import calendar
from datetime import date
from decimal import Decimal
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from servicekit.runtime import runtime_of
from web import people
from web.core import AgencyDep, Api, ApiDep, CsrfDep, PortalDep, lang_of, render
from web.forms import AMOUNT_HINT, act, dollars
from web.pages.answers import answers_for
from web.pages.casework import may_work
from web.session import Person

portal = APIRouter(prefix="/portal")
agency = APIRouter(prefix="/agency")
#: the grant form's fields by the body fields assessment's refusals name
GRANT_FIELDS = {
    "down_payment.amount": "down_amount",
    "down_payment.due_on": "down_due_on",
    "equal_installments.count": "count",
    "equal_installments.first_due_on": "first_due_on",
}


async def of_account(api: Api, account: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The account's plans and plan requests; none while assessment has not opened it."""
    plans, requests = await asyncio.gather(
        api.get_or([], "assessment", f"/v1/accounts/{account}/plans"),
        api.get_or([], "assessment", f"/v1/accounts/{account}/plan-requests"),
    )
    return plans, requests


def waiting(requests: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The account's request still waiting for the agency (assessment takes one at a time)."""
    return next((r for r in requests if r["status"] == "pending"), None)


def _count(raw: str) -> int | None:
    """A number of installments as typed (1 to 120), or None."""
    try:
        n = int(raw.strip())
    except ValueError:
        return None
    return n if 1 <= n <= 120 else None


# ---- the taxpayer ---------------------------------------------------------------------


async def _request_page(
    request: Request,
    person: Person,
    api: Api,
    lodging_id: str,
    form: dict[str, str],
    errors: dict[str, str],
    status: int = 200,
) -> Response:
    lodging = await api.get("registry", f"/v1/lodgings/{lodging_id}")
    statement, (_, requests) = await asyncio.gather(
        api.get("assessment", f"/v1/accounts/{lodging['tax_account']}/statement"),
        of_account(api, lodging["tax_account"]),
    )
    return render(
        request,
        "portal/plan_request.html",
        status,
        lodging=lodging,
        balance=(statement.get("totals") or {}).get("balance", "0.00"),
        asks=answers_for(person),
        waiting_request=waiting(requests),
        form=form,
        errors=errors,
    )


@portal.get("/lodgings/{lodging_id}/plan-request")
async def request_form(request: Request, lodging_id: str, person: PortalDep, api: ApiDep) -> Response:
    return await _request_page(request, person, api, lodging_id, {}, {})


@portal.post("/lodgings/{lodging_id}/plan-request", dependencies=[CsrfDep])
async def ask_for_a_plan(
    request: Request,
    lodging_id: str,
    person: PortalDep,
    api: ApiDep,
    installments: Annotated[str, Form()] = "",
    explanation: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    form = {"installments": installments, "explanation": explanation}
    errors: dict[str, str] = {}
    count = _count(installments)
    if count is None:
        errors["installments"] = _("Enter a number of monthly installments from 1 to 120.")
    if not explanation.strip():
        errors["explanation"] = _("Tell the agency why you need a plan.")
    if errors:
        return await _request_page(request, person, api, lodging_id, form, errors, 422)
    lodging = await api.get("registry", f"/v1/lodgings/{lodging_id}")
    body = {"installments": count, "explanation": explanation.strip()}
    return await act(
        request,
        lambda: api.post("assessment", f"/v1/accounts/{lodging['tax_account']}/plan-requests", body),
        partial(_request_page, request, person, api, lodging_id, form),
        f"/portal/lodgings/{lodging_id}#plans",
    )


@portal.get("/plans/{plan_id}")
async def portal_plan(request: Request, plan_id: str, person: PortalDep, api: ApiDep) -> Response:
    plan = await api.get("assessment", f"/v1/plans/{plan_id}")
    lodging = await api.get("registry", f"/v1/lodgings/{plan['tax_account']}")
    return render(request, "portal/plan.html", plan=plan, lodging=lodging)


# ---- the agency -----------------------------------------------------------------------


def _next_month(day: date) -> date:
    """The default first due date: a month after ``day`` (its month's last day where shorter)."""
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


async def _grant_page(
    request: Request,
    person: Person,
    api: Api,
    lodging_id: str,
    request_id: str | None,
    form: dict[str, str],
    errors: dict[str, str],
    status: int = 200,
) -> Response:
    """The form that grants a plan for the account's balance (and answers a request)."""
    lodging = await api.get("registry", f"/v1/lodgings/{lodging_id}")
    account = lodging["tax_account"]
    statement, (plans, requests) = await asyncio.gather(
        api.get("assessment", f"/v1/accounts/{account}/statement"), of_account(api, account)
    )
    asked = next((r for r in requests if r["id"] == request_id), None) if request_id else None
    if asked is not None:
        await people.resolve(request, api, asked)
    today = runtime_of(request).today()
    defaults = {
        "count": str(asked["installments"]) if asked else "6",
        "first_due_on": _next_month(today).isoformat(),
        "down_amount": "",
        "down_due_on": "",
    }
    owing = [p for p in statement["periods"] if Decimal(p["balance"]) > 0]
    current = [p for p in plans if p["status"] == "current"]
    in_a_plan = {m for p in current for m in p["periods"]}
    return render(
        request,
        "agency/plan_grant.html",
        status,
        lodging=lodging,
        owing=owing,
        # a month in a current plan cannot be planned again (assessment refuses it)
        plannable=[p for p in owing if p["period"] not in in_a_plan],
        balance=(statement.get("totals") or {}).get("balance", "0.00"),
        asked=asked,
        current=current,
        may_work=may_work(person),
        form={**defaults, **form},
        errors=errors,
    )


@agency.get("/lodgings/{lodging_id}/plan")
async def grant_form(
    request: Request, lodging_id: str, person: AgencyDep, api: ApiDep, request_id: str | None = None
) -> Response:
    return await _grant_page(request, person, api, lodging_id, request_id, {}, {})


@agency.post("/lodgings/{lodging_id}/plan", dependencies=[CsrfDep])
async def grant(
    request: Request,
    lodging_id: str,
    person: AgencyDep,
    api: ApiDep,
    request_id: Annotated[str, Form()] = "",
    count: Annotated[str, Form()] = "",
    first_due_on: Annotated[str, Form()] = "",
    down_amount: Annotated[str, Form()] = "",
    down_due_on: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    form = {
        "count": count,
        "first_due_on": first_due_on,
        "down_amount": down_amount,
        "down_due_on": down_due_on,
    }
    page = partial(_grant_page, request, person, api, lodging_id, request_id or None, form)
    errors: dict[str, str] = {}
    n = _count(count)
    if n is None:
        errors["count"] = _("Enter a number of monthly installments from 1 to 120.")
    if not first_due_on:
        errors["first_due_on"] = _("Choose the first installment's due date.")
    down: dict[str, str] | None = None
    if down_amount.strip():
        value = dollars(down_amount)
        if value is None:
            errors["down_amount"] = _(AMOUNT_HINT)
        elif not down_due_on:
            errors["down_due_on"] = _("Choose the down payment's due date.")
        else:
            down = {"due_on": down_due_on, "amount": str(value)}
    if errors:
        return await page(errors, 422)
    lodging = await api.get("registry", f"/v1/lodgings/{lodging_id}")
    body: dict[str, Any] = {"equal_installments": {"count": n, "first_due_on": first_due_on}}
    if down is not None:
        body["down_payment"] = down
    if request_id:
        body["request_id"] = request_id
    return await act(
        request,
        lambda: api.post("assessment", f"/v1/accounts/{lodging['tax_account']}/plans", body),
        page,
        lambda plan: f"/agency/plans/{plan['id']}",
        GRANT_FIELDS,
    )


@agency.post("/plan-requests/{request_id}/decline", dependencies=[CsrfDep])
async def decline(
    request: Request,
    request_id: str,
    person: AgencyDep,
    api: ApiDep,
    reasons: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    asked = await api.get("assessment", f"/v1/plan-requests/{request_id}")
    lodging = await api.get("registry", f"/v1/lodgings/{asked['tax_account']}")
    page = partial(_grant_page, request, person, api, lodging["id"], request_id, {"reasons": reasons})
    if not reasons.strip():
        return await page({"reasons": _("Write the reasons of the decision.")}, 422)
    return await act(
        request,
        lambda: api.post(
            "assessment", f"/v1/plan-requests/{request_id}/decline", {"reasons": reasons.strip()}
        ),
        page,
        f"/agency/lodgings/{lodging['id']}#plans",
    )


@agency.get("/plans/{plan_id}")
async def agency_plan(request: Request, plan_id: str, person: AgencyDep, api: ApiDep) -> Response:
    plan = await api.get("assessment", f"/v1/plans/{plan_id}")
    lodging = await api.get("registry", f"/v1/lodgings/{plan['tax_account']}")
    await people.resolve(request, api, plan)
    return render(request, "agency/plan.html", plan=plan, lodging=lodging)

"""A taxpayer's answers to the agency: a notice accepted or disputed (PR §34: with the
undisputed part paid), and a refund of credit requested (PR §42).

The rules (the response term, the prepayment, the refundable credit) stay in assessment;
a refusal comes back as problem+json and is shown next to the field it names.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from web.core import Api, ApiDep, CsrfDep, PortalDep, lang_of, render
from web.forms import AMOUNT_HINT, act, dollars
from web.i18n import N_
from web.session import Person

router = APIRouter(prefix="/portal")
RESPONSES = {"accept": N_("I accept the notice"), "dispute": N_("I dispute part or all of it")}


def answers_for(person: Person) -> bool:
    """The operator answers for its lodgings; a facilitator reads (the services refuse it too)."""
    return person.role == "operator"


async def _notice_page(
    request: Request,
    person: Person,
    api: Api,
    notice_id: str,
    form: dict[str, str],
    errors: dict[str, str],
    status: int = 200,
) -> Response:
    notice = await api.get("assessment", f"/v1/notices/{notice_id}")
    lodging = await api.get("registry", f"/v1/lodgings/{notice['tax_account']}")
    return render(
        request,
        "portal/notice.html",
        status,
        notice=notice,
        lodging=lodging,
        answers=answers_for(person),
        responses=RESPONSES,
        form=form,
        errors=errors,
    )


@router.get("/notices/{notice_id}")
async def notice_page(request: Request, notice_id: str, person: PortalDep, api: ApiDep) -> Response:
    return await _notice_page(request, person, api, notice_id, {}, {})


@router.get("/notices/{notice_id}/letter.pdf")
async def notice_letter(request: Request, notice_id: str, person: PortalDep, api: ApiDep) -> Response:
    path = f"/v1/notices/{notice_id}/letter.pdf"
    return await api.download(
        "assessment", path, media_type="application/pdf", filename=f"notice-{notice_id}.pdf"
    )


@router.post("/notices/{notice_id}/respond", dependencies=[CsrfDep])
async def respond(
    request: Request,
    notice_id: str,
    person: PortalDep,
    api: ApiDep,
    kind: Annotated[str, Form()] = "",
    disputed_amount: Annotated[str, Form()] = "",
    statement: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    form = {"kind": kind, "disputed_amount": disputed_amount, "statement": statement}
    errors: dict[str, str] = {}
    if kind not in RESPONSES:
        errors["kind"] = _("Choose your answer.")
    body: dict[str, Any] = {"kind": kind, "statement": statement.strip() or None}
    if kind == "dispute":
        value = dollars(disputed_amount)
        if value is None:
            errors["disputed_amount"] = _(AMOUNT_HINT)
        body["disputed_amount"] = str(value)
    if errors:
        return await _notice_page(request, person, api, notice_id, form, errors, 422)
    return await act(
        request,
        lambda: api.post("assessment", f"/v1/notices/{notice_id}/responses", body),
        partial(_notice_page, request, person, api, notice_id, form),
        f"/portal/notices/{notice_id}",
    )


async def _refund_page(
    request: Request,
    person: Person,
    api: Api,
    lodging_id: str,
    form: dict[str, str],
    errors: dict[str, str],
    status: int = 200,
) -> Response:
    lodging = await api.get("registry", f"/v1/lodgings/{lodging_id}")
    statement = await api.get("assessment", f"/v1/accounts/{lodging['tax_account']}/statement")
    return render(
        request,
        "portal/refund.html",
        status,
        lodging=lodging,
        credit=statement.get("credit") or {},
        answers=answers_for(person),
        form=form,
        errors=errors,
    )


@router.get("/lodgings/{lodging_id}/refund")
async def refund_form(request: Request, lodging_id: str, person: PortalDep, api: ApiDep) -> Response:
    return await _refund_page(request, person, api, lodging_id, {}, {})


@router.post("/lodgings/{lodging_id}/refund", dependencies=[CsrfDep])
async def request_refund(
    request: Request, lodging_id: str, person: PortalDep, api: ApiDep, amount: Annotated[str, Form()] = ""
) -> Response:
    _ = lang_of(request).gettext
    value = dollars(amount)
    if value is None:
        errors = {"amount": _(AMOUNT_HINT)}
        return await _refund_page(request, person, api, lodging_id, {"amount": amount}, errors, 422)
    lodging = await api.get("registry", f"/v1/lodgings/{lodging_id}")
    return await act(
        request,
        lambda: api.post(
            "assessment", f"/v1/accounts/{lodging['tax_account']}/refunds", {"amount": str(value)}
        ),
        partial(_refund_page, request, person, api, lodging_id, {"amount": amount}),
        f"/portal/lodgings/{lodging_id}#refunds",
    )

"""The taxpayer portal: an operator's or facilitator's lodgings, filing calendar,
declarations (form built from taxcore's lines, with a preview), payments and receipts."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from servicekit.runtime import runtime_of
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date
from web import lines as declaration_lines
from web.backend import ApiError
from web.core import ApiDep, CsrfDep, PortalDep, lang_of, redirect, render
from web.forms import AMOUNT_HINT, dollars
from web.i18n import N_
from web.pages import schedules
from web.pages.answers import answers_for
from web.pages.plans import of_account
from web.pages.plans import waiting as plan_waiting

router = APIRouter(prefix="/portal")

METHODS: dict[str, str] = {
    "electronic_transfer": N_("Electronic transfer"),
    "check": N_("Check"),
    "cashiers_check": N_("Cashier's check"),
    "bank_money_order": N_("Bank money order"),
    "postal_money_order": N_("Postal money order"),
    "card": N_("Card"),
    "cash": N_("Cash"),
}


@dataclass
class CalendarRow:
    period: str
    due_date: date
    status: str  # on_time | late | missing | open
    declaration: dict[str, Any] | None


def calendar(
    lodging: dict[str, Any], declarations: list[dict[str, Any]], today: date, *, law: ParameterTree
) -> list[CalendarRow]:
    """Every month since registration, newest first: filed (on time or late), missing
    (past its due date without a return) or open (not yet due), due dates from taxcore."""
    filed = {d["period"]: d for d in declarations}
    first = Period.of(date.fromisoformat(lodging["registered_on"]))
    last = Period.of(today).prev()
    rows: list[CalendarRow] = []
    period = first
    while period.months_until(last) >= 0:
        due = due_date(lodging["jurisdiction"], period, parameters=law)
        decl = filed.get(str(period))
        if decl is not None:
            status = "late" if decl["late"] else "on_time"
        else:
            status = "missing" if today > due else "open"
        rows.append(CalendarRow(str(period), due, status, decl))
        period = period.next()
    return list(reversed(rows))


async def _lodging(api: ApiDep, lodging_id: str) -> dict[str, Any]:
    found: dict[str, Any] = await api.get("registry", f"/v1/lodgings/{lodging_id}")
    return found


@router.get("")
async def my_lodgings(request: Request, person: PortalDep, api: ApiDep) -> Response:
    page = await api.get("registry", "/v1/lodgings", params={"limit": 200})
    return render(request, "portal/lodgings.html", lodgings=page["items"])


@router.get("/lodgings/{lodging_id}")
async def lodging_page(request: Request, lodging_id: str, person: PortalDep, api: ApiDep) -> Response:
    lodging = await _lodging(api, lodging_id)
    account = lodging["tax_account"]
    declarations = await api.get(
        "filing", "/v1/declarations", params={"lodging": account, "latest": "true", "limit": 200}
    )
    payments, notices, refunds, (plans, plan_requests), owed = await asyncio.gather(
        api.get("filing", "/v1/payments", params={"lodging": account, "limit": 100}),
        api.get("assessment", "/v1/notices", params={"tax_account": account, "limit": 100}),
        _refunds(api, account),
        of_account(api, account),
        _balance(api, account),
    )
    runtime = runtime_of(request)
    waiting = plan_waiting(plan_requests)
    return render(
        request,
        "portal/lodging.html",
        lodging=lodging,
        calendar=calendar(lodging, declarations["items"], runtime.today(), law=runtime.law),
        payments=payments["items"],
        notices=notices["items"],
        refunds=refunds,
        plans=plans,
        plan_requests=plan_requests,
        asks_for_a_plan=answers_for(person) and owed > 0 and waiting is None,
        waiting_request=waiting,
    )


async def _balance(api: ApiDep, account: str) -> Decimal:
    """What the account owes today (0 when assessment has not opened it)."""
    statement = await api.get_or({}, "assessment", f"/v1/accounts/{account}/statement")
    return Decimal((statement.get("totals") or {}).get("balance", "0"))


async def _refunds(api: ApiDep, account: str) -> list[dict[str, Any]]:
    """The account's refunds; none yet when assessment has not opened the account."""
    found: list[dict[str, Any]] = await api.get_or([], "assessment", f"/v1/accounts/{account}/refunds")
    return found


def _period(raw: str | None, lodging: dict[str, Any], today: date) -> Period:
    try:
        return Period.parse(raw or "")
    except ValueError:
        return Period.of(today).prev()


async def _form_page(
    request: Request,
    api: ApiDep,
    lodging_id: str,
    period_text: str | None,
    form: dict[str, str],
    errors: dict[str, str],
    status: int = 200,
    amends: dict[str, Any] | None = None,
) -> Response:
    """The declaration form: a new return, or (``amends``) a new version of a filed one."""
    lodging = await _lodging(api, lodging_id)
    runtime = runtime_of(request)
    period = _period(period_text, lodging, runtime.today())
    names = declaration_lines.form_lines(
        lodging["jurisdiction"], lodging["lodging_class"], period, tree=runtime.law
    )
    return render(
        request,
        "portal/file.html",
        status,
        lodging=lodging,
        period=str(period),
        lines=[(n, declaration_lines.LABELS[n]) for n in names],
        form=form,
        errors=errors,
        preview=None,
        amends=amends,
    )


@router.get("/lodgings/{lodging_id}/file")
async def file_form(
    request: Request, lodging_id: str, person: PortalDep, api: ApiDep, period: str | None = None
) -> Response:
    return await _form_page(request, api, lodging_id, period, {}, {})


async def _parsed(
    request: Request, lodging: dict[str, Any], period: Period
) -> tuple[dict[str, str], list[str], declaration_lines.Parsed]:
    form = {k: str(v) for k, v in (await request.form()).items()}
    names = declaration_lines.form_lines(
        lodging["jurisdiction"], lodging["lodging_class"], period, tree=runtime_of(request).law
    )
    return form, names, declaration_lines.parse_form(form, names)


@router.post("/lodgings/{lodging_id}/preview", dependencies=[CsrfDep])
async def file_preview(
    request: Request, lodging_id: str, person: PortalDep, api: ApiDep, period: Annotated[str, Form()]
) -> Response:
    """htmx: the computed tax, findings and trace for the figures typed so far."""
    lodging = await _lodging(api, lodging_id)
    runtime = runtime_of(request)
    p = _period(period, lodging, runtime.today())
    _form, _names, parsed = await _parsed(request, lodging, p)
    _ = lang_of(request).gettext
    errors = {k: _(v) for k, v in parsed.errors.items()}
    result = None
    if not errors:
        result = declaration_lines.preview(
            jurisdiction=lodging["jurisdiction"],
            lodging_class=lodging["lodging_class"],
            casino=lodging["casino"],
            period=p,
            parsed=parsed,
            today=runtime.today(),
            tree=runtime.law,
        )
    return render(request, "portal/_preview.html", preview=result, errors=errors)


@router.post("/lodgings/{lodging_id}/file", dependencies=[CsrfDep])
async def file_declaration(
    request: Request, lodging_id: str, person: PortalDep, api: ApiDep, period: Annotated[str, Form()]
) -> Response:
    lodging = await _lodging(api, lodging_id)
    p = _period(period, lodging, runtime_of(request).today())
    form, names, parsed = await _parsed(request, lodging, p)
    _ = lang_of(request).gettext
    errors = {k: _(v) for k, v in parsed.errors.items()}
    if errors:
        return await _form_page(request, api, lodging_id, str(p), form, errors, 422)
    body: dict[str, Any] = {"lodging": lodging["tax_account"], "period": str(p), **_lines_body(parsed, names)}
    return await _send_declaration(request, api, "/v1/declarations", body, form, lodging_id, str(p), None)


def _lines_body(parsed: declaration_lines.Parsed, names: list[str]) -> dict[str, Any]:
    return {
        **{n: str(parsed.amounts.get(n, Decimal(0))) for n in names},
        "room_nights": parsed.room_nights,
        "declared": {"tax": str(parsed.declared_tax)} if parsed.declared_tax is not None else {},
    }


async def _send_declaration(
    request: Request,
    api: ApiDep,
    path: str,
    body: dict[str, Any],
    form: dict[str, str],
    lodging_id: str,
    period: str,
    amends: dict[str, Any] | None,
) -> Response:
    """File (or amend); a refusal shows the form again with each reason next to its field."""
    _ = lang_of(request).gettext
    try:
        filed = await api.post(
            "filing", path, body, headers={"Idempotency-Key": "file-" + form.get("form_id", "")}
        )
    except ApiError as exc:
        if exc.status not in (409, 422):
            raise
        fields = exc.field_errors() or {"_form": exc.detail}
        errors = {k: _("Not accepted: %(detail)s", detail=v) for k, v in fields.items()}
        return await _form_page(request, api, lodging_id, period, form, errors, 422, amends)
    return redirect(f"/portal/declarations/{filed['id']}", request)


def _form_of(declaration: dict[str, Any]) -> dict[str, str]:
    """A filed declaration's figures as the form's fields (to amend them)."""
    submitted = declaration["submitted"]
    form = {
        k: str(v) for k, v in submitted.items() if isinstance(v, str | int) and k not in ("lodging", "period")
    }
    declared = submitted.get("declared") or {}
    if declared.get("tax") is not None:
        form["declared_tax"] = str(declared["tax"])
    return form


@router.get("/declarations/{declaration_id}/amend")
async def amend_form(request: Request, declaration_id: str, person: PortalDep, api: ApiDep) -> Response:
    declaration = await api.get("filing", f"/v1/declarations/{declaration_id}")
    lodging_id = declaration["lodging"]["lodging_id"]
    return await _form_page(
        request, api, lodging_id, declaration["period"], _form_of(declaration), {}, 200, declaration
    )


@router.post("/declarations/{declaration_id}/amend", dependencies=[CsrfDep])
async def amend_declaration(
    request: Request, declaration_id: str, person: PortalDep, api: ApiDep
) -> Response:
    declaration = await api.get("filing", f"/v1/declarations/{declaration_id}")
    lodging_id = declaration["lodging"]["lodging_id"]
    lodging = await _lodging(api, lodging_id)
    p = _period(declaration["period"], lodging, runtime_of(request).today())
    form, names, parsed = await _parsed(request, lodging, p)
    _ = lang_of(request).gettext
    errors = {k: _(v) for k, v in parsed.errors.items()}
    if errors:
        return await _form_page(request, api, lodging_id, str(p), form, errors, 422, declaration)
    path = f"/v1/declarations/{declaration_id}/amendments"
    body = _lines_body(parsed, names)
    return await _send_declaration(request, api, path, body, form, lodging_id, str(p), declaration)


@router.get("/declarations/{declaration_id}")
async def declaration_page(request: Request, declaration_id: str, person: PortalDep, api: ApiDep) -> Response:
    declaration, history = await asyncio.gather(
        api.get("filing", f"/v1/declarations/{declaration_id}", params={"explain": "true"}),
        api.get("filing", f"/v1/declarations/{declaration_id}/history"),
    )
    return render(request, "portal/declaration.html", declaration=declaration, history=history)


async def _pay_page(
    request: Request,
    api: ApiDep,
    lodging_id: str,
    form: dict[str, str],
    errors: dict[str, str],
    status: int = 200,
) -> Response:
    lodging = await _lodging(api, lodging_id)
    this = Period.of(runtime_of(request).today())
    periods = [str(this.add_months(-i)) for i in range(1, 13)]
    return render(
        request,
        "portal/pay.html",
        status,
        lodging=lodging,
        methods=METHODS,
        periods=periods,
        form=form,
        errors=errors,
    )


@router.get("/lodgings/{lodging_id}/pay")
async def pay_form(
    request: Request, lodging_id: str, person: PortalDep, api: ApiDep, period: str | None = None
) -> Response:
    return await _pay_page(request, api, lodging_id, {"period": period or ""}, {})


@router.post("/lodgings/{lodging_id}/pay", dependencies=[CsrfDep])
async def record_payment(
    request: Request,
    lodging_id: str,
    person: PortalDep,
    api: ApiDep,
    amount: Annotated[str, Form()] = "",
    method: Annotated[str, Form()] = "",
    reference: Annotated[str, Form()] = "",
    period: Annotated[str, Form()] = "",
    form_id: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    form = {"amount": amount, "method": method, "reference": reference, "period": period}
    errors: dict[str, str] = {}
    value = dollars(amount)
    if value is None:
        errors["amount"] = _(AMOUNT_HINT)
    if method not in METHODS:
        errors["method"] = _("Choose how you pay.")
    if errors or value is None:
        return await _pay_page(request, api, lodging_id, form, errors, 422)
    lodging = await _lodging(api, lodging_id)
    body: dict[str, Any] = {
        "tax_account": lodging["tax_account"],
        "amount": str(value),
        "method": method,
        "reference": reference.strip() or None,
        "periods": [{"period": period, "amount": str(value)}] if period else [],
    }
    try:
        paid = await api.post("filing", "/v1/payments", body, headers={"Idempotency-Key": "pay-" + form_id})
    except ApiError as exc:
        if exc.status not in (409, 422):
            raise
        fields = exc.field_errors() or {"_form": exc.detail}
        errors = {k.split(".")[0]: _("Not accepted: %(detail)s", detail=v) for k, v in fields.items()}
        return await _pay_page(request, api, lodging_id, form, errors, 422)
    return redirect(f"/portal/payments/{paid['id']}", request)


@router.get("/payments/{payment_id}")
async def payment_page(request: Request, payment_id: str, person: PortalDep, api: ApiDep) -> Response:
    payment = await api.get("filing", f"/v1/payments/{payment_id}")
    return render(request, "portal/payment.html", payment=payment, methods=METHODS)


@router.get("/payments/{payment_id}/receipt.pdf")
async def receipt_pdf(request: Request, payment_id: str, person: PortalDep, api: ApiDep) -> Response:
    return await api.download(
        "filing",
        f"/v1/payments/{payment_id}/receipt",
        params={"format": "pdf"},
        media_type="application/pdf",
        filename=f"receipt-{payment_id}.pdf",
    )


router.include_router(schedules.router)

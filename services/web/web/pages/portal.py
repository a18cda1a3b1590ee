"""The taxpayer portal: an operator's or facilitator's lodgings, filing calendar,
declarations (form built from taxcore's lines, with a preview), payments and receipts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from taxcore.periods import Period, due_date
from web import lines as declaration_lines
from web.backend import ApiError
from web.core import ApiDep, CsrfDep, PortalDep, lang_of, redirect, render
from web.i18n import N_

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


def calendar(lodging: dict[str, Any], declarations: list[dict[str, Any]], today: date) -> list[CalendarRow]:
    """Every month since registration, newest first: filed (on time or late), missing
    (past its due date without a return) or open (not yet due), due dates from taxcore."""
    filed = {d["period"]: d for d in declarations}
    first = Period.of(date.fromisoformat(lodging["registered_on"]))
    last = Period.of(today).prev()
    rows: list[CalendarRow] = []
    period = first
    while period.months_until(last) >= 0:
        due = due_date(lodging["jurisdiction"], period)
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
    payments = await api.get("filing", "/v1/payments", params={"lodging": account, "limit": 100})
    return render(
        request,
        "portal/lodging.html",
        lodging=lodging,
        calendar=calendar(lodging, declarations["items"], date.today()),
        payments=payments["items"],
    )


def _period(raw: str | None, lodging: dict[str, Any]) -> Period:
    try:
        return Period.parse(raw or "")
    except ValueError:
        return Period.of(date.today()).prev()


async def _form_page(
    request: Request,
    api: ApiDep,
    lodging_id: str,
    period_text: str | None,
    form: dict[str, str],
    errors: dict[str, str],
    status: int = 200,
) -> Response:
    lodging = await _lodging(api, lodging_id)
    period = _period(period_text, lodging)
    names = declaration_lines.form_lines(lodging["jurisdiction"], lodging["lodging_class"], period)
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
    names = declaration_lines.form_lines(lodging["jurisdiction"], lodging["lodging_class"], period)
    return form, names, declaration_lines.parse_form(form, names)


@router.post("/lodgings/{lodging_id}/preview", dependencies=[CsrfDep])
async def file_preview(
    request: Request, lodging_id: str, person: PortalDep, api: ApiDep, period: Annotated[str, Form()]
) -> Response:
    """htmx: the computed tax, findings and trace for the figures typed so far."""
    lodging = await _lodging(api, lodging_id)
    p = _period(period, lodging)
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
            today=date.today(),
        )
    return render(request, "portal/_preview.html", preview=result, errors=errors)


@router.post("/lodgings/{lodging_id}/file", dependencies=[CsrfDep])
async def file_declaration(
    request: Request, lodging_id: str, person: PortalDep, api: ApiDep, period: Annotated[str, Form()]
) -> Response:
    lodging = await _lodging(api, lodging_id)
    p = _period(period, lodging)
    form, names, parsed = await _parsed(request, lodging, p)
    _ = lang_of(request).gettext
    errors = {k: _(v) for k, v in parsed.errors.items()}
    if errors:
        return await _form_page(request, api, lodging_id, str(p), form, errors, 422)
    body: dict[str, Any] = {
        "lodging": lodging["tax_account"],
        "period": str(p),
        **{n: str(parsed.amounts.get(n, Decimal(0))) for n in names},
        "room_nights": parsed.room_nights,
        "declared": {"tax": str(parsed.declared_tax)} if parsed.declared_tax is not None else {},
    }
    try:
        filed = await api.post(
            "filing", "/v1/declarations", body, headers={"Idempotency-Key": "file-" + form.get("form_id", "")}
        )
    except ApiError as exc:
        if exc.status not in (409, 422):
            raise
        fields = exc.field_errors() or {"_form": exc.detail}
        errors = {k: _("Not accepted: %(detail)s", detail=v) for k, v in fields.items()}
        return await _form_page(request, api, lodging_id, str(p), form, errors, 422)
    return redirect(f"/portal/declarations/{filed['id']}", request)


@router.get("/declarations/{declaration_id}")
async def declaration_page(request: Request, declaration_id: str, person: PortalDep, api: ApiDep) -> Response:
    declaration = await api.get("filing", f"/v1/declarations/{declaration_id}", params={"explain": "true"})
    return render(request, "portal/declaration.html", declaration=declaration)


async def _pay_page(
    request: Request,
    api: ApiDep,
    lodging_id: str,
    form: dict[str, str],
    errors: dict[str, str],
    status: int = 200,
) -> Response:
    lodging = await _lodging(api, lodging_id)
    periods = [str(Period.of(date.today()).add_months(-i)) for i in range(1, 13)]
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
    value: Decimal | None = None
    try:
        value = Decimal(amount.strip().replace(",", "").removeprefix("$"))
        exponent = value.as_tuple().exponent
        if not isinstance(exponent, int) or exponent < -2 or not Decimal(0) < value < Decimal("1e14"):
            raise InvalidOperation
    except InvalidOperation:
        errors["amount"] = _("Enter an amount in dollars and cents, like 1234.50.")
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
    r = await api.raw("GET", "filing", f"/v1/payments/{payment_id}/receipt", params={"format": "pdf"})
    return Response(
        r.content,
        media_type="application/pdf",
        headers={"Content-Disposition": f'attachment; filename="receipt-{payment_id}.pdf"'},
    )

"""An online intermediary's remittance schedules: upload a CSV for a period, see each row
accepted or rejected (the reason per field, in the person's language), download the
rejected rows, list past schedules.

Everything goes through filing's ``/v1/remittance-schedules`` with the person's token:
filing decides which lodgings authorized the facilitator and shows a facilitator only its
own schedules (another's is the API's 404, shown as the same page not found).
"""

from __future__ import annotations

import csv
import io
from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import Response

from servicekit.problems_i18n import spanish
from servicekit.runtime import runtime_of
from taxcore.periods import Period
from web.backend import ApiError
from web.core import Api, ApiDep, CsrfDep, PersonDep, WrongRole, lang_of, redirect, render
from web.forms import AMOUNT_HINT
from web.i18n import N_, Lang
from web.lines import LABELS
from web.session import Person

#: included by ``web.pages.portal`` under ``/portal``
router = APIRouter(prefix="/schedules")
#: what filing accepts in one upload (its body limit is larger; a person's file is far smaller)
MAX_BYTES = 8 * 1024 * 1024
MONTHS_BACK = 24

#: filing's codes for a row's reason (``errors[].code``) as a person reads them
ROW_REASONS: dict[str, str] = {
    "not_authorized": N_("No lodging with this tax account has authorized you to file for it."),
    "not_authorized_for_period": N_("This lodging has not authorized you for this period."),
    "duplicate_lodging": N_("This lodging is already on an earlier row of this schedule."),
    "period_not_fileable": N_("This lodging cannot file for this period (not over yet, or not registered)."),
    "not_computable": N_("The tax cannot be computed from this row's figures."),
    "not_an_object": N_("This row cannot be read."),
    "missing": N_("This value is required."),
    "int_parsing": N_("Enter a whole number."),
    "int_from_float": N_("Enter a whole number."),
    "greater_than_equal": N_("Enter zero or more."),
    "bool_parsing": N_("Enter true or false."),
    "string_too_long": N_("This value is too long."),
    "value_error": N_("This value is not valid."),
}
#: the row's columns other than the money lines (those are ``web.lines.LABELS``)
COLUMN_LABELS: dict[str, str] = {
    "tax_account": N_("Tax account"),
    "period": N_("Period"),
    "room_nights": N_("Room nights sold"),
    "timeshare_owner_unit_days": N_("Timeshare owner unit-days"),
    "tax_itemized": N_("Tax itemized on the bill"),
    "exemption": N_("Exemption"),
    "exempt_amount": N_("Exempt amount"),
    "exemption_evidence": N_("Exemption evidence"),
    "declared_taxable_base": N_("Taxable base you computed"),
    "declared_tax": N_("Tax you computed (optional)"),
    "declared_impact_fee": N_("Impact fee you computed"),
    "declared_total": N_("Total you computed"),
}
ROW = N_("Row")
MONEY_COLUMNS = {*LABELS, "exempt_amount", *(c for c in COLUMN_LABELS if c.startswith("declared_"))}


async def facilitator_person(person: PersonDep) -> Person:
    if person.role != "facilitator":
        raise WrongRole()
    return person


FacilitatorDep = Annotated[Person, Depends(facilitator_person)]


def column_label(lang: Lang, field: str | None) -> str:
    if not field:
        return lang.gettext(ROW)
    message = LABELS.get(field) or COLUMN_LABELS.get(field)
    return lang.gettext(message) if message else field


def reason_text(lang: Lang, error: dict[str, Any]) -> str:
    """A rejected row's reason: English as filing wrote it (with its values); in Spanish by
    its code (an amount's format has its own hint), else through the problems catalog."""
    reason = str(error.get("reason", ""))
    if lang.code == "en":
        return reason
    code = error.get("code")
    if code == "value_error" and error.get("field") in MONEY_COLUMNS:
        return lang.gettext(AMOUNT_HINT)
    if isinstance(code, str) and code in ROW_REASONS:
        return lang.gettext(ROW_REASONS[code])
    return spanish(reason)


def periods(today: date) -> list[str]:
    last = Period.of(today).prev()
    return [str(last.add_months(-i)) for i in range(MONTHS_BACK)]


async def _list_page(
    request: Request,
    api: Api,
    *,
    form: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    found = await api.get("filing", "/v1/remittance-schedules", params={"limit": 100})
    choices = periods(runtime_of(request).today())
    return render(
        request,
        "portal/schedules.html",
        status,
        schedules=found["items"],
        periods=choices,
        form=form or {"period": choices[0]},
        errors=errors or {},
    )


@router.get("")
async def schedules(request: Request, person: FacilitatorDep, api: ApiDep) -> Response:
    return await _list_page(request, api)


def _check_document(lang: Lang, raw: bytes) -> str | None:
    """What is wrong with the file before filing sees it (nothing is sent then), or None."""
    _ = lang.gettext
    if not raw.strip():
        return _("Choose a CSV file with a header row and one row per lodging.")
    if len(raw) > MAX_BYTES:
        return _("The file is larger than 8 MB: split it into smaller schedules.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return _("The file is not UTF-8 text: save it as CSV (UTF-8).")
    header = [h.strip() for h in next(csv.reader(io.StringIO(text)), [])]
    if "tax_account" not in header:
        return _("The first row must name the columns, tax_account among them.")
    if len(text.strip().splitlines()) < 2:
        return _("The file has a header but no rows.")
    return None


@router.post("", dependencies=[CsrfDep])
async def upload(
    request: Request,
    person: FacilitatorDep,
    api: ApiDep,
    period: Annotated[str, Form()] = "",
    file: Annotated[UploadFile | None, File()] = None,
) -> Response:
    """Upload the CSV; a bad file or period is shown next to its field and nothing is filed."""
    lang = lang_of(request)
    _ = lang.gettext
    form = {"period": period}
    errors: dict[str, str] = {}
    if period not in periods(runtime_of(request).today()):
        errors["period"] = _("Choose the month the schedule declares.")
    raw = await file.read(MAX_BYTES + 1) if file is not None else b""
    problem = _check_document(lang, raw)
    if problem:
        errors["file"] = problem
    if errors:
        return await _list_page(request, api, form=form, errors=errors, status=422)
    name = (file.filename if file is not None else None) or "schedule.csv"
    try:
        sent = await api.raw(
            "POST",
            "filing",
            "/v1/remittance-schedules",
            data={"period": period},
            files={"file": (name, raw, "text/csv")},
        )
        filed = sent.json()
    except ApiError as exc:
        if exc.status not in (413, 422):
            raise
        fields = exc.field_errors() or {"_form": exc.detail}
        placed = {"csv": "file", "rows": "file", "body": "file", "period": "period"}
        not_accepted = _("Not accepted: %(detail)s")
        errors = {placed.get(k, "_form"): not_accepted % {"detail": v} for k, v in fields.items()}
        return await _list_page(request, api, form=form, errors=errors, status=422)
    return redirect(f"/portal/schedules/{filed['id']}", request)


@router.get("/{schedule_id}")
async def schedule_page(request: Request, schedule_id: str, person: FacilitatorDep, api: ApiDep) -> Response:
    found = await api.get("filing", f"/v1/remittance-schedules/{schedule_id}")
    lang = lang_of(request)
    rows = [
        {
            **r,
            "reasons": [(column_label(lang, e.get("field")), reason_text(lang, e)) for e in r["errors"]],
        }
        for r in found["results"]
    ]
    return render(request, "portal/schedule.html", schedule=found, rows=rows)


@router.get("/{schedule_id}/rejected.csv")
async def rejected_csv(request: Request, schedule_id: str, person: FacilitatorDep, api: ApiDep) -> Response:
    """The rejected rows, one line per reason, in the person's language (to correct and resend)."""
    found = await api.get("filing", f"/v1/remittance-schedules/{schedule_id}")
    lang = lang_of(request)
    _ = lang.gettext
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["row", "tax_account", "field", "code", _("Reason")])
    for r in found["results"]:
        if r["status"] != "rejected":
            continue
        for e in r.get("errors") or [{}]:
            account, field, code = r.get("tax_account"), e.get("field"), e.get("code")
            writer.writerow([r["row"], account or "", field or "", code or "", reason_text(lang, e)])
    disposition = f'attachment; filename="schedule-{schedule_id}-rejected.csv"'
    return Response(
        out.getvalue().encode("utf-8-sig"),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": disposition},
    )

from __future__ import annotations

import csv
import io
import json
from datetime import date
from typing import Annotated, Any

from fastapi import Query, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from filing.declarations.schemas import PeriodStr
from filing.declarations.service import received_date
from filing.deps import SettingsDep
from filing.lodging_periods import parse_period
from filing.models import RemittanceSchedule
from filing.schedules import repository, service
from filing.schedules.schemas import ROW_COLUMNS, ROWS_MAX, ScheduleCreate, ScheduleOut, ScheduleSummary
from servicekit.app import router as make_router
from servicekit.auth import Principal, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import Forbidden, NotFound, ValidationFailed
from servicekit.pagination import CursorQuery, LimitQuery, Page, decode_int_cursor, paginate
from servicekit.runtime import RuntimeDep
from taxcore.periods import filing_opens_on

router = make_router(prefix="/v1/remittance-schedules", tags=["remittance schedules"])
ERRORS = {**NotFound.openapi(), **ValidationFailed.openapi(), **Forbidden.openapi()}

_REQUEST_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": ScheduleCreate.model_json_schema()},
            "text/csv": {
                "schema": {"type": "string"},
                "example": "tax_account,room_revenue,room_nights,declared_tax\n"
                "PR-0000001-8,1000.00,5,90.00\n",
            },
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "the CSV"},
                        "period": {"type": "string", "pattern": r"^\d{4}-\d{2}$"},
                        "facilitator_id": {"type": "string", "maxLength": 100},
                        "received_on": {"type": "string", "format": "date"},
                    },
                }
            },
        },
    }
}


def parse_csv(text: str) -> list[dict[str, Any]]:
    """Rows of a CSV schedule: the header names the columns, empty cells are left out."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if "tax_account" not in header:
        raise ValidationFailed.on("csv", "the header must name the columns, tax_account among them")
    unknown = sorted(set(header) - set(ROW_COLUMNS))
    if unknown:
        raise ValidationFailed.on("csv", f"unknown columns {unknown}; known: {list(ROW_COLUMNS)}")
    reader.fieldnames = header
    rows: list[dict[str, Any]] = []
    for record in reader:
        row: dict[str, Any] = {k: v.strip() for k, v in record.items() if k and v is not None and v.strip()}
        if record.get(None):
            row["extra_cells"] = record[None]
        rows.append(row)
    return rows


def _csv_text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationFailed.on("csv", "must be UTF-8 text") from exc


async def _document(request: Request, query: dict[str, str | None]) -> tuple[str, dict[str, Any], list[Any]]:
    """(format, envelope fields, rows) from a JSON, text/csv or multipart body."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in ("text/csv", "application/csv"):
        return "csv", query, parse_csv(_csv_text(await request.body()))
    if content_type == "multipart/form-data":
        form = await request.form()
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise ValidationFailed.on("file", "attach the CSV as the multipart field 'file'")
        fields = {k: (str(form[k]) if k in form else query.get(k)) for k in query}
        return "csv", fields, parse_csv(_csv_text(await upload.read()))
    if content_type in ("application/json", ""):
        try:
            raw = json.loads(await request.body())
        except ValueError as exc:
            raise ValidationFailed.on("body", "not valid JSON") from exc
        rows = raw.get("rows") if isinstance(raw, dict) else None
        # the rows as parsed (each validated on its own later), not a validated copy of them:
        # the envelope is validated without them, unless they are not a list of objects
        plain = isinstance(rows, list) and len(rows) <= ROWS_MAX and all(isinstance(r, dict) for r in rows)
        try:
            body = ScheduleCreate.model_validate({**raw, "rows": []} if plain else raw)
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
            ) from exc
        return (
            "json",
            body.model_dump(exclude={"rows"}),
            rows if plain and isinstance(rows, list) else body.rows,
        )
    raise ValidationFailed.on(
        "content-type", "send application/json, text/csv or multipart/form-data", root="header"
    )


def _facilitator(principal: Principal, given: str | None) -> str:
    if principal.role == "facilitator":
        if given and given != principal.facilitator_id:
            raise Forbidden("a facilitator files its own schedules")
        return principal.facilitator_id or ""
    if principal.can_write_all:
        if not given:
            raise ValidationFailed.on(
                "facilitator_id", "the agency files a schedule for a facilitator: say which"
            )
        return given
    raise Forbidden("only online intermediaries (facilitators) and the agency file remittance schedules")


def _summary(s: RemittanceSchedule) -> dict[str, Any]:
    return {
        "id": s.id,
        "facilitator_id": s.facilitator_id,
        "period": s.period,
        "received_on": s.received_on,
        "source_format": s.source_format,
        "status": service.status_of(s),
        "rows": s.rows_total,
        "accepted": s.accepted,
        "rejected": s.rejected,
        "submitted_by": s.submitted_by,
        "created_at": s.created_at,
    }


def to_out(s: RemittanceSchedule) -> ScheduleOut:
    return ScheduleOut.model_validate({**_summary(s), "results": s.results})


@router.get(
    "",
    response_model=Page[ScheduleSummary],
    responses={**Forbidden.openapi(), **ValidationFailed.openapi()},
    summary="Remittance schedules, newest first: a facilitator's own, or (the agency) anyone's",
)
async def list_schedules(
    session: SessionDep,
    principal: PrincipalDep,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
    period: Annotated[PeriodStr | None, Query(description="only this period")] = None,
    facilitator_id: Annotated[str | None, Query(max_length=100, description="agency only")] = None,
) -> Page[ScheduleSummary]:
    if principal.role == "facilitator":
        if facilitator_id and facilitator_id != principal.facilitator_id:
            return Page[ScheduleSummary](items=[])
        facilitator_id = principal.facilitator_id or ""
    elif not principal.is_agency:
        raise Forbidden("remittance schedules are an online intermediary's (facilitator's) documents")
    before = decode_int_cursor(cursor)
    rows = await repository.list_page(
        session,
        facilitator_id=facilitator_id,
        period=period,
        before=before,
        limit=limit,
    )
    return paginate(
        rows,
        limit=limit,
        key=lambda s: [s.seq],
        to_item=lambda s: ScheduleSummary.model_validate(_summary(s)),
    )


_NO_RESULTS = b'"results":[]'


def created(accepted: service.Accepted) -> Response:
    """The 201 of a schedule just accepted, the same JSON as :func:`to_out` gives: the
    envelope through ``ScheduleOut``, the per-row results (built by the service with every
    ``RowResult`` field, in order) written as the JSON the service stored, not as 50,000
    validated models."""
    s = accepted.schedule
    envelope = ScheduleOut.model_validate({**_summary(s), "results": []}).model_dump_json().encode()
    body = envelope.replace(_NO_RESULTS, b'"results":' + accepted.results_json, 1)
    return Response(content=body, status_code=201, media_type="application/json")


@router.post(
    "",
    status_code=201,
    response_model=ScheduleOut,
    responses=ERRORS,
    openapi_extra=_REQUEST_BODY,
    summary="File a remittance schedule: many lodgings, one period (JSON or CSV); rows accepted one by one",
    operation_id="remittance_schedules.upload",
    description=(
        "A facilitator's (or the agency's) schedule of many lodgings for one period, as JSON or "
        "as `text/csv` with `?period=`. Each row is accepted or rejected on its own (the response "
        "lists rejected rows with their line and reason); accepted rows become declarations. "
        "The body may reach the service's upload limit (413 above it): split larger files "
        "(the `roomtax schedule upload` CLI does)."
    ),
)
async def file_schedule(
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    runtime: RuntimeDep,
    period: Annotated[PeriodStr | None, Query(description="CSV form: the period")] = None,
    facilitator_id: Annotated[str | None, Query(description="CSV form, agency-admin only")] = None,
    received_on: Annotated[date | None, Query(description="CSV form, agency-admin only")] = None,
) -> Response:

    query = {
        "period": period,
        "facilitator_id": facilitator_id,
        "received_on": received_on.isoformat() if received_on else None,
    }
    source_format, fields, rows = await _document(request, query)
    facilitator = _facilitator(principal, fields.get("facilitator_id"))
    if not fields.get("period"):
        raise ValidationFailed.on("period", "the schedule's period (YYYY-MM) is required")
    parsed_period = parse_period(str(fields["period"]))
    today = runtime.today()
    given = fields.get("received_on")
    try:
        received = date.fromisoformat(given) if isinstance(given, str) else given
    except ValueError as exc:
        raise ValidationFailed.on("received_on", "expected YYYY-MM-DD") from exc
    filed_on = received_date(principal, received, today)
    opens = filing_opens_on(parsed_period)  # a schedule declares a whole, finished month
    if filed_on < opens:
        raise ValidationFailed.on(
            "period",
            f"{parsed_period} can be filed from {opens.isoformat()}, once the period is over "
            f"(received {filed_on.isoformat()})",
        )
    if not rows:
        raise ValidationFailed.on("rows", "the schedule has no rows")
    if len(rows) > settings.schedule_max_rows:
        raise ValidationFailed.on("rows", f"at most {settings.schedule_max_rows} rows per schedule")
    schedule = await service.accept_schedule(
        session,
        principal=principal,
        facilitator_id=facilitator,
        period=parsed_period,
        received_on=filed_on,
        rows=rows,
        source_format=source_format,
        today=today,
        parameters=runtime.law,
    )
    return created(schedule)


@router.get("/{schedule_id}", response_model=ScheduleOut, responses=NotFound.openapi())
async def read_schedule(schedule_id: str, session: SessionDep, principal: PrincipalDep) -> ScheduleOut:
    schedule = await session.get(RemittanceSchedule, schedule_id)
    visible = schedule is not None and (
        principal.is_agency
        or (principal.role == "facilitator" and principal.facilitator_id == schedule.facilitator_id)
    )
    if schedule is None or not visible:
        raise NotFound(f"no remittance schedule {schedule_id!r}")
    return to_out(schedule)

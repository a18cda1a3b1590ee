"""Declaration use-cases: file, amend, and what a lodging-period's filers covered.

A lodging-period may have several filings, one per filer: the operator, and each
facilitator that remits for part of the bookings. Each filing is a chain of
versions; an amendment is a new version superseding the latest one. Nothing is
updated in place.
"""

from __future__ import annotations

import contextlib
import operator
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import asyncpg
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from filing.declarations import repository
from filing.declarations.compute import Recomputed, recompute
from filing.declarations.schemas import (
    DeclarationAmend,
    DeclarationCreate,
    DeclaredFigures,
    Filer,
    json_values,
)
from filing.ids import random_ids
from filing.lodging_periods import filing_id
from filing.models import AnyLodging, Declaration
from servicekit.auth import Principal
from servicekit.errors import Conflict, DomainError, Forbidden, NotFound, ValidationFailed
from servicekit.outbox import OutboxEvent, emit_many
from taxcore import obligations
from taxcore.events import filing as ev
from taxcore.events import registry as registry_events
from taxcore.money import fmt, parse_money
from taxcore.parameters import ParameterTree
from taxcore.periods import Period, due_date


def period_problem(lodging: AnyLodging, period: Period, filed_on: date) -> str | None:
    """Why ``lodging`` cannot file for ``period`` on ``filed_on`` (the day the return is
    received: today, or a paper return's day), or None.

    A return is filed from the day after the period's last day, or from the closing
    date of a lodging that closed during the period (``taxcore.obligations.may_file_on``).
    """
    history = registry_events.status_history(lodging)  # parsed once for both questions
    opens = obligations.may_file_on(history, period)
    if filed_on < opens:
        return (
            f"{period} can be filed from {opens.isoformat()}, once the period is over "
            f"(received {filed_on.isoformat()})"
        )
    if period.last_day < lodging.registered_on:
        return f"{period} is before the lodging's registration on {lodging.registered_on.isoformat()}"
    if obligations.statuses_during(history, period, registered_on=lodging.registered_on) == {"closed"}:
        return f"the lodging was closed for all of {period}"
    return None


def check_period(lodging: AnyLodging, period: Period, filed_on: date) -> None:
    problem = period_problem(lodging, period, filed_on)
    if problem is not None:
        raise ValidationFailed.on("period", problem)


def received_date(principal: Principal, received_on: date | None, today: date) -> date:
    """The day the agency received the return: today, or a paper return's day (agency only)."""
    if received_on is None:
        return today
    if not principal.can_write_all:
        raise Forbidden(
            "only the agency records the day a paper return was received",
            errors=[{"pointer": "#/body/received_on", "detail": "agency-admin only"}],
        )
    if received_on > today:
        raise ValidationFailed.on("received_on", "is in the future")
    return received_on


def claimed_filer(principal: Principal, filer: Filer | None) -> Filer:
    """Who files: the caller (operator or facilitator), or for the agency the filer it names."""
    if principal.role == "agency-admin":
        if filer is None:
            raise ValidationFailed.on(
                "filer", "the agency files on behalf of an operator or facilitator: say which"
            )
        return filer
    if filer is not None:
        raise Forbidden(
            "only the agency files on behalf of another filer",
            errors=[{"pointer": "#/body/filer", "detail": "agency-admin only"}],
        )
    if principal.role == "operator":
        return Filer(kind="operator", id=principal.operator_id or "")
    if principal.role == "facilitator":
        return Filer(kind="facilitator", id=principal.facilitator_id or "")
    raise Forbidden(f"role {principal.role!r} may not file declarations")


def check_filer(chosen: Filer, context: repository.FilingContext, period: Period) -> None:
    """The operator filer is the lodging's; a facilitator is authorized by the lodging for
    (part of) the period (one the lodging never authorized does not get here: the lodging
    is a 404 to it)."""
    if chosen.kind == "operator" and chosen.id != context.lodging.operator_id:
        raise ValidationFailed.on("filer.id", "is not the lodging's operator")
    if chosen.kind == "facilitator" and not context.authorized:
        raise Forbidden(
            f"the facilitator is not authorized by this lodging for {period}",
            errors=[{"pointer": "#/body/period", "detail": "outside the facilitator's authorization"}],
        )


@dataclass(frozen=True, slots=True)
class NewVersion:
    row: dict[str, Any]
    event: OutboxEvent


@dataclass(frozen=True, slots=True)
class Stored:
    """A new version as stored: its row (with the server's ``seq`` and ``created_at``; a
    ``Declaration`` of it is ``repository.loaded(Declaration, row)``) and its event's payload
    (:func:`event_data`: the amounts and findings already written as JSON, which the 201
    takes from it rather than formatting them again)."""

    row: dict[str, Any]
    event_data: dict[str, Any]


def declaration_of(stored: Stored) -> Declaration:
    """The stored version as an (unattached) ``Declaration``, for a route's response model."""
    return repository.loaded(Declaration, stored.row)


def declaration_row(
    *,
    lodging: AnyLodging,
    period: Period,
    rec: Recomputed,
    declared: DeclaredFigures,
    filer: Filer,
    fid: str,
    previous: tuple[str, int] | None,
    filed_on: date,
    due: date,
    submitted_by: str,
    schedule_id: str | None,
    schedule_row: int | None,
    declaration_id: str,
) -> dict[str, Any]:
    """A new version's declaration row, column by column (the one return's and a schedule
    row's alike); its ``trace`` is taxcore's ``Trace`` as computed (the caller renders it)."""
    r = rec.result
    inp = rec.input
    return {
        "id": declaration_id,
        "filing_id": fid,
        "version": 1 if previous is None else previous[1] + 1,
        "supersedes": None if previous is None else previous[0],
        "lodging_id": lodging.lodging_id,
        "tax_account": lodging.tax_account,
        "jurisdiction": lodging.jurisdiction,
        "lodging_class": inp.lodging_class,
        "casino": inp.casino,
        "period": str(period),
        "filer_kind": filer.kind,
        "filer_id": filer.id,
        "schedule_id": schedule_id,
        "schedule_row": schedule_row,
        "filed_on": filed_on,
        "due_date": due,
        "late": filed_on > due,
        "flagged": bool(rec.findings),
        "books_kept": inp.books_kept,
        "submitted": rec.submitted,
        "input": json_values(inp),
        "gross_receipts": r.gross_receipts,
        "exempt_total": r.exempt_total,
        "taxable_base": r.taxable_base,
        "rate": r.rate,
        "tax": r.tax,
        "impact_fee": r.impact_fee,
        "total_due": r.total_due,
        "declared_taxable_base": declared.taxable_base,
        "declared_tax": declared.tax,
        "declared_impact_fee": declared.impact_fee,
        "declared_total": declared.total,
        "declared_line_total": declared.line_total,
        "findings": rec.findings,
        "trace": r.trace,
        "submitted_by": submitted_by,
    }


#: the event contract's fields, each taken from the declaration row's column of that name
_EVENT_FIELDS: tuple[str, ...] = tuple(f for f in ev.DeclarationFiled.model_fields if f != "declaration_id")
_EVENT_MONEY = frozenset({"taxable_base", "tax", "impact_fee", "total_due", "declared_tax", "declared_total"})
_EVENT_DATES = frozenset({"filed_on", "due_date"})
#: the row's values of the payload's fields, in their order (``declaration_id`` is ``id``)
_EVENT_VALUES = operator.itemgetter("id", *_EVENT_FIELDS)
_EVENT_KEYS = ("declaration_id", *_EVENT_FIELDS)
_EVENT_MONEY_KEYS = tuple(f for f in _EVENT_FIELDS if f in _EVENT_MONEY)
_EVENT_DATE_KEYS = tuple(f for f in _EVENT_FIELDS if f in _EVENT_DATES)
#: a signed amount already as ``fmt`` writes it (two decimals, no leading zero, never "-0.00"
#: -- excluded by the caller): written as it is, not parsed and formatted again
_FORMATTED = re.compile(r"-?(?:0|[1-9][0-9]{0,15})\.[0-9]{2}").fullmatch


def _finding_amount(value: Any) -> str | None:
    if value is None:
        return None
    if type(value) is str and value != "-0.00" and _FORMATTED(value):
        return value
    return fmt(parse_money(value, signed=True))


def finding_json(f: dict[str, Any]) -> dict[str, Any]:
    """A finding as the contracts write it (``Finding`` of the event, ``FindingOut`` of the
    API): its amounts as ``SignedMoney``, two decimals (taxcore's dump gives ``str`` of the
    Decimal: ``"0"`` for a zero sum; one already so is kept)."""
    return {
        "code": f["code"],
        "line": f["line"],
        "message": f["message"],
        "declared": _finding_amount(f.get("declared")),
        "computed": _finding_amount(f.get("computed")),
        "section": f["section"],
    }


def event_data(row: dict[str, Any]) -> dict[str, Any]:
    """The declaration's event payload (``DeclarationFiled``/``Amended``) as JSON values, taken
    from its row (:func:`declaration_row`): what ``model_dump(mode="json")`` of the contract
    gives, in its fields' order, without validating our own figures again
    (``test_response_bytes`` pins the one return's, ``test_schedule_results`` a schedule's).
    The row's values are taken in one pass, then the amounts, dates and findings written over
    (a key written again keeps its place)."""
    data: dict[str, Any] = dict(zip(_EVENT_KEYS, _EVENT_VALUES(row), strict=True))
    for name in _EVENT_MONEY_KEYS:
        value = data[name]
        if value is not None:
            data[name] = fmt(value)
    for name in _EVENT_DATE_KEYS:
        data[name] = data[name].isoformat()
    data["findings"] = [finding_json(f) for f in data["findings"]]
    return data


def declaration_event(row: dict[str, Any], *, event_id: str | None = None) -> OutboxEvent:
    """The outbox event of a new version's row: filed, or amended when it supersedes one
    (``event_id``: a random id the caller drew, else the outbox draws one)."""
    contract = ev.DeclarationAmended if row["supersedes"] is not None else ev.DeclarationFiled
    return OutboxEvent(
        contract.event_type, row["tax_account"], event_data(row), topic=contract.topic, event_id=event_id
    )


def new_version(
    *,
    lodging: AnyLodging,
    period: Period,
    rec: Recomputed,
    declared: DeclaredFigures,
    filer: Filer,
    previous: tuple[str, int] | None,
    filed_on: date,
    due: date,
    submitted_by: str,
    schedule_id: str | None = None,
    schedule_row: int | None = None,
    declaration_id: str,
    event_id: str | None = None,
) -> NewVersion:
    """The declaration row and its event (filed, or amended when it supersedes a version;
    ``event_id``: drawn by the caller, else by the outbox)."""
    row = declaration_row(
        lodging=lodging,
        period=period,
        rec=rec,
        declared=declared,
        filer=filer,
        fid=filing_id(lodging.lodging_id, period, filer.kind, filer.id),
        previous=previous,
        filed_on=filed_on,
        due=due,
        submitted_by=submitted_by,
        schedule_id=schedule_id,
        schedule_row=schedule_row,
        declaration_id=declaration_id,
    )
    row["trace"] = rec.result.trace.to_list()
    return NewVersion(row=row, event=declaration_event(row, event_id=event_id))


@contextlib.contextmanager
def _concurrent_versions() -> Iterator[None]:
    """Two versions of one filing inserted at once: the later one is a 409 to retry."""
    try:
        yield
    except (IntegrityError, asyncpg.UniqueViolationError) as exc:
        if "uq_declarations_filing_id" in str(exc):
            raise Conflict("another version of this filing was filed at the same time; retry") from exc
        raise


#: for a caller writing versions its own way (a remittance schedule's COPY): the same 409
concurrent_versions = _concurrent_versions


async def store(session: AsyncSession, *, versions: Sequence[NewVersion]) -> None:
    """Insert the versions and queue their events in the caller's transaction."""
    with _concurrent_versions():
        await repository.insert_many(session, [v.row for v in versions])
    await emit_many(session, [v.event for v in versions])


async def store_one(conn: asyncpg.Connection, *, service: str, version: NewVersion) -> Stored:
    """Insert one version (returned as stored) and queue its event, in one statement (on its
    own, or in the connection's transaction)."""
    with _concurrent_versions():
        row = await repository.insert_one(conn, version.row, version.event, service=service)
    data = version.event.data
    assert isinstance(data, dict)  # event_data's
    return Stored(row=row, event_data=data)


async def file_declaration(
    conn: asyncpg.Connection,
    *,
    service: str,
    principal: Principal,
    lodging: str,
    body: DeclarationCreate | DeclarationAmend,
    period: Period,
    filer: Filer | None,
    amends: Declaration | None = None,
    today: date,
    parameters: ParameterTree,
) -> Stored:
    """File a return for ``lodging`` (tax account or id; a 404 unless the caller sees it, or
    the lodging of ``amends``) or the next version of the filer's filing for the
    lodging-period. Two statements on ``conn`` (``repository.driver`` of the request's
    session, or a direct route's pool connection): the lodging with its lookups, a read;
    the row with its event, the one write (``service``'s event)."""
    try:
        chosen: Filer | None = claimed_filer(principal, filer)
        refused: DomainError | None = None
    except DomainError as exc:  # raised after the 404 and the period's checks, as before
        chosen, refused = None, exc
    context = await repository.filing_context(
        conn,
        ref=lodging,
        period=period,
        filer_kind=None if chosen is None else chosen.kind,
        filer_id=None if chosen is None else chosen.id,
        visible_to=None if amends is not None else principal,
    )
    if context is None:
        if amends is not None:  # pragma: no cover - the projection never drops a lodging
            raise NotFound("the lodging of this declaration is unknown")
        raise NotFound(f"no lodging {lodging!r}")
    filed_on = received_date(principal, body.received_on, today)
    check_period(context.lodging, period, filed_on)
    if refused is not None or chosen is None:
        raise refused or Forbidden("no filer")
    check_filer(chosen, context, period)
    latest = context.latest
    rec = recompute(
        lodging=context.lodging,
        period=period,
        lines=body,
        declared=body.declared,
        certificates=context.certificates,
        parameters=parameters,
        today=today,
    )
    if amends is not None and (latest is None or latest[0] != amends.id):
        raise Conflict(
            f"declaration {amends.id} is not the latest version of its filing"
            + (f"; amend {latest[0]} (version {latest[1]})" if latest else "")
        )
    declaration_id, event_id = random_ids(2)  # uuid4's, from one os.urandom
    version = new_version(
        lodging=context.lodging,
        period=period,
        rec=rec,
        declared=body.declared,
        filer=chosen,
        previous=latest,
        filed_on=filed_on,
        due=due_date(context.lodging.jurisdiction, period, parameters=parameters),
        submitted_by=principal.client_id,
        declaration_id=declaration_id,
        event_id=event_id,
    )
    return await store_one(conn, service=service, version=version)


async def amend(
    conn: asyncpg.Connection,
    *,
    service: str,
    principal: Principal,
    original: Declaration,
    body: DeclarationAmend,
    today: date,
    parameters: ParameterTree,
) -> Stored:
    """A new version of ``original``'s filing; only its filer (or the agency) amends it."""
    own = (original.filer_kind == "operator" and principal.operator_id == original.filer_id) or (
        original.filer_kind == "facilitator" and principal.facilitator_id == original.filer_id
    )
    if not (own or principal.can_write_all):
        raise Forbidden("only the filer of a declaration (or the agency) amends it")
    filer = Filer(kind=original.filer_kind, id=original.filer_id)
    as_agency = principal.can_write_all
    return await file_declaration(
        conn,
        service=service,
        principal=principal,
        lodging=original.lodging_id,
        body=body,
        period=Period.parse(original.period),
        filer=filer if as_agency else None,
        amends=original,
        today=today,
        parameters=parameters,
    )

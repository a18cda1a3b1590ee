"""Audit use-cases (PR §2(4), §3(E), §9, §10, §32; VI §54(d)): scope, records request, findings,
the proposed assessment computed by taxcore, the notice of audit assessment, closure.

Every step is a new row; the audit's state is read from its steps. The assessment itself is a new
version of the operator's declaration filed by the agency at the filing service (the notice lists
each amendment, ready to post to ``/v1/declarations/{id}/amendments``), so every computation —
tax, penalties, interest, notices, disputes — applies to it as to any return.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from assessment import law as statutes
from assessment.accounts.repository import lock_account
from assessment.audits import repository
from assessment.audits.models import Audit, AuditStep
from assessment.audits.schemas import (
    AuditClose,
    AuditCreate,
    AuditFindingCreate,
    CorrectedLines,
    RecordsRequestCreate,
)
from assessment.casework.events import event_id
from assessment.casework.schemas import Happened
from assessment.models import Liability, LodgingView
from servicekit.auth import Principal
from servicekit.errors import Conflict, Forbidden, NotFound, ValidationFailed, field_pointer
from servicekit.outbox import emit
from taxcore.events import registry as registry_events
from taxcore.events.compliance import AuditStepRecorded
from taxcore.money import ZERO, fmt
from taxcore.parameters import ParameterTree
from taxcore.periods import Period
from taxcore.rules.audit import AuditDifference, audit_difference
from taxcore.rules.declaration import DeclarationInput, compute_allowed


@dataclass(frozen=True, slots=True)
class AuditView:
    audit: Audit
    steps: list[AuditStep]

    @property
    def closed(self) -> AuditStep | None:
        return next((s for s in self.steps if s.kind == "closed"), None)

    @property
    def notice(self) -> AuditStep | None:
        return next((s for s in reversed(self.steps) if s.kind == "notice"), None)

    @property
    def records_request(self) -> AuditStep | None:
        return next((s for s in reversed(self.steps) if s.kind == "records_requested"), None)

    def findings(self) -> dict[str, AuditStep]:
        """The latest finding of each period (a later finding corrects an earlier one)."""
        return {s.period: s for s in self.steps if s.kind == "finding" and s.period}

    @property
    def status(self) -> Literal["open", "records_requested", "findings_recorded", "notice_issued", "closed"]:
        if self.closed:
            return "closed"
        if self.notice:
            return "notice_issued"
        if self.findings():
            return "findings_recorded"
        return "records_requested" if self.records_request else "open"


def require_auditor(principal: Principal, what: str) -> None:
    if not principal.can_write_all:
        raise Forbidden(f"only agency-admin staff {what}")


async def view(session: AsyncSession, *, audit: Audit) -> AuditView:
    return AuditView(audit, (await repository.steps_of(session, [audit.id]))[audit.id])


async def open_audit(
    session: AsyncSession, *, principal: Principal, body: AuditCreate, today: date, law: ParameterTree
) -> Audit:
    """Open an audit of a lodging for some periods; periods already under an open audit are a 409."""
    require_auditor(principal, "open audits")
    lodging = await session.get(LodgingView, body.tax_account)
    if lodging is None:
        raise ValidationFailed.on("tax_account", f"no lodging {body.tax_account!r}")
    for i, p in enumerate(body.periods):
        if Period.parse(p).first_day > today:
            raise ValidationFailed.on(f"periods[{i}]", f"{p} has not started; an audit examines past periods")
        if body.periods.index(p) != i:
            raise ValidationFailed.on(f"periods[{i}]", f"{p} is listed twice")
    await lock_account(session, body.tax_account)
    for other in await repository.open_audits(session, body.tax_account):
        overlap = [i for i, p in enumerate(body.periods) if p in other.periods]
        if overlap:
            i = overlap[0]
            raise Conflict(
                f"{body.periods[i]} is already under audit {other.id}",
                errors=[
                    {
                        "pointer": field_pointer(f"periods[{i}]"),
                        "detail": f"already under open audit {other.id}",
                    }
                ],
            )
    audit = Audit(
        tax_account=body.tax_account,
        jurisdiction=lodging.jurisdiction,
        periods=sorted(body.periods),
        reason=body.reason,
        source=body.source,
        opened_on=today,
        opened_by=principal.actor,
        section=str(law.value(lodging.jurisdiction, "audits.section", today)),
    )
    session.add(audit)
    await session.flush()
    await _emit(session, audit, step_id=audit.id, step="opened", on=today, by=principal.actor)
    return audit


async def _emit(session: AsyncSession, audit: Audit, *, step_id: str, **fields: Any) -> None:
    """The audit step's event, in the step's transaction (its id is the step row's)."""
    event = AuditStepRecorded(
        audit_id=audit.id,
        step_id=step_id,
        tax_account=audit.tax_account,
        jurisdiction=audit.jurisdiction,
        periods=audit.periods,
        section=audit.section,
        **fields,
    )
    await emit(session, event, key=audit.tax_account, event_id=event_id("audit", audit.id, step_id))


def _event_fields(step: AuditStep) -> dict[str, Any]:
    """What an event (and the timeline) says of a step beyond its kind, date and author."""
    data = step.data
    if step.kind == "records_requested":
        return {"records_due_on": data["due_on"]}
    if step.kind == "finding":
        return {"period": step.period}
    if step.kind == "notice":
        return {"additional_tax": data["additional_tax"], "response_due_on": data["response_due_on"]}
    if step.kind == "closed":
        return {"outcome": data["outcome"]}
    return {}  # pragma: no cover - every kind is listed above


def _require_open(current: AuditView) -> None:
    if current.closed is not None:
        raise Conflict(f"audit {current.audit.id} is closed")


async def _step(
    session: AsyncSession,
    audit: Audit,
    *,
    kind: str,
    data: dict[str, Any],
    principal: Principal,
    today: date,
    period: str | None = None,
) -> AuditStep:
    step = AuditStep(
        audit_id=audit.id, kind=kind, period=period, data=data, recorded_on=today, recorded_by=principal.actor
    )
    session.add(step)
    await session.flush()
    await _emit(
        session, audit, step_id=step.id, step=kind, on=today, by=principal.actor, **_event_fields(step)
    )
    return step


async def request_records(
    session: AsyncSession,
    *,
    current: AuditView,
    principal: Principal,
    ask: RecordsRequestCreate,
    today: date,
    law: ParameterTree,
) -> AuditStep:
    """The records request (PR §3(E), §9: the lodging must facilitate the examination)."""
    due_on, records = ask.due_on, ask.records
    require_auditor(principal, "request records")
    _require_open(current)
    days = law.get(current.audit.jurisdiction, "audits.records_due_days", today)
    due = due_on or today + timedelta(days=int(str(days.value)))
    if due <= today:
        raise ValidationFailed.on("due_on", "the records are due after today")
    data = {"due_on": due.isoformat(), "records": records, "due_days_section": days.section}
    return await _step(
        session, current.audit, kind="records_requested", data=data, principal=principal, today=today
    )


def _period_input(
    lodging: LodgingView, filed: Liability | None, period: str, lines: CorrectedLines
) -> DeclarationInput:
    """The corrected return: the filed one with the auditor's lines (its exemptions and comp rooms kept)."""
    corrected = {name: getattr(lines, name) for name in CorrectedLines.model_fields}
    if filed is not None:
        return DeclarationInput.model_validate({**filed.input, **corrected})
    in_force = registry_events.attributes_in(lodging, Period.parse(period))
    return DeclarationInput(
        jurisdiction=lodging.jurisdiction,
        lodging_class=in_force.lodging_class,
        casino=in_force.casino,
        period=period,
        **corrected,
    )


async def record_finding(
    session: AsyncSession,
    *,
    current: AuditView,
    principal: Principal,
    finding: AuditFindingCreate,
    today: date,
    law: ParameterTree,
) -> AuditStep:
    """The auditor's finding for one period of the scope: the base lines as the records show them."""
    period, lines, note = finding.period, finding.lines, finding.note
    require_auditor(principal, "record audit findings")
    _require_open(current)
    if current.notice is not None:
        raise Conflict("the notice of audit assessment is issued; close the audit or open a new one")
    if period not in current.audit.periods:
        raise ValidationFailed.on("period", f"{period} is not in the audit's scope {current.audit.periods}")
    lodging = await session.get(LodgingView, current.audit.tax_account)
    assert lodging is not None
    filed = (await repository.operator_returns(session, current.audit.tax_account, [period])).get(period)
    compute_allowed(
        _period_input(lodging, filed, period, lines), parameters=law
    )  # InvalidInput names the field
    data = {"lines": lines.model_dump(mode="json"), "note": note}
    return await _step(
        session, current.audit, kind="finding", period=period, data=data, principal=principal, today=today
    )


@dataclass(frozen=True, slots=True)
class Proposed:
    differences: list[tuple[AuditDifference, Liability | None, DeclarationInput]]

    @property
    def additional_tax(self) -> Decimal:
        return sum((d.additional_tax for d, _, _ in self.differences), ZERO)


async def proposed_assessment(session: AsyncSession, *, current: AuditView, law: ParameterTree) -> Proposed:
    """Per period with a finding: taxcore's corrected return less the filed one, per component."""
    findings = current.findings()
    lodging = await session.get(LodgingView, current.audit.tax_account)
    assert lodging is not None
    filed = await repository.operator_returns(session, current.audit.tax_account, list(findings))
    tree = law
    out = []
    for period in sorted(findings):
        corrected = _period_input(
            lodging, filed.get(period), period, CorrectedLines(**findings[period].data["lines"])
        )
        original = DeclarationInput.model_validate(filed[period].input) if period in filed else None
        out.append((audit_difference(original, corrected, parameters=tree), filed.get(period), corrected))
    return Proposed(out)


def _amendment(
    filed: Liability | None, corrected: DeclarationInput, tax_account: str, law: ParameterTree
) -> dict[str, Any]:
    """What the agency posts at the filing service: the operator's return amended (or filed) for it."""
    result = compute_allowed(corrected, parameters=law)
    lines = corrected.model_dump(mode="json", exclude={"jurisdiction", "lodging_class", "casino", "period"})
    body: dict[str, Any] = {
        **lines,
        "declared": {
            "taxable_base": fmt(result.taxable_base),
            "tax": fmt(result.tax),
            "impact_fee": fmt(result.impact_fee),
            "total": fmt(result.total_due),
        },
    }
    if filed is not None:
        return {"method": "POST", "href": f"/v1/declarations/{filed.declaration_id}/amendments", "body": body}
    return {
        "method": "POST",
        "href": "/v1/declarations",
        "body": {**body, "lodging": tax_account, "period": corrected.period},
    }


async def issue_notice(
    session: AsyncSession, *, current: AuditView, principal: Principal, today: date, law: ParameterTree
) -> AuditStep:
    """The notice of audit assessment: the proposed figures per period and the amendments to file."""
    require_auditor(principal, "issue notices of audit assessment")
    _require_open(current)
    if current.notice is not None:
        raise Conflict("the notice of audit assessment is already issued")
    if not current.findings():
        raise Conflict("no finding is recorded: nothing to assess")
    proposed = await proposed_assessment(session, current=current, law=law)
    days = statutes.cited_on("assessment.notice_response_days", current.audit.jurisdiction, today, law=law)
    data = {
        "issued_on": today.isoformat(),
        "response_due_on": (today + timedelta(days=days.value)).isoformat(),
        "additional_tax": fmt(proposed.additional_tax),
        "periods": [d.to_json() for d, _, _ in proposed.differences],
        "amendments": [
            {"period": d.period, **_amendment(filed, corrected, current.audit.tax_account, law)}
            for d, filed, corrected in proposed.differences
            if d.additional_tax != 0 or any(c.difference != 0 for c in d.components)
        ],
        "section": current.audit.section,
    }
    return await _step(session, current.audit, kind="notice", data=data, principal=principal, today=today)


async def close_audit(
    session: AsyncSession, *, current: AuditView, principal: Principal, close: AuditClose, today: date
) -> AuditStep:
    outcome, note = close.outcome, close.note
    require_auditor(principal, "close audits")
    _require_open(current)
    if outcome == "assessed" and current.notice is None:
        raise ValidationFailed.on("outcome", "an audit is closed as assessed only after its notice")
    data = {"outcome": outcome, "note": note}
    return await _step(session, current.audit, kind="closed", data=data, principal=principal, today=today)


def not_found(audit_id: str) -> NotFound:
    return NotFound(f"no audit {audit_id!r}")


async def records_letter(
    session: AsyncSession, *, current: AuditView
) -> tuple[AuditStep, LodgingView | None]:
    """The records request the letter is about (404 before one is made), and the lodging."""
    request = current.records_request
    if request is None:
        raise NotFound(f"audit {current.audit.id} has requested no records")
    return request, await session.get(LodgingView, current.audit.tax_account)


def _step_summary(step: AuditStep) -> str:
    data = step.data
    if step.kind == "records_requested":
        return f"audit: records requested, due {data['due_on']}"
    if step.kind == "finding":
        return f"audit finding for {step.period}: {data['note']}".rstrip(": ")
    if step.kind == "notice":
        return (
            f"notice of audit assessment: {data['additional_tax']} additional tax, "
            f"response due {data['response_due_on']}"
        )
    return f"audit closed ({data['outcome']})" + (f": {data['note']}" if data.get("note") else "")


async def timeline_entries(session: AsyncSession, *, tax_account: str) -> list[Happened]:
    """The account's audits and their steps for its timeline."""
    audits = await repository.audits_of(session, tax_account)
    steps = await repository.steps_of(session, [a.id for a in audits])
    out: list[Happened] = []
    for a in audits:
        out.append(
            Happened.of_row(
                a,
                on=a.opened_on,
                kind="audit.opened",
                subject_id=a.id,
                by=a.opened_by,
                section=a.section,
                summary=f"audit opened for {', '.join(a.periods)} ({a.source}): {a.reason}",
                note=a.reason,
            )
        )
        for s in steps[a.id]:
            additional = s.data.get("additional_tax") if s.kind == "notice" else None
            out.append(
                Happened.of_row(
                    s,
                    on=s.recorded_on,
                    kind=f"audit.{s.kind}",
                    subject_id=a.id,
                    period=s.period,
                    by=s.recorded_by,
                    amount=Decimal(additional) if additional is not None else None,
                    section=a.section,
                    summary=_step_summary(s),
                )
            )
    return out

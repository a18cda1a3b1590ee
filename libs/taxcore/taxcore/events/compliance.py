"""Compliance-programme events of assessment (topic ``assessment.cases``: audits and cross-check
findings are case work), keyed by tax account number.

A cross-check finding is a lead (it raises no tax); an audit's steps lead to a notice of audit
assessment whose amendment is filed as a new declaration version. Event ids are derived from the
rows they describe (a cross-check run by the versions it compared, an audit step by its row), so
a redelivered declaration event or a retried request publishes nothing new.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from taxcore.events import EventData, contract
from taxcore.events.cases import CASES
from taxcore.money import Money, SignedMoney

AuditStepName = Literal["opened", "records_requested", "finding", "notice", "closed"]


class CrosscheckFindingItem(EventData):
    rule: str
    line: str
    message: str
    declared: Money
    reported: Money
    difference: SignedMoney  # declared - reported: below the range (a low ADR) is negative
    section: str
    parameters: dict[str, str] = {}  # the tolerance or bounds the rule used


@contract("roomtax.assessment.crosscheck.findings.recorded.v1", CASES)
class CrosscheckFindingsRecorded(EventData):
    """A cross-check of a lodging-period compared the operator's return (``declaration_id``) with
    the intermediaries' schedule rows and recorded ``findings`` on the return; an empty list means
    this check cleared the findings an earlier check of the lodging-period had recorded."""

    run_id: str
    tax_account: str
    jurisdiction: str
    period: str
    declaration_id: str
    intermediary_declarations: list[str]
    checked_on: date
    findings: list[CrosscheckFindingItem]


@contract("roomtax.assessment.audit.step.recorded.v1", CASES)
class AuditStepRecorded(EventData):
    """An audit moved one step: opened (scope), records requested (due date), a finding for a
    period, the notice of audit assessment (additional tax), closed (outcome)."""

    audit_id: str
    step_id: str  # the audit's id for ``opened``
    tax_account: str
    jurisdiction: str
    periods: list[str]
    step: AuditStepName
    on: date
    by: str
    period: str | None = None
    records_due_on: date | None = None
    additional_tax: Money | None = None
    response_due_on: date | None = None
    outcome: Literal["no_change", "assessed", "agreed"] | None = None
    section: str

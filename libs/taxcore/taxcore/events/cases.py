"""Case-work events of assessment (topic ``assessment.cases``), keyed by tax account number.

Every step of case work is one of these: a proposal and its review (maker-checker),
a case's steps (filed, under review, hearing scheduled, decided, appealed, appeal
resolved), an abatement request, and the adjustment facts that change what an
account owes (taxcore rule 5, ``AdjustmentIn``) with their reversals. Event ids are
derived from the rows they describe, so a replay or a retried request publishes
nothing new.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from taxcore.events import EventData, contract
from taxcore.money import Money, PositiveMoney

CASES = "assessment.cases"

CaseStepName = Literal[
    "filed",
    "under_review",
    "hearing_scheduled",
    "decision_proposed",
    "decided",
    "appealed",
    "appeal_decision_proposed",
    "appeal_resolved",
]
ProposalAction = Literal[
    "case.decide",
    "case.appeal_decide",
    "abatement.decide",
    "write_off.approve",
    "write_off.reverse",
    "refund.approve",
    "refund.pay",
]


@contract("roomtax.assessment.case.step.recorded.v1", CASES)
class CaseStepRecorded(EventData):
    """A case moved one step (the case's timeline is the sequence of these)."""

    case_id: str
    step_id: str
    tax_account: str
    jurisdiction: str
    period: str
    notice_id: str
    step: CaseStepName
    on: date
    by: str  # the person (``user:<id>``) or client who recorded it
    hearing_on: date | None = None
    hearing_place: str | None = None
    video_link: str | None = None
    outcome: Literal["sustain", "reduce", "cancel", "upheld", "withdrawn", "replaced"] | None = None
    reasons: str | None = None
    amounts: dict[str, Money] = {}
    #: ``appeal_resolved`` with ``outcome`` replaced: the new decision (reduce or cancel); its
    #: ``amounts`` are in ``amounts``
    new_outcome: Literal["reduce", "cancel"] | None = None
    appeal_deadline: date | None = None
    section: str


@contract("roomtax.assessment.proposal.made.v1", CASES)
class ProposalMade(EventData):
    """Maker: an agency person proposed an action that lowers what is owed or pays money out."""

    proposal_id: str
    tax_account: str
    period: str | None
    action: ProposalAction
    subject_id: str
    amount: Money
    proposed_by: str
    proposed_on: date
    admin_approval_required: bool


@contract("roomtax.assessment.proposal.reviewed.v1", CASES)
class ProposalReviewed(EventData):
    """Checker: another agency person approved or rejected the proposal (once)."""

    proposal_id: str
    tax_account: str
    action: ProposalAction
    subject_id: str
    outcome: Literal["approved", "rejected"]
    proposed_by: str
    reviewed_by: str
    reviewed_on: date
    note: str | None = None


@contract("roomtax.assessment.abatement.requested.v1", CASES)
class AbatementRequested(EventData):
    """Abatement of a period's penalty, interest or fine was requested (taxpayer or agency)."""

    abatement_id: str
    tax_account: str
    period: str
    component: Literal["penalty", "interest", "fine"]
    amount: PositiveMoney
    ground: Literal["reasonable_cause", "agency_error"]
    requested_on: date
    requested_by: str


@contract("roomtax.assessment.abatement.decided.v1", CASES)
class AbatementDecided(EventData):
    """An abatement request was decided: full, partial (``amount`` abated) or denied."""

    abatement_id: str
    tax_account: str
    period: str
    component: Literal["penalty", "interest", "fine"]
    outcome: Literal["full", "partial", "deny"]
    amount: Money  # abated (0 when denied)
    decided_on: date
    proposed_by: str
    approved_by: str
    reasons: str
    section: str


@contract("roomtax.assessment.adjustment.recorded.v1", CASES)
class AdjustmentRecorded(EventData):
    """A fact that changes what one account (lodging, period) owes from ``effective_on``.

    ``kind``: ``reduce`` (``component`` reduced *to* ``amount``), ``cancel``, ``abate``
    (``amount`` of ``component`` forgiven), ``write_off`` (everything outstanding, accrual
    and collection stop), ``returned_payment_fee`` (a charge of ``amount``). The balance
    follows from taxcore (rule 5); a statement dated before ``effective_on`` is unchanged.
    """

    fact_id: str
    tax_account: str
    jurisdiction: str
    period: str
    kind: Literal["reduce", "cancel", "abate", "write_off", "returned_payment_fee"]
    component: str | None = None
    amount: Money | None = None
    effective_on: date
    section: str
    reason: str
    proposed_by: str | None = None
    approved_by: str
    source_kind: str
    source_id: str


@contract("roomtax.assessment.adjustment.reversed.v1", CASES)
class AdjustmentReversed(EventData):
    """A write-off was reversed: from ``reversed_on`` its amounts are owed again, accrual resumes."""

    fact_id: str
    tax_account: str
    period: str
    reversed_on: date
    reason: str
    proposed_by: str | None = None
    approved_by: str


@contract("roomtax.assessment.refund.step.recorded.v1", CASES)
class RefundStepRecorded(EventData):
    """A refund of credit moved one step (PR §42): requested, under review, approved, denied, paid.

    Only ``paid`` (with the disbursement's ``method``, ``reference`` and ``on`` date) takes
    the money out of the account.
    """

    refund_id: str
    step_id: str
    tax_account: str
    jurisdiction: str
    step: Literal["requested", "under_review", "approved", "denied", "paid"]
    on: date
    by: str
    amount: PositiveMoney
    reasons: str | None = None
    method: Literal["ach", "check", "wire"] | None = None
    reference: str | None = None
    proposed_by: str | None = None
    approved_by: str | None = None
    section: str

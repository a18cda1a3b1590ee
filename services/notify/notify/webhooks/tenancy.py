"""Which events a subscriber may receive: the same rules as the APIs that serve the data.

- The agency (``owner_kind="agency"``) receives every subscribable event.
- An operator receives the events about its own lodgings (the lodging's operator in
  notify's registry projection), as filing and assessment show them to it.
- A facilitator receives what filing shows it: the declarations and payments it made
  itself (and the reversals of those payments), and the authorizations naming it.
  Assessment shows a facilitator no account, notice or case (they are the taxpayer's
  business), so neither does notify.

Distribution's runs hold no lodging's data and are the agency's alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from taxcore.events import assessment as ae
from taxcore.events import cases as ce
from taxcore.events import compliance as co
from taxcore.events import distribution as de
from taxcore.events import filing as fe
from taxcore.events import plans as pe
from taxcore.events import registry as rge


class Rule(Enum):
    LODGING = "lodging"  # operator of the lodging; no facilitator
    FILER = "filer"  # operator of the lodging; the facilitator that filed
    PAYER = "payer"  # operator of the lodging; the facilitator that paid
    AUTHORIZATION = "authorization"  # operator of the lodging; the facilitator named
    AGENCY = "agency"  # the agency only


#: event type -> rule. Internal plumbing (collections, bond draw requests, maker-checker
#: proposals, OAuth clients, people, revocations) is not offered to subscribers.
SUBSCRIBABLE: dict[str, Rule] = {
    fe.DeclarationFiled.event_type: Rule.FILER,
    fe.DeclarationAmended.event_type: Rule.FILER,
    fe.PaymentReceived.event_type: Rule.PAYER,
    fe.PaymentReversed.event_type: Rule.PAYER,  # the payer: from the payment it reverses
    ae.AccountAssessed.event_type: Rule.LODGING,
    ae.NoticeIssued.event_type: Rule.LODGING,
    ce.CaseStepRecorded.event_type: Rule.LODGING,
    ce.AbatementDecided.event_type: Rule.LODGING,
    ce.AdjustmentRecorded.event_type: Rule.LODGING,
    ce.RefundStepRecorded.event_type: Rule.LODGING,
    pe.PlanRequested.event_type: Rule.LODGING,
    pe.PlanRequestDeclined.event_type: Rule.LODGING,
    pe.PlanGranted.event_type: Rule.LODGING,
    pe.PlanInstallmentPaid.event_type: Rule.LODGING,
    pe.PlanInstallmentReopened.event_type: Rule.LODGING,
    pe.PlanReopened.event_type: Rule.LODGING,
    pe.PlanCompleted.event_type: Rule.LODGING,
    pe.PlanDefaulted.event_type: Rule.LODGING,
    co.AuditStepRecorded.event_type: Rule.LODGING,
    # what the cross-checks found is the agency's risk work, not shown to the taxpayer
    co.CrosscheckFindingsRecorded.event_type: Rule.AGENCY,
    rge.LodgingRegistered.event_type: Rule.LODGING,
    rge.LodgingUpdated.event_type: Rule.LODGING,
    rge.LodgingStatusChanged.event_type: Rule.LODGING,
    rge.LodgingAttributesChanged.event_type: Rule.LODGING,
    rge.CertificateIssued.event_type: Rule.LODGING,
    rge.AuthorizationGranted.event_type: Rule.AUTHORIZATION,
    rge.AuthorizationEnded.event_type: Rule.AUTHORIZATION,
    de.RunPosted.event_type: Rule.AGENCY,
}


@dataclass(frozen=True, slots=True)
class Owner:
    kind: str  # operator | facilitator | agency
    id: str


def _facilitator(field: str, kind_field: str | None) -> Callable[[Owner, Mapping[str, Any]], bool]:
    def check(owner: Owner, data: Mapping[str, Any]) -> bool:
        if kind_field is not None and data.get(kind_field) != "facilitator":
            return False
        return bool(data.get(field) == owner.id)

    return check


_FACILITATOR_SEES: dict[Rule, Callable[[Owner, Mapping[str, Any]], bool]] = {
    Rule.FILER: _facilitator("filer_id", "filer_kind"),
    Rule.PAYER: _facilitator("payer_id", "payer_kind"),
    Rule.AUTHORIZATION: _facilitator("facilitator_id", None),
}


def needs_lodging(event_type: str) -> bool:
    """Whether an operator's right to the event depends on the lodging's operator."""
    return SUBSCRIBABLE[event_type] is not Rule.AGENCY


def may_receive(owner: Owner, event_type: str, data: Mapping[str, Any], *, operator_id: str | None) -> bool:
    """Whether ``owner`` may receive the event; ``operator_id`` is the operator of the lodging
    the event is about (None when notify does not know the lodging yet)."""
    rule = SUBSCRIBABLE.get(event_type)
    if rule is None:
        return False
    if owner.kind == "agency":
        return True
    if rule is Rule.AGENCY:
        return False
    if owner.kind == "operator":
        return operator_id is not None and operator_id == owner.id
    if owner.kind == "facilitator":
        sees = _FACILITATOR_SEES.get(rule)
        return sees is not None and sees(owner, data)
    return False

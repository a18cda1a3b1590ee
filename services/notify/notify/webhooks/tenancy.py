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


class Rule(Enum):
    LODGING = "lodging"  # operator of the lodging; no facilitator
    FILER = "filer"  # operator of the lodging; the facilitator that filed
    PAYER = "payer"  # operator of the lodging; the facilitator that paid
    AUTHORIZATION = "authorization"  # operator of the lodging; the facilitator named
    AGENCY = "agency"  # the agency only


#: event type -> rule. Internal plumbing (collections, bond draw requests, maker-checker
#: proposals, OAuth clients, people, revocations) is not offered to subscribers.
SUBSCRIBABLE: dict[str, Rule] = {
    "roomtax.filing.declaration.filed.v1": Rule.FILER,
    "roomtax.filing.declaration.amended.v1": Rule.FILER,
    "roomtax.filing.payment.received.v1": Rule.PAYER,
    "roomtax.filing.payment.reversed.v1": Rule.PAYER,  # the payer: from the payment it reverses
    "roomtax.assessment.account.assessed.v1": Rule.LODGING,
    "roomtax.assessment.notice.issued.v1": Rule.LODGING,
    "roomtax.assessment.case.step.recorded.v1": Rule.LODGING,
    "roomtax.assessment.abatement.decided.v1": Rule.LODGING,
    "roomtax.assessment.adjustment.recorded.v1": Rule.LODGING,
    "roomtax.assessment.refund.step.recorded.v1": Rule.LODGING,
    "roomtax.registry.lodging.registered.v1": Rule.LODGING,
    "roomtax.registry.lodging.updated.v1": Rule.LODGING,
    "roomtax.registry.lodging.status_changed.v1": Rule.LODGING,
    "roomtax.registry.lodging.attributes_changed.v1": Rule.LODGING,
    "roomtax.registry.certificate.issued.v1": Rule.LODGING,
    "roomtax.registry.authorization.granted.v1": Rule.AUTHORIZATION,
    "roomtax.registry.authorization.ended.v1": Rule.AUTHORIZATION,
    "roomtax.distribution.run.posted.v1": Rule.AGENCY,
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

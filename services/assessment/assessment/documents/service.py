"""Assessment's official documents: notice of decision, deficiency notice, statement of account.

Rendered by the chassis (:mod:`servicekit.documents`) from this package's templates
(``assessment/templates/documents``), in the lodging's language. Every figure comes from
the same computation the API answers with (``accounts.service.statement`` and the
adjustment facts), so a document dated ``D`` says what the statement as of ``D`` says.

Verification: each document carries a code (HMAC of its kind and subject under
``ASSESSMENT_DOCUMENT_SECRET``) and a URL where anyone holding it can check it
(``GET /v1/documents/verify/{kind}/{subject}?code=...``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Literal
from urllib.parse import quote

from assessment import law
from assessment.accounts import service as accounts
from assessment.accounts.ledger import Facts
from assessment.audits.models import Audit, AuditStep
from assessment.cases.service import CaseView
from assessment.casework import law as case_law
from assessment.documents.catalog import CATALOG
from assessment.models import LodgingView, Notice
from assessment.settings import AssessmentSettings
from servicekit import documents as docs
from servicekit.documents import Addressee, Language, Verification
from taxcore.errors import TaxcoreError
from taxcore.notices import notice_terms
from taxcore.parameters import ParameterTree
from taxcore.rules.balance import COMPONENTS

Kind = Literal["decision", "notice", "statement", "records_request"]
KINDS: tuple[Kind, ...] = ("decision", "notice", "statement", "records_request")
RENDERER = docs.Documents("assessment", CATALOG)

COMPONENT_LABELS = {
    "tax": "Tax",
    "impact_fee": "Impact fee",
    "penalty": "Penalty / surcharge",
    "interest": "Interest",
    "fine": "Fines",
    "returned_payment_fee": "Returned-payment fee",
}
#: where each component's amount comes from (the section printed next to it)
_COMPONENT_PARAMETERS = {
    "penalty": ("penalties.late_payment_tiers",),
    "interest": ("penalties.interest_rate", "penalties.deficiency_interest_rate"),
    "fine": ("penalties.late_declaration_fine_per_day", "penalties.no_books_fine_per_period"),
    "returned_payment_fee": ("cases.returned_payment_fee",),
}


@dataclass(frozen=True)
class Rendered:
    pdf: bytes
    filename: str
    language: Language


def component_section(jurisdiction: str, component: str, on: date, *, law: ParameterTree) -> str:
    """The statute section a component's amount rests on (its parameter's citation in ``law``)."""
    tree = law
    if component in ("tax", "impact_fee"):
        principal = tree.value(jurisdiction, "payments.principal_sections", on)
        if isinstance(principal, dict) and component in principal:
            return str(principal[component])
    sections: list[str] = []
    for path in _COMPONENT_PARAMETERS.get(component, ()):
        if tree.has(jurisdiction, path):
            try:
                section = tree.get(jurisdiction, path, on).section
            except TaxcoreError:
                continue
            if section not in sections:
                sections.append(section)
    return "; ".join(sections)


def language_of(facts: Facts, requested: str | None, on: date) -> Language:
    """``lang`` asked for, else the lodging's preferred language, else the jurisdiction's default."""
    preferred = requested or (facts.lodging.preferred_language if facts.lodging is not None else None)
    return docs.language_for(facts.jurisdiction, preferred, on, tree=facts.law)


def addressee(facts: Facts) -> Addressee:
    """The lodging (the account holder) at its mailing address as the registry last sent it."""
    return lodging_addressee(facts.lodging, facts.tax_account)


def lodging_addressee(lodging: LodgingView | None, tax_account: str) -> Addressee:
    if lodging is None:
        return Addressee(name=tax_account)
    lines = [str(v) for k, v in (lodging.address or {}).items() if k in ("line1", "line2") and v]
    town = str((lodging.address or {}).get("municipality") or lodging.municipality)
    postal = (lodging.address or {}).get("postal_code")
    lines.append(f"{town} {postal}" if postal else town)
    return Addressee(name=lodging.name, address=tuple(lines))


def verification(settings: AssessmentSettings, kind: Kind, subject: str) -> Verification:
    code = docs.verification_code(settings.document_secret, f"{kind}:{subject}")
    base = settings.public_base_url.rstrip("/")
    return Verification(code=code, url=f"{base}/v1/documents/verify/{kind}/{quote(subject)}?code={code}")


def verified(settings: AssessmentSettings, kind: str, subject: str, code: str) -> bool:
    return kind in KINDS and docs.code_matches(settings.document_secret, f"{kind}:{subject}", code)


def _components(
    period: dict[str, Any], jurisdiction: str, on: date, law: ParameterTree
) -> list[dict[str, Any]]:
    rows = []
    for name in COMPONENTS:
        c = period["components"].get(name)
        if c is None or (Decimal(c["assessed"]) == 0 and Decimal(c["paid"]) == 0):
            continue
        rows.append(
            {
                "label": COMPONENT_LABELS.get(name, name),
                "section": component_section(jurisdiction, name, on, law=law),
                "assessed": Decimal(c["assessed"]),
                "paid": Decimal(c["paid"]),
                "outstanding": Decimal(c["outstanding"]),
            }
        )
    return rows


def _render(
    template: str,
    facts: Facts,
    *,
    language: Language,
    title: str,
    kind: Kind,
    subject: str,
    on: date,
    printed_on: date,
    settings: AssessmentSettings,
    filename: str,
    **context: Any,
) -> Rendered:
    agency = docs.letterhead(facts.jurisdiction, on, tree=facts.law)
    pdf = RENDERER.pdf(
        template,
        author=agency.name,
        language=language,
        title=title,
        letterhead=agency,
        addressee=addressee(facts),
        verification=verification(settings, kind, subject),
        printed_on=printed_on,
        tax_account=facts.tax_account,
        **context,
    )
    return Rendered(pdf=pdf, filename=filename, language=language)


def decision_letter(
    facts: Facts,
    current: CaseView,
    *,
    settings: AssessmentSettings,
    printed_on: date,
    requested: str | None = None,
) -> Rendered:
    """The notice of decision: the outcome with its reasons, the period's balance recomputed as
    of the decision date, the appeal deadline (``cases.appeal_days``) and how to pay."""
    case, decision = current.case, current.decision
    assert decision is not None
    on = decision.on
    language = language_of(facts, requested, on)
    body = accounts.statement(facts, as_of=on, explain=False)
    period = next((p for p in body["periods"] if p["period"] == case.period), None)
    before = accounts.statement(facts, as_of=on - timedelta(days=1), explain=False)
    was = next((p for p in before["periods"] if p["period"] == case.period), None)
    term = case_law.appeal_days(case.jurisdiction, on, law=facts.law)
    outcome = str(decision.details["outcome"])
    amounts = {k: Decimal(v) for k, v in (decision.details.get("amounts") or {}).items()}
    reduced = [
        {
            "label": COMPONENT_LABELS[c],
            "section": component_section(case.jurisdiction, c, on, law=facts.law),
            "was": Decimal(was["components"][c]["assessed"]) if was else None,
            "now": amount,
        }
        for c, amount in sorted(amounts.items())
    ]
    return _render(
        "documents/decision.html",
        facts,
        language=language,
        title=RENDERER.catalog.text(language, "Notice of decision"),
        kind="decision",
        subject=case.id,
        on=on,
        printed_on=printed_on,
        settings=settings,
        filename=f"decision-{case.id}.pdf",
        case=case,
        decided_on=on,
        outcome=outcome,
        reasons=str(decision.details["reasons"]),
        reduced=reduced,
        decision_section=case_law.section(case.jurisdiction, "decision", on, law=facts.law),
        components=_components(period, case.jurisdiction, on, facts.law) if period else [],
        balance=Decimal(period["balance"]) if period else Decimal("0.00"),
        balance_before=Decimal(was["balance"]) if was else None,
        appeal_deadline=date.fromisoformat(str(decision.details["appeal_deadline"])),
        appeal_days=term.value,
        appeal_section=term.section,
        appeal_provisional=term.provisional,
    )


def notice_letter(
    facts: Facts,
    notice: Notice,
    *,
    settings: AssessmentSettings,
    printed_on: date,
    requested: str | None = None,
) -> Rendered:
    """The notification of a deficiency (PR §2(25), §33; VI §54(d)) with the amounts on its date."""
    on = notice.issued_on
    language = language_of(facts, requested, on)
    terms = notice_terms(notice.jurisdiction, on, parameters=facts.law)
    amounts = [
        (name, getattr(notice, name))
        for name in ("tax", "impact_fee", "penalty", "interest", "fine")
        if name != "impact_fee" or notice.impact_fee
    ]
    return _render(
        "documents/notice.html",
        facts,
        language=language,
        title=RENDERER.catalog.text(
            language,
            "Assessment of a mathematical or clerical error"
            if notice.kind == "clerical_error"
            else "Notification of deficiency",
        ),
        kind="notice",
        subject=notice.id,
        on=on,
        printed_on=printed_on,
        settings=settings,
        filename=f"notice-{notice.id}.pdf",
        notice=notice,
        rows=[
            {
                "label": COMPONENT_LABELS[n],
                "section": component_section(notice.jurisdiction, n, on, law=facts.law),
                "amount": a,
            }
            for n, a in amounts
        ],
        terms=terms,
    )


def statement_document(
    facts: Facts,
    *,
    as_of: date,
    settings: AssessmentSettings,
    printed_on: date,
    requested: str | None = None,
) -> Rendered:
    """The statement of account as of any date: every period's components with their sections,
    payments, credit and the balance (the same figures as ``GET .../statement?as_of=``)."""
    language = language_of(facts, requested, as_of)
    body = accounts.statement(facts, as_of=as_of, explain=False)
    periods = [
        {
            "period": p["period"],
            "due_date": p["due_date"],
            "basis": p["basis"],
            "components": _components(p, facts.jurisdiction, as_of, facts.law),
            "balance": Decimal(p["balance"]),
            "adjustments": [
                {**a, "component_label": COMPONENT_LABELS.get(a["component"] or "", a["component"])}
                for a in p["adjustments"]
            ],
        }
        for p in body["periods"]
    ]
    return _render(
        "documents/statement.html",
        facts,
        language=language,
        title=RENDERER.catalog.text(language, "Statement of account"),
        kind="statement",
        subject=f"{facts.tax_account}@{as_of.isoformat()}",
        on=as_of,
        printed_on=printed_on,
        settings=settings,
        filename=f"statement-{facts.tax_account}-{as_of.isoformat()}.pdf",
        as_of=as_of,
        agency_name=law.agency_name(facts.jurisdiction, as_of, law=facts.law),
        periods=periods,
        payments=body["payments"],
        totals={k: Decimal(v) for k, v in body["totals"].items()},
        credit=Decimal(body["credit"]["total"]),
        refunded=Decimal(body["credit"]["refunded"]),
    )


def records_request_letter(
    audit: Audit,
    request: AuditStep,
    lodging: LodgingView | None,
    *,
    settings: AssessmentSettings,
    printed_on: date,
    requested: str | None = None,
    law: ParameterTree,
) -> Rendered:
    """The records request of an audit (PR §3(E), §9, §10; VI §54(d)): the periods audited,
    the records the auditor listed and the date they are due."""
    on = request.recorded_on
    language = docs.language_for(
        audit.jurisdiction, requested or (lodging.preferred_language if lodging else None), on, tree=law
    )
    agency = docs.letterhead(audit.jurisdiction, on, tree=law)
    pdf = RENDERER.pdf(
        "documents/records_request.html",
        author=agency.name,
        language=language,
        title=RENDERER.catalog.text(language, "Records request"),
        letterhead=agency,
        addressee=lodging_addressee(lodging, audit.tax_account),
        verification=verification(settings, "records_request", audit.id),
        printed_on=printed_on,
        tax_account=audit.tax_account,
        audit=audit,
        dated=on,
        due_on=date.fromisoformat(str(request.data["due_on"])),
        records=[str(r) for r in request.data["records"]],
        periods=", ".join(audit.periods),
        section=audit.section,
    )
    return Rendered(pdf=pdf, filename=f"records-request-{audit.id}.pdf", language=language)

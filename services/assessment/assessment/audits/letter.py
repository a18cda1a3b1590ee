"""The records request letter of an audit (PR §3(E), §9, §10; VI §54(d)) as data and a PDF.

The data (:func:`letter_data`) is the letter's content as JSON; the PDF is rendered by
``assessment.documents.service.records_request_letter`` (servicekit's WeasyPrint renderer).
"""

from __future__ import annotations

from assessment import law as statutes
from assessment.audits.models import Audit, AuditStep
from assessment.audits.schemas import RecordsLetter
from assessment.models import LodgingView
from taxcore.parameters import ParameterTree


def letter_data(
    audit: Audit, request: AuditStep, lodging: LodgingView | None, *, law: ParameterTree
) -> RecordsLetter:
    return RecordsLetter(
        agency=statutes.agency_name(audit.jurisdiction, request.recorded_on, law=law),
        audit_id=audit.id,
        tax_account=audit.tax_account,
        lodging=lodging.name if lodging is not None else None,
        municipality=lodging.municipality if lodging is not None else None,
        periods=audit.periods,
        dated=request.recorded_on,
        due_on=request.data["due_on"],
        records=request.data["records"],
        section=audit.section,
        text=(
            f"Under {audit.section} the agency is auditing the tax periods {', '.join(audit.periods)}. "
            f"Please make the records listed below available to the auditor by {request.data['due_on']}."
        ),
    )

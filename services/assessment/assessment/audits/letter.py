"""The records request letter of an audit (PR §3(E), §9, §10; VI §54(d)) as data and a PDF.

The data (:func:`letter_data`) is what any renderer needs; the PDF is a minimal reportlab
rendering like the notice letter's, until the shared document renderer (WeasyPrint templates in
servicekit) is on main, when this letter becomes one of its templates.
"""

from __future__ import annotations

import io
from datetime import date
from typing import Any

from reportlab.lib.pagesizes import LETTER
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import inch
from reportlab.platypus import ListFlowable, ListItem, Paragraph, SimpleDocTemplate, Spacer

from assessment import law
from assessment.audits.models import Audit, AuditStep
from assessment.models import LodgingView


def letter_data(audit: Audit, request: AuditStep, lodging: LodgingView | None) -> dict[str, Any]:
    return {
        "agency": law.agency_name(audit.jurisdiction, request.recorded_on),
        "audit_id": audit.id,
        "tax_account": audit.tax_account,
        "lodging": lodging.name if lodging is not None else None,
        "municipality": lodging.municipality if lodging is not None else None,
        "periods": audit.periods,
        "dated": request.recorded_on.isoformat(),
        "due_on": request.data["due_on"],
        "records": request.data["records"],
        "section": audit.section,
        "text": (
            f"Under {audit.section} the agency is auditing the tax periods {', '.join(audit.periods)}. "
            f"Please make the records listed below available to the auditor by {request.data['due_on']}."
        ),
    }


def render_letter(data: dict[str, Any], *, printed_on: date) -> bytes:
    styles = getSampleStyleSheet()
    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf,
        pagesize=LETTER,
        title=f"Records request, audit {data['audit_id']}",
        author=data["agency"],
        leftMargin=inch,
        rightMargin=inch,
        topMargin=inch,
        bottomMargin=inch,
    )
    addressee = f"{data['lodging']}<br/>{data['municipality']}" if data["lodging"] else "The taxpayer"
    records = ListFlowable(
        [ListItem(Paragraph(r, styles["Normal"])) for r in data["records"]], bulletType="bullet"
    )
    doc.build(
        [
            Paragraph(data["agency"], styles["Title"]),
            Paragraph(f"Records request ({data['section']})", styles["Heading2"]),
            Paragraph(
                f"Date: {data['dated']}<br/>Audit: {data['audit_id']}<br/>"
                f"Tax account: {data['tax_account']}<br/>Records due: {data['due_on']}",
                styles["Normal"],
            ),
            Spacer(1, 12),
            Paragraph(addressee, styles["Normal"]),
            Spacer(1, 12),
            Paragraph(data["text"], styles["Normal"]),
            Spacer(1, 6),
            records,
            Spacer(1, 12),
            Paragraph(f"Printed {printed_on.isoformat()}.", styles["Italic"]),
        ]
    )
    return buf.getvalue()

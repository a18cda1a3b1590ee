"""The notice letter (PDF): PR §2(25) "written communication ... informing a Deficiency"."""

from __future__ import annotations

import io
from datetime import date

from reportlab.lib import colors
from reportlab.lib.pagesizes import LETTER
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import inch
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from assessment import law
from assessment.models import LodgingView, Notice
from taxcore.money import fmt
from taxcore.notices import notice_terms


def render_letter(notice: Notice, lodging: LodgingView | None, *, printed_on: date) -> bytes:
    styles = getSampleStyleSheet()
    buf = io.BytesIO()
    agency = law.agency_name(notice.jurisdiction, notice.issued_on)
    # every sentence and citation from the notice's own jurisdiction (taxcore.notices)
    terms = notice_terms(notice.jurisdiction, notice.issued_on)
    doc = SimpleDocTemplate(
        buf,
        pagesize=LETTER,
        title=f"Notice of deficiency {notice.id}",
        author=agency,
        leftMargin=inch,
        rightMargin=inch,
        topMargin=inch,
        bottomMargin=inch,
    )
    kind = (
        "Assessment of a mathematical or clerical error"
        if notice.kind == "clerical_error"
        else "Notification of deficiency"
    )
    addressee = f"{lodging.name}<br/>{lodging.municipality}" if lodging is not None else "The taxpayer"
    story = [
        Paragraph(agency, styles["Title"]),
        Paragraph(f"{kind} ({notice.section})", styles["Heading2"]),
        Paragraph(
            f"Date: {notice.issued_on.isoformat()}<br/>Notice: {notice.id}<br/>"
            f"Tax account: {notice.tax_account}<br/>Tax period: {notice.period}",
            styles["Normal"],
        ),
        Spacer(1, 12),
        Paragraph(addressee, styles["Normal"]),
        Spacer(1, 12),
        Paragraph(f"Reason: {notice.reason}", styles["Normal"]),
        Spacer(1, 12),
    ]
    rows = [
        ["Component", "Amount (USD)"],
        ["Tax", fmt(notice.tax)],
        ["Impact fee", fmt(notice.impact_fee)],
        ["Penalty / surcharge", fmt(notice.penalty)],
        ["Interest", fmt(notice.interest)],
        ["Fines", fmt(notice.fine)],
        ["Total owed on the date of this notice", fmt(notice.total)],
    ]
    rows = [r for r in rows if r[0] != "Impact fee" or notice.impact_fee]
    table = Table(rows, colWidths=[3.8 * inch, 1.8 * inch])
    table.setStyle(
        TableStyle(
            [
                ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                ("BACKGROUND", (0, 0), (-1, 0), colors.lightgrey),
                ("ALIGN", (1, 0), (1, -1), "RIGHT"),
                ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
            ]
        )
    )
    story += [
        table,
        Spacer(1, 12),
        Paragraph(" ".join(terms.answer_sentences(notice.response_deadline)), styles["Normal"]),
        Spacer(1, 12),
        Paragraph(f"Printed {printed_on.isoformat()}.", styles["Italic"]),
    ]
    doc.build(story)
    return buf.getvalue()

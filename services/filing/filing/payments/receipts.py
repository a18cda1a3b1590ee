"""Receipts (PR §28(C): a hotelier may ask for a formal, written or printed receipt).

The verification code is an HMAC of the payment id under the service's receipt
secret, so anyone holding a printed receipt can check it at
``/v1/receipts/verify/{code}`` and nobody can forge one for another payment.
"""

from __future__ import annotations

import io
from xml.sax.saxutils import escape

from reportlab.lib.pagesizes import letter
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import inch
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from filing.payments.schemas import ReceiptOut
from servicekit import documents


def verification_code(secret: str, payment_id: str) -> str:
    """``XXXX-XXXX-XXXX-XXXX`` (base32, 80 bits of HMAC-SHA256 of the payment id)."""
    return documents.verification_code(secret, payment_id)


def normalize_code(code: str) -> str:
    return documents.normalize_code(code)


def matches(secret: str, payment_id: str, code: str) -> bool:
    return documents.code_matches(secret, payment_id, code)


#: the printable width of a letter page with one-inch margins, split into the label and value
#: columns: every cell wraps inside its column, so no text can run into its neighbour
_LABEL_WIDTH = 2.8 * inch
_VALUE_WIDTH = 3.7 * inch


def _styles() -> dict[str, ParagraphStyle]:
    base = ParagraphStyle("receipt", fontName="Helvetica", fontSize=10, leading=13, splitLongWords=True)
    return {
        "title": ParagraphStyle("title", parent=base, fontName="Helvetica-Bold", fontSize=16, leading=20),
        "subtitle": ParagraphStyle("subtitle", parent=base, fontSize=11, leading=14),
        "label": ParagraphStyle("label", parent=base, fontName="Helvetica-Bold"),
        "value": base,
        "code": ParagraphStyle("code", parent=base, fontName="Helvetica-Bold", fontSize=12, leading=16),
        "small": ParagraphStyle("small", parent=base, fontSize=9, leading=12),
    }


def payer_line(receipt: ReceiptOut) -> str:
    """The payer by name (registry projection), with its role; by id only until the name is known."""
    if receipt.payer_name:
        return f"{receipt.payer_name} ({receipt.payer.kind})"
    return f"{receipt.payer.kind} {receipt.payer.id} (name not yet received from the registry)"


def receipt_rows(receipt: ReceiptOut) -> list[tuple[str, str]]:
    """The receipt's (label, value) lines, in print order."""
    rows = [
        ("Receipt number", receipt.receipt_number),
        ("Tax account", receipt.tax_account),
        ("Lodging", receipt.lodging_name),
        ("Payer", payer_line(receipt)),
        ("Amount", f"{receipt.amount} {receipt.currency}"),
        ("Method", receipt.method_label + (f" ({receipt.reference})" if receipt.reference else "")),
        ("Received on", receipt.received_on.isoformat()),
    ]
    for period in receipt.periods:
        rows.append((f"Applied to period {period.period}", f"{period.amount} {receipt.currency}"))
    if receipt.unallocated:
        rows.append(("Not designated (applied by the agency)", f"{receipt.unallocated} {receipt.currency}"))
    if receipt.reversal is not None:
        rows.append(("REVERSED on", f"{receipt.reversal.reversed_on.isoformat()}: {receipt.reversal.reason}"))
    return rows


def render_pdf(receipt: ReceiptOut) -> bytes:
    """A printable receipt: a two-column table whose cells wrap inside their columns (a long
    label, amount, name or reason takes more lines, never the neighbour's space)."""
    buffer = io.BytesIO()
    doc = SimpleDocTemplate(
        buffer,
        pagesize=letter,
        title=f"Receipt {receipt.receipt_number}",
        author=receipt.agency,
        leftMargin=inch,
        rightMargin=inch,
        topMargin=inch,
        bottomMargin=inch,
        invariant=True,
    )
    s = _styles()
    table = Table(
        [
            [Paragraph(escape(label), s["label"]), Paragraph(escape(value), s["value"])]
            for label, value in receipt_rows(receipt)
        ],
        colWidths=[_LABEL_WIDTH, _VALUE_WIDTH],
        hAlign="LEFT",
    )
    table.setStyle(
        TableStyle(
            [
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("LEFTPADDING", (0, 0), (-1, -1), 0),
                ("RIGHTPADDING", (0, 0), (0, -1), 8),
                ("TOPPADDING", (0, 0), (-1, -1), 2),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 4),
            ]
        )
    )
    story = [
        Paragraph(escape(receipt.agency), s["title"]),
        Spacer(1, 4),
        Paragraph(escape(f"Official receipt of payment - {receipt.legal_basis}"), s["subtitle"]),
        Spacer(1, 18),
        table,
        Spacer(1, 18),
        Paragraph(escape(f"Verification code: {receipt.verification_code}"), s["code"]),
        Paragraph(escape(f"Verify at {receipt.verify_url}"), s["small"]),
        Paragraph(escape(f"Issued {receipt.issued_at.isoformat(timespec='seconds')}"), s["small"]),
    ]
    doc.build(story)
    return buffer.getvalue()

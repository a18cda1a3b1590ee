"""Receipts (PR §28(C): a hotelier may ask for a formal, written or printed receipt).

The verification code is an HMAC of the payment id under the service's receipt
secret, so anyone holding a printed receipt can check it at
``/v1/receipts/verify/{code}`` and nobody can forge one for another payment.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import re

from reportlab.lib.pagesizes import letter
from reportlab.lib.units import inch
from reportlab.pdfgen import canvas

from filing.payments.schemas import ReceiptOut

_CODE_CHARS = re.compile(r"[^A-Z2-7]")


def verification_code(secret: str, payment_id: str) -> str:
    """``XXXX-XXXX-XXXX-XXXX`` (base32, 80 bits of HMAC-SHA256)."""
    digest = hmac.new(secret.encode(), payment_id.encode(), hashlib.sha256).digest()
    raw = base64.b32encode(digest).decode()[:16]
    return "-".join(raw[i : i + 4] for i in range(0, 16, 4))


def normalize_code(code: str) -> str:
    raw = _CODE_CHARS.sub("", code.upper())
    return "-".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def matches(secret: str, payment_id: str, code: str) -> bool:
    return hmac.compare_digest(verification_code(secret, payment_id), normalize_code(code))


def render_pdf(receipt: ReceiptOut) -> bytes:
    """A one-page printable receipt."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=letter, invariant=True)
    pdf.setTitle(f"Receipt {receipt.receipt_number}")
    width, height = letter
    y = height - inch
    pdf.setFont("Helvetica-Bold", 16)
    pdf.drawString(inch, y, receipt.agency)
    y -= 0.3 * inch
    pdf.setFont("Helvetica", 11)
    pdf.drawString(inch, y, f"Official receipt of payment - {receipt.legal_basis}")
    y -= 0.45 * inch
    rows = [
        ("Receipt number", receipt.receipt_number),
        ("Tax account", receipt.tax_account),
        ("Lodging", receipt.lodging_name),
        ("Payer", f"{receipt.payer.kind} {receipt.payer.id}"),
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
    for label, value in rows:
        pdf.setFont("Helvetica-Bold", 10)
        pdf.drawString(inch, y, label)
        pdf.setFont("Helvetica", 10)
        pdf.drawString(3.4 * inch, y, value[:70])
        y -= 0.25 * inch
    y -= 0.3 * inch
    pdf.setFont("Helvetica-Bold", 12)
    pdf.drawString(inch, y, f"Verification code: {receipt.verification_code}")
    y -= 0.25 * inch
    pdf.setFont("Helvetica", 9)
    pdf.drawString(inch, y, f"Verify at {receipt.verify_url}")
    y -= 0.2 * inch
    pdf.drawString(inch, y, f"Issued {receipt.issued_at.isoformat(timespec='seconds')}")
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()

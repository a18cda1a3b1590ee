"""Receipts (PR §28(C): a hotelier may ask for a formal, written or printed receipt).

The verification code is an HMAC of the payment id under the service's receipt
secret, so anyone holding a printed receipt can check it at
``/v1/receipts/verify/{code}`` and nobody can forge one for another payment.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from filing.payments.schemas import ReceiptOut
from servicekit import documents
from taxcore.parameters import ParameterTree


def verification_code(secret: str, payment_id: str) -> str:
    """``XXXX-XXXX-XXXX-XXXX`` (base32, 80 bits of HMAC-SHA256 of the payment id)."""
    return documents.verification_code(secret, payment_id)


def normalize_code(code: str) -> str:
    return documents.normalize_code(code)


def matches(secret: str, payment_id: str, code: str) -> bool:
    return documents.code_matches(secret, payment_id, code)


CATALOG = documents.Catalog(
    es={
        "Official receipt of payment": "Recibo oficial de pago",
        "Receipt number": "Número de recibo",
        "Lodging": "Hospedería",
        "Payer": "Pagador",
        "Amount": "Cantidad",
        "Method": "Método",
        "Received on": "Recibido el",
        "Applied to period {period}": "Aplicado al período {period}",
        "Not designated (applied by the agency)": "No designado (lo aplica la agencia)",
        "REVERSED on": "REVERTIDO el",
        "Issued": "Emitido",
        "Receipt": "Recibo",
        "name not yet received from the registry": "nombre aún no recibido del registro",
        "operator": "operador",
        "facilitator": "intermediario",
        "agency": "agencia",
        "Postal money order": "Giro postal",
        "Bank money order": "Giro bancario",
        "Check": "Cheque",
        "Cashier's check": "Cheque de gerente",
        "Cash": "Efectivo",
        "Electronic transfer": "Transferencia electrónica",
        "Card": "Tarjeta",
    }
)
RENDERER = documents.Documents("filing", CATALOG)


def payer_line(receipt: ReceiptOut, language: documents.Language = "en") -> str:
    """The payer by name (registry projection), with its role; by id only until the name is known."""
    kind = (
        RENDERER.catalog.text(language, receipt.payer.kind)
        if receipt.payer.kind in ("operator", "facilitator", "agency")
        else receipt.payer.kind
    )
    if receipt.payer_name:
        return f"{receipt.payer_name} ({kind})"
    unknown = RENDERER.catalog.text(language, "name not yet received from the registry")
    return f"{kind} {receipt.payer.id} ({unknown})"


def receipt_rows(receipt: ReceiptOut, language: documents.Language = "en") -> list[tuple[str, str]]:
    """The receipt's (label, value) lines, in print order, in ``language``."""

    def t(english: str, **fields: object) -> str:
        return RENDERER.catalog.text(language, english, **fields)

    def money(amount: Decimal) -> str:
        return documents.money(amount, language)

    rows = [
        (t("Receipt number"), receipt.receipt_number),
        (t("Tax account"), receipt.tax_account),
        (t("Lodging"), receipt.lodging_name),
        (t("Payer"), payer_line(receipt, language)),
        (t("Amount"), f"{money(receipt.amount)} {receipt.currency}"),
        (t("Method"), t(receipt.method_label) + (f" ({receipt.reference})" if receipt.reference else "")),
        (t("Received on"), documents.long_date(receipt.received_on, language)),
    ]
    for period in receipt.periods:
        rows.append(
            (
                t("Applied to period {period}", period=period.period),
                f"{money(period.amount)} {receipt.currency}",
            )
        )
    if receipt.unallocated:
        rows.append(
            (t("Not designated (applied by the agency)"), f"{money(receipt.unallocated)} {receipt.currency}")
        )
    if receipt.reversal is not None:
        rows.append(
            (
                t("REVERSED on"),
                f"{documents.long_date(receipt.reversal.reversed_on, language)}: {receipt.reversal.reason}",
            )
        )
    return rows


def render_pdf(
    receipt: ReceiptOut, *, language: documents.Language, municipality: str | None, law: ParameterTree
) -> bytes:
    """A printable receipt on the shared renderer (servicekit.documents): the agency's letterhead,
    the payer and lodging addressed, a two-column table whose cells wrap inside their columns, and
    the verification code with its QR code."""
    on = receipt.received_on
    agency = documents.letterhead(receipt.jurisdiction, on, tree=law)
    if agency.name != receipt.agency:  # a deployment's override of the agency's name (FILING_AGENCIES)
        agency = dataclasses.replace(agency, name=receipt.agency)
    lines = (receipt.lodging_name, municipality) if municipality else (receipt.lodging_name,)
    return RENDERER.pdf(
        "documents/receipt.html",
        author=receipt.agency,
        language=language,
        title=f"{RENDERER.catalog.text(language, 'Official receipt of payment')} · {receipt.legal_basis}",
        letterhead=agency,
        addressee=documents.Addressee(name=payer_line(receipt, language), address=lines),
        verification=documents.Verification(code=receipt.verification_code, url=receipt.verify_url),
        printed_on=receipt.issued_at,
        tax_account=receipt.tax_account,
        receipt=receipt,
        rows=receipt_rows(receipt, language),
    )

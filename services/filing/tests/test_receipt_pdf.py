"""The printed receipt (PR §28(C)): no text runs into other text at any amount length, the payer
is named (issue 10 item 15), in the jurisdiction's language, on the shared renderer.

Text boxes come from the PDF itself: pdfium (pypdfium2) reports the rectangle of every run of
text on a line; two rectangles that share any area overlap on paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import pypdfium2
import pytest
from filing_factories import ADMIN, DB, as_facilitator, as_operator, authorize, make_lodging, project
from weasyprint import HTML

from servicekit.testing import pdf_text, save_first_page
from taxcore.events import registry as ev

AMOUNTS = ["1.00", "12345.67", "1234567890.12", "9999999999999999.99"]
LETTER_WIDTH = 8.5 * 72
MARGIN = 0.75 * 72  # servicekit's documents/base.html


@dataclass(frozen=True)
class Box:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        eps = 0.01
        return (
            min(self.x1, other.x1) - max(self.x0, other.x0) > eps
            and min(self.y1, other.y1) - max(self.y0, other.y0) > eps
        )


def text_boxes(pdf: bytes, *, pages: int = 1) -> list[Box]:
    document = pypdfium2.PdfDocument(pdf)
    try:
        assert len(document) == pages
        textpage = document[0].get_textpage()
        boxes = []
        for i in range(textpage.count_rects()):
            left, bottom, right, top = textpage.get_rect(i)
            text = textpage.get_text_bounded(left, bottom, right, top).strip()
            if text:
                boxes.append(Box(text, left, bottom, right, top))
        return boxes
    finally:
        document.close()


def overlapping(boxes: list[Box]) -> list[tuple[str, str]]:
    return [(a.text, b.text) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if a.overlaps(b)]


def test_the_box_check_sees_an_overlap() -> None:
    # the check itself: two runs drawn on the same spot, where a long label ran into its value
    pdf = HTML(
        string='<p style="position:absolute;top:100px;left:50px;font:10pt sans-serif">Not designated</p>'
        '<p style="position:absolute;top:100px;left:90px;font:10pt sans-serif">1.00 USD</p>'
    ).write_pdf()
    assert overlapping(text_boxes(pdf)) != []


async def paid_receipt(client: httpx.AsyncClient, db: DB, amount: str, *, reverse: bool) -> bytes:
    hotel = await make_lodging(db, name="Hotel El Convento " + "Grand " * 20)
    registered = ev.OperatorRegistered(
        operator_id=hotel.operator_id, name="Convento Hospitality Group LLC", email=None
    )
    assert await project(db, "roomtax.registry.operator.registered.v1", registered) == "applied"
    body = {
        "tax_account": hotel.tax_account,
        "amount": amount,
        "method": "electronic_transfer",
        "reference": "TRF-" + "9" * 96,  # 100 characters, no space to break at
        "periods": [{"period": "2026-10", "amount": "0.01"}],
    }
    r = await client.post("/v1/payments", json=body, headers=as_operator(hotel.operator_id))
    assert r.status_code == 201, r.text
    paid = r.json()
    if reverse:
        reason = "transfer recalled by the sending bank, " * 12
        r = await client.post(
            f"/v1/payments/{paid['id']}/reversals", json={"reason": reason[:500]}, headers=ADMIN
        )
        assert r.status_code == 201, r.text
    pdf = await client.get(
        f"/v1/payments/{paid['id']}/receipt",
        params={"format": "pdf", "lang": "en"},
        headers=as_operator(hotel.operator_id),
    )
    assert pdf.status_code == 200
    return pdf.content


@pytest.mark.parametrize("amount", AMOUNTS)
async def test_no_text_overlaps_at_any_amount_length(client: httpx.AsyncClient, db: DB, amount: str) -> None:
    pdf = await paid_receipt(client, db, amount, reverse=amount == AMOUNTS[-1])
    boxes = text_boxes(pdf)
    assert overlapping(boxes) == []
    text = pdf_text(pdf)
    assert "Not designated (applied by the agency)" in text
    whole, cents = amount.split(".")
    assert f"${int(whole):,}.{cents} USD" in text.replace(" ", "").replace("USD", " USD")
    # every run stays inside the page's margins (8.5 x 11 in)
    assert all(MARGIN - 1 <= b.x0 and b.x1 <= LETTER_WIDTH - MARGIN + 1 for b in boxes), [
        b for b in boxes if b.x0 < MARGIN - 1 or b.x1 > LETTER_WIDTH - MARGIN + 1
    ]


async def test_the_payer_is_named_not_numbered(client: httpx.AsyncClient, db: DB) -> None:
    hotel = await make_lodging(db)
    headers = as_operator(hotel.operator_id)
    body = {"tax_account": hotel.tax_account, "amount": "100.00", "method": "cash"}
    paid = (await client.post("/v1/payments", json=body, headers=headers)).json()
    url = f"/v1/payments/{paid['id']}/receipt"

    # before the registry's event arrives the receipt says so, by id
    before = (await client.get(url, headers=headers)).json()
    assert before["payer_name"] is None
    text = pdf_text((await client.get(url, params={"format": "pdf", "lang": "en"}, headers=headers)).content)
    assert f"operator {hotel.operator_id} (name not yet received from the registry)" in text

    registered = ev.OperatorRegistered(
        operator_id=hotel.operator_id, name="Posada La Hacienda Inc.", email=None
    )
    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert await project(db, "roomtax.registry.operator.registered.v1", registered, at=at) == "applied"
    after = (await client.get(url, headers=headers)).json()
    assert after["payer_name"] == "Posada La Hacienda Inc."
    pdf = (await client.get(url, params={"format": "pdf"}, headers=headers)).content  # PR: Spanish
    save_first_page(pdf, "receipt-es")
    text = pdf_text(pdf)
    for expected in (
        "Puerto Rico Tourism Company P.O. Box 9023960 San Juan, PR 00902-3960",
        "Recibo oficial de pago",
        "Pagador Posada La Hacienda Inc. (operador)",
        "Cantidad $100.00 USD",
        "Método Efectivo",
        "Código de verificación:",
        "Página 1 de 1",
    ):
        assert expected in text, expected
    assert hotel.operator_id not in text

    # an older snapshot replayed after the newer one changes nothing
    stale = ev.OperatorRegistered(operator_id=hotel.operator_id, name="Old Name", email=None)
    await project(db, "roomtax.registry.operator.registered.v1", stale, at=datetime(2025, 1, 1, tzinfo=UTC))
    assert (await client.get(url, headers=headers)).json()["payer_name"] == "Posada La Hacienda Inc."


async def test_a_facilitator_payer_is_named(client: httpx.AsyncClient, db: DB) -> None:
    hotel = await make_lodging(db)
    fac = ev.FacilitatorRegistered(facilitator_id="fac-named", name="Island Stays Online S.L.", email=None)
    assert await project(db, "roomtax.registry.facilitator.registered.v1", fac) == "applied"
    await authorize(db, hotel, "fac-named")
    body = {"tax_account": hotel.tax_account, "amount": "50.00", "method": "electronic_transfer"}
    paid = await client.post("/v1/payments", json=body, headers=as_facilitator("fac-named"))
    assert paid.status_code == 201, paid.text
    receipt = (await client.get(f"/v1/payments/{paid.json()['id']}/receipt", headers=ADMIN)).json()
    assert (receipt["payer"], receipt["payer_name"]) == (
        {"kind": "facilitator", "id": "fac-named"},
        "Island Stays Online S.L.",
    )

"""The printed receipt (PR §28(C)): no text runs into other text at any amount length, and
the payer is named (issue 10 item 15).

Text boxes come from the PDF itself: pypdf reports each text run with its matrix and font;
its box is the run's width in that font (reportlab's metrics) by the font's ascent and
descent. Two boxes that share any area overlap on paper.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from filing_factories import ADMIN, DB, as_facilitator, as_operator, authorize, make_lodging, project
from pypdf import PdfReader
from reportlab.pdfbase.pdfmetrics import stringWidth

from taxcore.events import registry as ev

AMOUNTS = ["1.00", "12345.67", "1234567890.12", "9999999999999999.99"]


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


def text_boxes(pdf: bytes) -> list[Box]:
    boxes: list[Box] = []

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        text = text.rstrip("\n")
        if not text.strip():
            return
        # the text matrix in user space (tm then cm), as the PDF places the run
        a = tm[0] * cm[0] + tm[1] * cm[2]
        d = tm[2] * cm[1] + tm[3] * cm[3]
        x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        base = str(font["/BaseFont"]).lstrip("/")
        width = stringWidth(text, base, size) * a
        # Helvetica: ascent 718, descent -207 per 1000 units
        boxes.append(Box(text, x, y - 0.207 * size * d, x + width, y + 0.718 * size * d))

    reader = PdfReader(io.BytesIO(pdf))
    assert len(reader.pages) == 1
    reader.pages[0].extract_text(visitor_text=visit)
    return boxes


def overlapping(boxes: list[Box]) -> list[tuple[str, str]]:
    return [(a.text, b.text) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if a.overlaps(b)]


def test_the_box_check_sees_an_overlap() -> None:
    # the check itself: two runs drawn where the old receipt drew a long label and its value
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.setFont("Helvetica-Bold", 10)
    pdf.drawString(72, 500, "Not designated (applied by the agency)")
    pdf.setFont("Helvetica", 10)
    pdf.drawString(3.4 * 72, 500, "1.00 USD")
    pdf.showPage()
    pdf.save()
    assert overlapping(text_boxes(buffer.getvalue())) == [
        ("Not designated (applied by the agency)", "1.00 USD")
    ]


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
        f"/v1/payments/{paid['id']}/receipt", params={"format": "pdf"}, headers=as_operator(hotel.operator_id)
    )
    assert pdf.status_code == 200
    return pdf.content


@pytest.mark.parametrize("amount", AMOUNTS)
async def test_no_text_overlaps_at_any_amount_length(client: httpx.AsyncClient, db: DB, amount: str) -> None:
    boxes = text_boxes(await paid_receipt(client, db, amount, reverse=amount == AMOUNTS[-1]))
    assert overlapping(boxes) == []
    texts = [b.text for b in boxes]
    assert "Not designated (applied by the agency)" in texts
    assert f"{amount} USD" in texts
    # every run stays inside the page's one-inch margins (8.5 x 11 in)
    assert all(72 - 0.5 <= b.x0 and b.x1 <= 8.5 * 72 - 72 + 0.5 for b in boxes), [
        b for b in boxes if b.x1 > 8.5 * 72 - 72 + 0.5
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
    text = " ".join(
        b.text for b in text_boxes((await client.get(url, params={"format": "pdf"}, headers=headers)).content)
    )
    assert f"operator {hotel.operator_id} (name not yet received from the registry)" in text

    registered = ev.OperatorRegistered(
        operator_id=hotel.operator_id, name="Posada La Hacienda Inc.", email=None
    )
    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert await project(db, "roomtax.registry.operator.registered.v1", registered, at=at) == "applied"
    after = (await client.get(url, headers=headers)).json()
    assert after["payer_name"] == "Posada La Hacienda Inc."
    text = " ".join(
        b.text for b in text_boxes((await client.get(url, params={"format": "pdf"}, headers=headers)).content)
    )
    assert "Payer Posada La Hacienda Inc. (operator)" in text
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

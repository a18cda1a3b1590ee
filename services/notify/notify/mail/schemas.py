"""E-mail API models."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class EmailOut(BaseModel):
    id: str
    kind: str = Field(description="notice | decision | abatement | receipt | reminder | webhook_disabled")
    recipient_kind: str
    recipient_id: str
    to_address: str | None
    language: str
    subject: str
    body: str
    tax_account: str | None
    period: str | None
    status: str = Field(description="pending | sent | failed | no_address | cancelled")
    attempts: int
    last_error: str | None
    sent_at: datetime | None
    created_at: datetime


class ReceiptRequested(BaseModel):
    message_key: str
    queued: bool = Field(description="false: this receipt was already sent to you (it is not sent twice)")

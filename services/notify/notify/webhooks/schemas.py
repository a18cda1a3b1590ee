"""Webhook API models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from notify.webhooks.signing import HEADER, TOLERANCE_SECONDS


class WebhookCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "url": "https://pms.example.com/roomtax/events",
                    "event_types": [
                        "roomtax.filing.declaration.filed.v1",
                        "roomtax.assessment.notice.issued.v1",
                    ],
                    "description": "our PMS",
                }
            ]
        },
    )

    url: str = Field(max_length=2048, description="where to POST the events (https in production)")
    event_types: list[Annotated[str, Field(max_length=200)]] = Field(
        min_length=1, max_length=50, description="GET /v1/webhooks/event-types"
    )
    description: str | None = Field(default=None, max_length=500)


class Webhook(BaseModel):
    id: str
    url: str
    event_types: list[str]
    description: str | None
    status: str = Field(description="active | disabled (after persistent failure; POST .../enable)")
    disabled_reason: str | None
    disabled_at: datetime | None
    owner_kind: str
    owner_id: str
    created_at: datetime
    created_by: str


class WebhookCreated(Webhook):
    secret: str = Field(
        description=f"the signing secret, shown only now: verify the {HEADER} header "
        f"(t=<unix time>,v1=<HMAC-SHA256 of 't.body'>, refuse t older than {TOLERANCE_SECONDS} s)"
    )


class SecretRotated(BaseModel):
    id: str
    secret: str = Field(description="the new signing secret, shown only now")
    previous_secret_expires_at: datetime | None = Field(
        description="until then every delivery is also signed with the previous secret (a second v1=)"
    )


class Attempt(BaseModel):
    attempted_at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int
    manual: bool


class Delivery(BaseModel):
    id: str
    event_id: str
    event_type: str
    status: str = Field(description="pending | delivered | failed")
    attempts: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    delivered_at: datetime | None
    created_at: datetime
    log: list[Attempt]


class EventType(BaseModel):
    type: str
    topic: str
    who_receives: str


class EventTypes(BaseModel):
    items: list[EventType]
    signature_header: str = HEADER
    tolerance_seconds: int = TOLERANCE_SECONDS

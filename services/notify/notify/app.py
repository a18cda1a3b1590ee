"""The notify service: webhook subscriptions and signed deliveries, e-mail and reminders."""

from __future__ import annotations

from fastapi import FastAPI

from notify.mail.endpoints import router as emails
from notify.settings import NotifySettings
from notify.webhooks.endpoints import router as webhooks
from servicekit.app import create_app
from servicekit.runtime import Runtime
from taxcore.events import load_all


def build_app(settings: NotifySettings | None = None, runtime: Runtime | None = None) -> FastAPI:
    settings = settings or NotifySettings()
    load_all()
    return create_app(
        settings,
        title="Roomtax Notify",
        description="Outbound messages: webhook subscriptions and their signed deliveries "
        "(Roomtax-Signature: t=<unix time>,v1=<HMAC-SHA256(secret, t + '.' + body)>; refuse a t more "
        "than 5 minutes away), delivery logs and redelivery; e-mail notices, decisions, receipts on "
        "request (PR §28(C)) and due-date reminders (PR §28; 33 V.I.C. § 54(f)).",
        routers=[webhooks, emails],
        runtime=runtime,
    )

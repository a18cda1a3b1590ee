from __future__ import annotations

from datetime import time

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from notify.webhooks.sealing import DEV_WEBHOOK_SECRET_KEY, check_keys
from servicekit.settings import ServiceSettings


class NotifySettings(ServiceSettings):
    """notify's settings (``NOTIFY_*``; shared values may come from ``ROOMTAX_*``)."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_prefix="NOTIFY_")

    service_name: str = "notify"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/roomtax_notify"

    # --- webhooks ---
    #: deliver to loopback, private, link-local and other non-public addresses (tests and a
    #: local demo only: in production a webhook must never reach the agency's own network)
    webhook_allow_private_targets: bool = False
    #: refuse plain http targets; forced on in production whatever the value
    webhook_require_https: bool = False
    #: first retry after this many seconds, doubled after every failed attempt ...
    webhook_retry_base_seconds: float = Field(default=30.0, gt=0)
    #: ... up to this interval between two attempts
    webhook_retry_max_seconds: float = Field(default=6 * 3600.0, gt=0)
    #: a delivery still failing this long after its first attempt is given up and its
    #: subscription disabled, with a notice to its owner (3 days, as Stripe does)
    webhook_give_up_after_seconds: float = Field(default=3 * 86400.0, gt=0)
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    #: how often the delivery loop looks for due deliveries when nothing woke it
    webhook_poll_seconds: float = Field(default=0.5, gt=0, le=60)
    #: a rotated secret keeps signing (a second ``v1=``) this long, so receivers can switch
    webhook_previous_secret_hours: float = Field(default=24.0, ge=0, le=168)
    #: Fernet keys sealing the signing secrets at rest, newest first, comma-separated
    #: (``notify.webhooks.sealing``); the development key is refused in production
    webhook_secret_keys: str = DEV_WEBHOOK_SECRET_KEY

    # --- e-mail (SMTP) ---
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 8025
    smtp_username: str | None = None
    smtp_password: str | None = None
    smtp_starttls: bool = False
    smtp_tls: bool = False
    mail_from: str = "Roomtax <no-reply@roomtax.example>"
    #: who receives the notices meant for the agency itself (its own webhooks disabled)
    agency_email: str | None = None
    #: the taxpayer portal, named in e-mails (where the official documents are)
    portal_url: str = "http://127.0.0.1:8000/"
    mail_poll_seconds: float = Field(default=0.5, gt=0, le=60)
    mail_max_attempts: int = Field(default=8, ge=1, le=50)
    mail_retry_base_seconds: float = Field(default=30.0, gt=0)

    # --- due-date reminders ---
    #: remind this many days before a lodging's due date when nothing is filed (0: off)
    reminder_days_before: int = Field(default=5, ge=0, le=28)
    reminders_at: time = time(8, 0)
    reminders_timezone: str = "America/Puerto_Rico"
    reminders_retry_seconds: float = Field(default=300.0, gt=0)

    @model_validator(mode="after")
    def _production_targets(self) -> NotifySettings:
        check_keys(self.webhook_secret_keys)
        if self.environment == "production":
            if DEV_WEBHOOK_SECRET_KEY in self.webhook_secret_keys:
                raise ValueError("NOTIFY_WEBHOOK_SECRET_KEYS must be set outside development")
            if self.webhook_allow_private_targets:
                raise ValueError("NOTIFY_WEBHOOK_ALLOW_PRIVATE_TARGETS is refused in production (SSRF)")
            self.webhook_require_https = True
        return self

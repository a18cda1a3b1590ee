from __future__ import annotations

from pathlib import Path

from notify.app import build_app
from notify.consumers import consumers
from notify.mail.sender import run_sender
from notify.reminders.service import reminders_job
from notify.settings import NotifySettings
from notify.webhooks.delivery import run_deliveries
from servicekit.cli import ServiceSpec, main

SPEC = ServiceSpec(
    name="notify",
    settings=NotifySettings,
    app=lambda s: build_app(s),  # type: ignore[arg-type]
    migrations=Path(__file__).resolve().parent.parent / "migrations",
    default_port=8005,
    consumers=consumers,
    background=[run_deliveries, run_sender, reminders_job],  # type: ignore[list-item]
)

if __name__ == "__main__":
    main(SPEC)

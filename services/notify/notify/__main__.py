from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from notify.app import build_app
from notify.consumers import consumers
from notify.mail.sender import run_sender
from notify.reminders.service import reminders_job
from notify.settings import NotifySettings
from notify.webhooks.delivery import run_deliveries
from servicekit.cli import ServiceSpec, main
from servicekit.settings import ServiceSettings


def _app(settings: ServiceSettings) -> FastAPI:
    assert isinstance(settings, NotifySettings)
    app: FastAPI = build_app(settings)
    return app


SPEC = ServiceSpec(
    name="notify",
    settings=NotifySettings,
    app=_app,
    migrations=Path(__file__).resolve().parent.parent / "migrations",
    default_port=8005,
    consumers=consumers,
    background=[run_deliveries, run_sender, reminders_job],  # type: ignore[list-item]
)

if __name__ == "__main__":
    main(SPEC)

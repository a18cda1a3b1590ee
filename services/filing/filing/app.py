"""The filing service: declarations, amendments, OTA schedules, payments and receipts."""

from __future__ import annotations

from fastapi import FastAPI

from filing.declarations.endpoints import router as declarations
from filing.payments.endpoints import router as payments
from filing.reports.endpoints import router as reports
from filing.schedules.endpoints import router as schedules
from filing.settings import FilingSettings
from servicekit.app import create_app
from servicekit.runtime import Runtime


def build_app(settings: FilingSettings | None = None, runtime: Runtime | None = None) -> FastAPI:
    settings = settings or FilingSettings()
    return create_app(
        settings,
        title="Roomtax Filing",
        description="Monthly declarations (PR §28; VI §54(f)) recomputed and checked for clerical "
        "errors (PR §2(18)), amendments, online intermediaries' remittance schedules, payments "
        "(PR §29) and receipts (PR §28(C)).",
        routers=[declarations, schedules, payments, reports],
        upload_paths=["/v1/remittance-schedules"],
        runtime=runtime,
    )

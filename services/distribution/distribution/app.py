"""The distribution service: collections ledger, Bank certification, monthly runs, fund balances."""

from __future__ import annotations

from fastapi import FastAPI

import taxcore.events.distribution  # noqa: F401 - registers roomtax.distribution.* contracts
from distribution.certifications.endpoints import router as certifications
from distribution.openings.endpoints import router as openings
from distribution.reports.endpoints import router as reports
from distribution.runs.endpoints import router as runs
from distribution.settings import DistributionSettings
from servicekit.app import create_app
from servicekit.runtime import Runtime


def build_app(settings: DistributionSettings | None = None, runtime: Runtime | None = None) -> FastAPI:

    settings = settings or DistributionSettings()
    return create_app(
        settings,
        title="Roomtax Distribution",
        description="Collections ledger (double-entry, append-only), the Bank's certification (PR §31(A)), "
        "go-live opening states, monthly distribution runs (PR §31; 33 V.I.C. §54(e), (b)(3)(D)) "
        "and fund balances.",
        routers=[certifications, openings, runs, reports],
        runtime=runtime,
    )

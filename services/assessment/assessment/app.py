"""The assessment service: what every lodging owes for every period, as of any date."""

from __future__ import annotations

from fastapi import FastAPI

from assessment.abatements.endpoints import router as abatements
from assessment.accounts.endpoints import router as accounts
from assessment.accounts.ledger import BalanceCache
from assessment.accounts.repository import attach
from assessment.audits.endpoints import router as audits
from assessment.cases.endpoints import router as cases
from assessment.casework.endpoints import router as proposals
from assessment.crosschecks.endpoints import router as crosschecks
from assessment.dashboard.endpoints import router as dashboard
from assessment.documents.endpoints import router as documents
from assessment.indicators.endpoints import router as indicators
from assessment.jobs.endpoints import router as jobs
from assessment.notices.endpoints import router as notices
from assessment.plans.endpoints import router as plans
from assessment.refunds.endpoints import router as refunds
from assessment.risk.endpoints import router as risk_scores
from assessment.settings import AssessmentSettings
from assessment.timeline.endpoints import router as timeline
from assessment.worklists.endpoints import router as worklists
from assessment.writeoffs.endpoints import router as write_offs
from servicekit.app import create_app
from servicekit.runtime import Runtime


async def _own_balances(app: FastAPI) -> None:
    """The app's requests share one cache of taxcore balances (the app owns it)."""
    runtime = app.state.runtime
    app.state.balances = attach(app.state.sessionmaker, BalanceCache(law=runtime.law), runtime)


def build_app(settings: AssessmentSettings | None = None, runtime: Runtime | None = None) -> FastAPI:
    settings = settings or AssessmentSettings()
    return create_app(
        settings,
        title="Roomtax Assessment",
        description="Per-lodging-period accounts built from filing and registry events: liabilities "
        "recomputed by taxcore, deficiencies, penalties and interest (PR §46, §47; VI §54(i), (l)), "
        "estimated assessments of non-filers (PR §32; VI §54(d)), deficiency notices (PR §2(25), "
        "§33, §34), bond draw requests (PR §33), credits and refunds (PR §42), collection postings "
        "for distribution, and dashboard reads. Case work (PR §13-§15, §34; VI §54(d)): disputes "
        "decided in cases, abatements, write-offs and returned-payment fees as append-only adjustment "
        "facts that taxcore turns into balances, each approved by a second agency person "
        "(maker-checker), on the account's timeline. Official documents (notice of decision, "
        "notices, statement of account for any date) as tagged PDFs in English or Spanish.",
        routers=[
            accounts,
            timeline,
            notices,
            cases,
            abatements,
            refunds,
            write_offs,
            proposals,
            plans,
            jobs,
            dashboard,
            indicators,
            documents,
            crosschecks,
            audits,
            risk_scores,
            worklists,
        ],
        on_startup=_own_balances,
        runtime=runtime,
    )

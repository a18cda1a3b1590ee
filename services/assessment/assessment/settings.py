from __future__ import annotations

from decimal import Decimal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from servicekit.settings import ServiceSettings


class AssessmentSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_prefix="ASSESSMENT_")

    service_name: str = "assessment"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/roomtax_assessment"
    #: seconds between two runs of the daily jobs in the worker (non-filers, lapsed notices, summaries)
    daily_jobs_interval_seconds: float = Field(default=86_400, gt=0)
    #: per-night value the agency uses to estimate a non-filer with no filed history (PR §32
    #: "industry cost"); None = such lodgings are reported by the job, not estimated
    estimate_industry_cost: Decimal | None = None
    #: roles whose people may propose case work that lowers what is owed or pays money out
    #: (reduce/cancel decisions, abatements, write-offs and their reversal, refunds)
    case_proposer_roles: list[str] = Field(default_factory=lambda: ["agency-admin", "agency-officer"])
    #: roles whose people may approve another person's proposal up to ``admin_approval_threshold``
    case_approver_roles: list[str] = Field(default_factory=lambda: ["agency-admin", "agency-officer"])
    #: a proposal lowering or paying out more than this is approved by an agency-admin only
    admin_approval_threshold: Decimal = Field(default=Decimal("1000.00"), ge=0)

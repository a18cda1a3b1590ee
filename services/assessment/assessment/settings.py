from __future__ import annotations

from datetime import time
from decimal import Decimal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from servicekit.settings import ServiceSettings

DEV_DOCUMENT_SECRET = "dev-document-secret"


class AssessmentSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_prefix="ASSESSMENT_")

    service_name: str = "assessment"
    #: key of the HMAC that makes an official document's verification code
    document_secret: str = DEV_DOCUMENT_SECRET
    #: where a holder of a printed document checks its verification code
    public_base_url: str = "http://127.0.0.1:8003"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/roomtax_assessment"
    #: local time of the daily jobs (non-filers, lapsed notices, summaries); they run once a
    #: day across every worker replica (servicekit.schedule), or at a worker's start when
    #: the day's run was missed
    daily_jobs_at: time = time(2, 0)
    #: the agency's clock for ``daily_jobs_at`` (an IANA name; PR and VI keep AST, UTC-4)
    daily_jobs_timezone: str = "America/Puerto_Rico"
    #: seconds before a failed daily run is tried again
    daily_jobs_retry_seconds: float = Field(default=300, gt=0)
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

    def needs_admin(self, amount: Decimal) -> bool:
        """Whether only an agency-admin may approve a proposal of ``amount``."""
        return amount > self.admin_approval_threshold

    def model_post_init(self, _context: object) -> None:
        if self.environment == "production" and self.document_secret == DEV_DOCUMENT_SECRET:
            raise ValueError("ASSESSMENT_DOCUMENT_SECRET must be set outside development")

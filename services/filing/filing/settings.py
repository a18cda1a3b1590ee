from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from servicekit.settings import ServiceSettings

DEV_RECEIPT_SECRET = "dev-receipt-secret"


class FilingSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_prefix="FILING_")

    service_name: str = "filing"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/roomtax_filing"
    #: key of the HMAC that makes a receipt's verification code (PR §28(C) receipts)
    receipt_secret: str = DEV_RECEIPT_SECRET
    #: the agency named on receipts, per jurisdiction (PR §28(C): "the Company"; VI: the Bureau)
    agencies: dict[str, str] = Field(
        default_factory=lambda: {
            "PR": "Puerto Rico Tourism Company",
            "VI": "Virgin Islands Bureau of Internal Revenue",
        }
    )
    #: where a holder of a printed receipt checks its verification code
    public_base_url: str = "http://127.0.0.1:8002"
    #: rows one remittance schedule may carry
    schedule_max_rows: int = Field(default=50_000, ge=1)

    def model_post_init(self, _context: object) -> None:
        if self.environment == "production" and self.receipt_secret == DEV_RECEIPT_SECRET:
            raise ValueError("FILING_RECEIPT_SECRET must be set outside development")

    def agency_name(self, jurisdiction: str) -> str:
        return self.agencies.get(jurisdiction, f"{jurisdiction} room tax administrator")

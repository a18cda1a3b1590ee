from __future__ import annotations

from datetime import date

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from servicekit.settings import ServiceSettings
from taxcore.errors import TaxcoreError
from taxcore.parameters import ParameterTree

DEV_RECEIPT_SECRET = "dev-receipt-secret"


class FilingSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_prefix="FILING_")

    service_name: str = "filing"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/roomtax_filing"
    #: key of the HMAC that makes a receipt's verification code (PR §28(C) receipts)
    receipt_secret: str = DEV_RECEIPT_SECRET
    #: a deployment's override of the agency named on receipts, per jurisdiction code
    #: (``FILING_AGENCIES='{"PR": "..."}'``); by default taxcore's ``agency.name``
    agencies: dict[str, str] = Field(default_factory=dict)
    #: where a holder of a printed receipt checks its verification code
    public_base_url: str = "http://127.0.0.1:8002"
    #: rows one remittance schedule may carry
    schedule_max_rows: int = Field(default=50_000, ge=1)

    def model_post_init(self, _context: object) -> None:
        if self.environment == "production" and self.receipt_secret == DEV_RECEIPT_SECRET:
            raise ValueError("FILING_RECEIPT_SECRET must be set outside development")

    def agency_name(self, jurisdiction: str, on: date, *, law: ParameterTree) -> str:
        """The override, else ``law``'s ``agency.name`` in force on ``on`` (PR §2(12): "the
        Company"; VI §54(b)(3)(B): the Bureau)."""
        if jurisdiction in self.agencies:
            return self.agencies[jurisdiction]
        try:
            return str(law.value(jurisdiction, "agency.name", on))
        except TaxcoreError:
            return f"{jurisdiction} room tax administrator"

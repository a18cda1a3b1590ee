from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from servicekit.settings import ServiceSettings


class DistributionSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_prefix="DISTRIBUTION_")

    service_name: str = "distribution"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/roomtax_distribution"

"""Per-service settings.

Each service subclasses :class:`ServiceSettings` with its own ``env_prefix``
(``REGISTRY_``, ``FILING_``...). Values shared by every service (the broker,
the token keys) may also come from ``ROOMTAX_*`` variables. ``.env`` files are
read. Outside development and test, the built-in development keys are refused.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from servicekit import devkeys

Environment = Literal["development", "test", "production"]


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_prefix="ROOMTAX_")

    service_name: str = "service"
    environment: Environment = "development"
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/roomtax"
    kafka_bootstrap: str = "127.0.0.1:9092"
    # how the Kafka clients connect (servicekit.kafka documents each one)
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_ssl_cafile: str | None = None
    kafka_ssl_certfile: str | None = None
    kafka_ssl_keyfile: str | None = None
    kafka_ssl_key_password: str | None = None
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: str | None = None
    kafka_sasl_oauth_token_file: str | None = None
    kafka_fetch_max_wait_ms: int | None = Field(
        default=None,
        ge=1,
        le=30_000,
        description="how long the broker may hold a consumer's empty fetch, for every consumer "
        "of the worker (a record waits up to half of it on Tansu); unset: each consumer's own "
        "(servicekit.consumer.FETCH_MAX_WAIT_MS, PROMPT_FETCH_MAX_WAIT_MS)",
    )
    jwt_public_key: str = devkeys.DEV_PUBLIC_KEY
    jwt_private_key: str = devkeys.DEV_PRIVATE_KEY
    #: the registry's JWKS (``/.well-known/jwks.json``): its keys are trusted besides
    #: ``jwt_public_key`` (which may then be empty), fetched again on an unknown key id
    jwks_url: str = ""
    jwks_min_refresh_seconds: float = Field(default=30.0, ge=0, le=3600)
    jwt_issuer: str = "roomtax-registry"
    jwt_audience: str = "roomtax"
    token_ttl_seconds: int = Field(default=900, ge=60, le=3600)
    log_level: str = "INFO"
    #: where clients reach this API (the OpenAPI document's ``servers``); empty = the serving host
    public_url: str = ""
    #: the registry's OAuth2 token endpoint, named by every service's OpenAPI security scheme
    token_url: str = "http://127.0.0.1:8001/v1/oauth/token"
    outbox_retention_days: int = 14
    outbox_max_message_bytes: int = Field(
        default=1_000_000,
        ge=1024,
        description="larger outbox rows are parked, not retried forever; keep "
        "it at or below the broker's message.max.bytes (Kafka's default is 1048588)",
    )
    max_body_bytes: int = Field(default=1_048_576, ge=1024, description="request body cap (413 above it)")
    max_upload_bytes: int = Field(
        default=33_554_432, ge=1024, description="body cap on the service's upload routes (schedules)"
    )
    db_pool_size: int = Field(default=10, ge=1, description="API connections kept open (servicekit.db)")
    db_max_overflow: int = Field(
        default=0, ge=0, description="extra connections opened above the pool under load, closed after use"
    )
    db_pool_timeout: float = Field(
        default=5.0,
        gt=0,
        description="seconds a request waits for a pooled connection before a 503 with Retry-After",
    )
    signs_tokens: bool = False  # only the registry holds the private key
    #: seconds between two reloads of the API's revocation denylist (servicekit.revocations)
    revocation_refresh_seconds: float = Field(default=1.0, gt=0, le=60)
    #: the operations port (servicekit.monitoring): a worker's /metrics and /healthz, an API's
    #: /metrics (then no longer on the public port). Unset: workers serve none, APIs serve
    #: /metrics on their public port (development).
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    metrics_host: str = "0.0.0.0"  # noqa: S104 - a pod's port, fenced by its NetworkPolicy

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Service prefix first (``REGISTRY_KAFKA_BOOTSTRAP``), then the shared ``ROOMTAX_``."""
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            EnvSettingsSource(settings_cls, env_prefix="ROOMTAX_"),
            DotEnvSettingsSource(settings_cls, env_file=".env", env_prefix="ROOMTAX_"),
            file_secret_settings,
        )

    @model_validator(mode="after")
    def _check_kafka_security(self) -> ServiceSettings:
        from servicekit.kafka import check

        problems = check(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _refuse_default_secrets(self) -> ServiceSettings:
        if self.environment == "production" and (
            self.jwt_public_key == devkeys.DEV_PUBLIC_KEY
            or (self.signs_tokens and self.jwt_private_key == devkeys.DEV_PRIVATE_KEY)
        ):
            raise ValueError(
                "the development signing keys are refused outside development: "
                "set ROOMTAX_JWT_PUBLIC_KEY (and ROOMTAX_JWT_PRIVATE_KEY on the registry)"
            )
        if not self.jwt_public_key.strip() and not self.jwks_url:
            raise ValueError("set ROOMTAX_JWT_PUBLIC_KEY or ROOMTAX_JWKS_URL: no key would verify a token")
        return self

    @property
    def asyncpg_dsn(self) -> str:
        return self.database_url.replace("postgresql+asyncpg://", "postgresql://")

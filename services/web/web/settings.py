"""Settings of the web app (``WEB_*`` variables, or ``ROOMTAX_*`` for the shared ones)."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEV_SECRET = "dev-web-secret-change-me"


class WebSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", extra="ignore", env_prefix="WEB_", populate_by_name=True
    )

    environment: Literal["development", "test", "production"] = Field(
        default="development", validation_alias=AliasChoices("WEB_ENVIRONMENT", "ROOMTAX_ENVIRONMENT")
    )
    registry_url: str = "http://127.0.0.1:8001"
    filing_url: str = "http://127.0.0.1:8002"
    assessment_url: str = "http://127.0.0.1:8003"
    distribution_url: str = "http://127.0.0.1:8004"
    # encrypts and signs the session cookie and derives CSRF tokens; refused as-is in production
    secret_key: str = DEV_SECRET
    # Secure cookies (HTTPS only): on in production, off by default for plain-http local
    # development and tests (WEB_COOKIE_SECURE=true turns it on anywhere)
    cookie_secure_setting: bool | None = Field(
        default=None, validation_alias=AliasChoices("WEB_COOKIE_SECURE", "cookie_secure")
    )
    session_max_age_seconds: int = 12 * 3600
    # how often a signed-in session is re-checked at the registry (renewing the access
    # token): a session ended elsewhere (sign-out, password change, account disabled)
    # stops working here within this many seconds
    session_check_seconds: int = 30
    api_timeout_seconds: float = 20.0
    # proxies (the ingress) whose X-Forwarded-For names the browser's address; that address
    # is passed on to the registry, which throttles sign-ins per address
    trusted_proxies: str = "127.0.0.1"
    log_level: str = "INFO"
    # OpenID Connect sign-in through the agency's identity provider (web.oidc; empty issuer:
    # off, only e-mail and password). The registry must trust the same issuer, with
    # REGISTRY_OIDC_AUDIENCE = this client id (docs/operations.md).
    oidc_issuer: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: str = ""
    # where the provider sends the browser back: this app's /sign-in/oidc/callback
    oidc_redirect_uri: str = ""
    oidc_scope: str = "openid email profile"
    # the provider's name on the sign-in button ("Sign in with …")
    oidc_name: str = "OpenID Connect"

    @model_validator(mode="after")
    def _refuse_defaults(self) -> WebSettings:
        if self.environment == "production":
            if self.secret_key == DEV_SECRET or len(self.secret_key) < 32:
                raise ValueError("WEB_SECRET_KEY must be set (32 characters or more) in production")
            if self.cookie_secure_setting is False:
                raise ValueError("WEB_COOKIE_SECURE cannot be off in production")
        if self.oidc_issuer:
            if not (self.oidc_client_id and self.oidc_redirect_uri):
                raise ValueError(
                    "WEB_OIDC_CLIENT_ID and WEB_OIDC_REDIRECT_URI must be set with WEB_OIDC_ISSUER"
                )
            if self.environment == "production" and not (
                self.oidc_issuer.startswith("https://") and self.oidc_redirect_uri.startswith("https://")
            ):
                raise ValueError("WEB_OIDC_ISSUER and WEB_OIDC_REDIRECT_URI must be https:// in production")
        return self

    @property
    def cookie_secure(self) -> bool:
        if self.cookie_secure_setting is not None:
            return self.cookie_secure_setting
        return self.environment == "production"

    @property
    def cookie_name(self) -> str:
        """``__Host-`` cookies are only accepted over HTTPS, for this host, on path /."""
        return "__Host-roomtax" if self.cookie_secure else "roomtax_session"

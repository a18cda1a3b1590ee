from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from servicekit.settings import ServiceSettings


class RegistrySettings(ServiceSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_prefix="REGISTRY_")

    service_name: str = "registry"
    signs_tokens: bool = True
    database_url: str = "postgresql+asyncpg://postgres@127.0.0.1:5432/roomtax_registry"
    bootstrap_admin_client_id: str = "agency-admin"
    bootstrap_admin_secret: str = "dev-admin-secret"  # refused in production, see below
    # people signing in (registry.users): throttle failed attempts per account and per address
    login_window_seconds: int = 900
    login_max_failures_per_account: int = 5
    login_max_failures_per_ip: int = 50
    person_session_hours: int = 12
    # peers whose X-Forwarded-For is believed (the web app); comma-separated CIDRs
    trusted_proxies: str = "127.0.0.1/32,::1/128"
    # OpenID Connect sign-in (registry.users.oidc): the provider whose ID tokens are trusted
    # (empty: off), the client id they are issued to (their ``aud``: the web app's client at
    # the provider), and the claim whose value is the registry user's e-mail address
    oidc_issuer: str = ""
    oidc_audience: str = ""
    oidc_user_claim: str = "email"

    def model_post_init(self, _context: object) -> None:
        if self.environment == "production" and self.bootstrap_admin_secret == "dev-admin-secret":
            raise ValueError("REGISTRY_BOOTSTRAP_ADMIN_SECRET must be set outside development")
        if self.oidc_issuer and not self.oidc_audience:
            raise ValueError("REGISTRY_OIDC_AUDIENCE must name the client the ID tokens are issued to")

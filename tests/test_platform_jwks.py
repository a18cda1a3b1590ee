"""Key rotation across services through the registry's JWKS (issue 16).

The registry and filing are served in-process (uvicorn threads) on fresh databases.
Filing trusts no configured PEM: only what ``/.well-known/jwks.json`` publishes. The
registry is restarted on the same port with a new signing key; filing, not restarted,
accepts the new key's tokens (it fetches the JWKS again on the unknown ``kid``) and still
the old key's while the registry publishes it.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from filing.app import build_app as filing_app
from filing.settings import FilingSettings
from registry.app import build_app as registry_app
from registry.settings import RegistrySettings
from servicekit.auth import Principal, TokenIssuer, key_id
from servicekit.testing import ServedApp, free_port, fresh_database, new_key_pair

ROOT = Path(__file__).resolve().parent.parent
NO_BROKER = "127.0.0.1:9"  # the APIs never touch the broker (their events leave through the outbox)


def _database(service: str) -> str:
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(
            asyncio.run, fresh_database(f"roomtax_jwks_{service}", ROOT / "services" / service / "migrations")
        ).result()


def _registry(database: str, private: str, public: str) -> FastAPI:
    return registry_app(
        RegistrySettings(
            environment="test",
            database_url=database,
            kafka_bootstrap=NO_BROKER,
            jwt_private_key=private,
            jwt_public_key=public,
        )
    )


def _token(registry: str) -> str:
    response = httpx.post(
        f"{registry}/v1/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("agency-admin", "dev-admin-secret"),
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def _declarations(filing: str, token: str) -> int:
    return httpx.get(
        f"{filing}/v1/declarations", headers={"Authorization": f"Bearer {token}"}, timeout=10
    ).status_code


@pytest.fixture(scope="module")
def databases() -> tuple[str, str]:
    return _database("registry"), _database("filing")


def test_a_rotated_signing_key_is_trusted_without_restarting_filing(databases: tuple[str, str]) -> None:
    registry_db, filing_db = databases
    old_private, old_public = new_key_pair()
    new_private, new_public = new_key_pair()
    port = free_port()
    registry = f"http://127.0.0.1:{port}"
    with ServedApp(_registry(registry_db, old_private, old_public), port=port):
        served_filing = filing_app(
            FilingSettings(
                environment="test",
                database_url=filing_db,
                kafka_bootstrap=NO_BROKER,
                jwt_public_key="",
                jwks_url=f"{registry}/.well-known/jwks.json",
                jwks_min_refresh_seconds=0,
            )
        )
        filing_server = ServedApp(served_filing)
        filing_server.__enter__()
        try:
            filing = filing_server.url
            old_token = _token(registry)
            assert _declarations(filing, old_token) == 200
            assert served_filing.state.token_verifier.key_ids == {key_id(old_public)}
            # a key the registry does not publish (yet) is refused
            unpublished = TokenIssuer(
                new_private, issuer="roomtax-registry", audience="roomtax", ttl_seconds=300
            )
            early, _ = unpublished.issue(Principal(client_id="agency-admin", role="agency-admin"))
            assert _declarations(filing, early) == 401
        except BaseException:
            filing_server.__exit__()
            raise
    try:
        # the registry restarts signing with the new key, publishing both
        with ServedApp(_registry(registry_db, new_private, old_public + new_public), port=port):
            published = httpx.get(f"{registry}/.well-known/jwks.json", timeout=10).json()
            assert [k["kid"] for k in published["keys"]] == [key_id(old_public), key_id(new_public)]
            assert {(k["kty"], k["crv"], k["alg"], k["use"]) for k in published["keys"]} == {
                ("OKP", "Ed25519", "EdDSA", "sig")
            }
            new_token = _token(registry)
            assert _declarations(filing, new_token) == 200
            assert _declarations(filing, old_token) == 200  # still published: tokens in flight live on
            assert served_filing.state.token_verifier.key_ids == {key_id(old_public), key_id(new_public)}
    finally:
        filing_server.__exit__()


def test_oauth_metadata_names_the_token_endpoint_and_the_jwks(databases: tuple[str, str]) -> None:
    private, public = new_key_pair()
    with ServedApp(_registry(databases[0], private, public)) as served:
        metadata = httpx.get(f"{served.url}/.well-known/oauth-authorization-server", timeout=10).json()
        jwks = httpx.get(f"{served.url}/.well-known/jwks.json", timeout=10)
    assert metadata == {
        "issuer": "roomtax-registry",
        "token_endpoint": f"{served.url}/v1/oauth/token",
        "jwks_uri": f"{served.url}/.well-known/jwks.json",
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "token_endpoint_auth_signing_alg_values_supported": ["EdDSA"],
        "response_types_supported": ["token"],
        "scopes_supported": [],
        "service_documentation": f"{served.url}/docs",
    }
    assert jwks.headers["cache-control"] == "public, max-age=60"
    assert [k["kid"] for k in jwks.json()["keys"]] == [key_id(public)]

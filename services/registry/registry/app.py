"""The registry service: who must collect the tax, and who may file for whom."""

from __future__ import annotations

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import async_sessionmaker

from registry.authorizations.endpoints import router as authorizations
from registry.bonds.endpoints import router as bonds
from registry.certificates.endpoints import router as certificates
from registry.lodgings.endpoints import router as lodgings
from registry.oauth import repository as clients
from registry.oauth.endpoints import router as oauth
from registry.oauth.schemas import ClientCreate
from registry.oauth.service import create_client
from registry.oauth.wellknown import router as wellknown
from registry.parties.endpoints import router as parties
from registry.settings import RegistrySettings
from registry.users.endpoints import attempts as people_sign_in
from registry.users.endpoints import router as people
from servicekit.app import create_app
from servicekit.runtime import Runtime


async def ensure_bootstrap_admin(sessionmaker: async_sessionmaker, settings: RegistrySettings) -> None:  # type: ignore[type-arg]
    """The first agency-admin client, from settings, so a new deployment can log in."""
    async with sessionmaker() as session, session.begin():
        if await clients.client(session, settings.bootstrap_admin_client_id) is None:
            await create_client(
                session,
                body=ClientCreate(name="bootstrap agency admin", role="agency-admin"),
                client_id=settings.bootstrap_admin_client_id,
                secret=settings.bootstrap_admin_secret,
            )


def build_app(settings: RegistrySettings | None = None, runtime: Runtime | None = None) -> FastAPI:
    settings = settings or RegistrySettings()

    async def startup(app: FastAPI) -> None:
        await ensure_bootstrap_admin(app.state.sessionmaker, settings)

    return create_app(
        settings,
        title="Roomtax Registry",
        description="Lodgings, operators, online intermediaries, tax account numbers (PR §26), "
        "bonds (PR §27), exemption certificates (PR §24(F)), API clients and people (user accounts).",
        routers=[
            wellknown,
            oauth,
            people_sign_in,
            people,
            parties,
            lodgings,
            authorizations,
            bonds,
            certificates,
        ],
        on_startup=startup,
        runtime=runtime,
    )

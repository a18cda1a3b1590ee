"""Request dependencies that resolve a path parameter to a row, raising the 404 themselves.

A caller never learns whether another's object exists: what it may not see is a 404, the
same as what does not exist (CONTRIBUTING, "another caller's object is a 404").
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

from fastapi import Path
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.auth import Principal, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import NotFound

T = TypeVar("T")


def visible_lodging(
    lookup: Callable[[AsyncSession, Principal, str], Awaitable[T | None]], *, description: str
) -> Callable[..., Awaitable[T]]:
    """A dependency giving the lodging of the ``{lodging_id}`` path parameter that ``lookup``
    finds among those the caller may see (by tax account number or id), else a 404."""

    async def resolve(
        session: SessionDep,
        principal: PrincipalDep,
        lodging_id: Annotated[str, Path(description=description)],
    ) -> T:
        lodging = await lookup(session, principal, lodging_id)
        if lodging is None:
            raise NotFound(f"no lodging {lodging_id!r}")
        return lodging

    return resolve

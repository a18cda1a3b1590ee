"""Resolvers that raise the 404 themselves (another's account is never revealed)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from assessment.accounts import repository
from assessment.accounts.ledger import Facts
from servicekit.auth import PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import NotFound


async def get_facts(
    session: SessionDep,
    principal: PrincipalDep,
    tax_account: Annotated[str, Path(description="the lodging's tax account number (PR §26)")],
) -> Facts:
    facts = await repository.load_facts(session, tax_account)
    if facts is None or not repository.visible(principal, facts.lodging):
        raise NotFound(f"no account {tax_account!r}")
    return facts


FactsDep = Annotated[Facts, Depends(get_facts)]

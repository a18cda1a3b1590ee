"""Resolvers that raise the 404 themselves (another's account is never revealed), and what a
case-work route acts with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Annotated

from fastapi import Depends, Path, Request

from assessment.accounts import repository
from assessment.accounts.ledger import Facts
from assessment.casework import work
from assessment.settings import AssessmentSettings
from servicekit.auth import Principal, PrincipalDep
from servicekit.db import SessionDep
from servicekit.errors import NotFound
from servicekit.runtime import Runtime, RuntimeDep

TaxAccount = Annotated[str, Path(description="the lodging's tax account number (PR §26)")]


def _visible(principal: Principal, tax_account: str, facts: Facts | None) -> Facts:
    if facts is None or not repository.visible(principal, facts.lodging):
        raise NotFound(f"no account {tax_account!r}")
    return facts


async def get_facts(session: SessionDep, principal: PrincipalDep, tax_account: TaxAccount) -> Facts:
    return _visible(principal, tax_account, await repository.load_facts(session, tax_account))


FactsDep = Annotated[Facts, Depends(get_facts)]


@dataclass(frozen=True, slots=True)
class ReadFacts:
    """Loads a visible account's facts for a read only (``accounts.repository.load_facts_read_only``:
    rows, not ORM objects), with their traces or without; another's account is a 404."""

    session: SessionDep
    principal: Principal
    tax_account: str

    async def load(self, *, traces: bool) -> Facts:
        facts = await repository.load_facts_read_only(self.session, self.tax_account, traces=traces)
        return _visible(self.principal, self.tax_account, facts)


def read_facts(session: SessionDep, principal: PrincipalDep, tax_account: TaxAccount) -> ReadFacts:
    return ReadFacts(session, principal, tax_account)


ReadFactsDep = Annotated[ReadFacts, Depends(read_facts)]


def settings_of(request: Request) -> AssessmentSettings:
    settings: AssessmentSettings = request.app.state.settings
    return settings


SettingsDep = Annotated[AssessmentSettings, Depends(settings_of)]


@dataclass(frozen=True, slots=True)
class CaseWork:
    """What a case-work route acts with: the request's transaction, the caller, the settings, the
    runtime, and the request's day (read once: a request that straddles midnight acts on one day)."""

    session: SessionDep
    principal: Principal
    settings: AssessmentSettings
    #: the app's law and clock (:mod:`servicekit.runtime`)
    runtime: Runtime
    #: the runtime's day when the request began
    today: date

    async def lock(self, tax_account: str) -> None:
        """The account's row lock: its case work is decided one request at a time."""
        await repository.lock_account(self.session, tax_account)

    async def staff_lock(self, tax_account: str, *, what: str) -> None:
        """Agency staff only (403 saying they ``what``), then the account's row lock."""
        await work.staff_lock(self.session, self.principal, tax_account, what=what)

    async def locked_facts(self, tax_account: str, *, staff: str | None = None) -> Facts:
        """The account's facts under its lock; ``staff``: only agency staff do this (403)."""
        if staff is not None:
            work.require_staff(self.principal, staff)
        return await work.locked_facts(self.session, tax_account)


def case_work(
    session: SessionDep, principal: PrincipalDep, settings: SettingsDep, runtime: RuntimeDep
) -> CaseWork:
    return CaseWork(session, principal, settings, runtime, runtime.today())


WorkDep = Annotated[CaseWork, Depends(case_work)]

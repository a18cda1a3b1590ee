"""The data of Rule 6: funds, allocations, each jurisdiction's fiscal-year state, a
month's result, opening states, floors (the models every jurisdiction's rule shares)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taxcore.money import ZERO


class Fund(BaseModel):
    """A public fund that receives collections."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str
    name: str
    section: str


class FundAllocation(BaseModel):
    """Money of one run allocated to one fund, by one rule."""

    model_config = ConfigDict(extra="forbid")

    fund: str
    amount: Decimal
    rule: str
    section: str


class PRCertification(BaseModel):
    """The Bank's certification of a fiscal year's debt-service amount (§31(A)).

    ``first_year_months_remaining``: set only for the fiscal year in which the
    transfers start (the Act's "fiscal year in which this Act is enacted"):
    each monthly transfer is then amount / months remaining, over the last
    that-many months of the fiscal year. Otherwise 1/10 a month from July.
    """

    model_config = ConfigDict(extra="forbid")

    fiscal_year: int
    amount: Decimal
    certified_on: date
    document_reference: str
    first_year_months_remaining: int | None = None


class PRState(BaseModel):
    """Where a PR fiscal year stands after its last distributed month."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: Literal["PR"] = "PR"
    fiscal_year: int
    last_month: str | None = None
    certification: PRCertification | None = None
    """The fiscal year's certification, once a month was run with it (used when none is passed)."""
    debt_service_scheduled: Decimal = ZERO
    """Installments due to the Bank through ``last_month`` (cumulative)."""
    debt_service_transferred: Decimal = ZERO
    debt_service_arrears: Decimal = ZERO
    """Shortfall carried from earlier fiscal years (``distribution.debt_service_arrears_carry``)."""
    held: Decimal = ZERO
    """Collections pending for want of a certification, released by the first certified month."""
    collected: Decimal = ZERO
    """Tax collected in the fiscal year's months so far (including held months)."""
    distributed_base: Decimal = ZERO
    """Total Tax collected on which §31(B) percentages have been computed so far."""
    company_administration: Decimal = ZERO
    treasury_general_fund: Decimal = ZERO
    convention_bureau: Decimal = ZERO
    remainder: Decimal = ZERO

    @property
    def debt_service_shortfall(self) -> Decimal:
        """What the Bank is still owed for months already run (made up from later excess)."""
        owed: Decimal = (
            self.debt_service_scheduled + self.debt_service_arrears - self.debt_service_transferred
        )
        return owed if owed > 0 else Decimal("0.00")


class VIState(BaseModel):
    """Where a VI fiscal year stands after its last distributed month."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: Literal["VI"] = "VI"
    fiscal_year: int
    last_month: str | None = None
    floors_paid: dict[str, Decimal] = Field(default_factory=dict)
    room_tax: Decimal = ZERO
    impact_fee: Decimal = ZERO
    tarf_room_tax: Decimal = ZERO
    tarf_impact_fee: Decimal = ZERO
    general_fund: Decimal = ZERO


class DistributionResult(BaseModel):
    """One month's distribution: ``sum(allocations) + pending == collected``."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: str
    month: str
    collected: Decimal
    """The money this run distributes: ``collected_in_month + released``."""
    collected_in_month: Decimal
    released: Decimal = ZERO
    """Funds held pending in earlier months and distributed by this run."""
    allocations: list[FundAllocation]
    pending: Decimal
    state: Annotated[PRState | VIState, Field(discriminator="jurisdiction")]
    trace: list[dict[str, Any]]


class OpeningState(BaseModel):
    """What each fund of a jurisdiction received in a fiscal year before the platform's first run.

    ``through_month``: the last month distributed outside the platform (a month of
    ``fiscal_year``); the first run is the month after it. ``transferred``: fund code ->
    amount received this fiscal year through that month (a fund left out received nothing).
    """

    model_config = ConfigDict(extra="forbid")

    jurisdiction: str
    fiscal_year: int
    through_month: str
    transferred: dict[str, Decimal]


class OpeningApplied(BaseModel):
    """The state an :class:`OpeningState` gives the first run, and how it was read."""

    model_config = ConfigDict(extra="forbid")

    state: Annotated[PRState | VIState, Field(discriminator="jurisdiction")]
    trace: list[dict[str, Any]]


class Floor(BaseModel):
    """An annual least amount a fund receives, owed in ``installments`` equal monthly parts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fund: str
    annual: Decimal
    installments: int
    section: str


class DebtServiceStatus(BaseModel):
    """Where a fiscal year's certified debt service stands (PR §31(A))."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scheduled_to_date: Decimal
    transferred: Decimal
    arrears_carried: Decimal
    shortfall: Decimal
    held: Decimal

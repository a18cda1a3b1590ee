"""The ledger's shortcut for a period of one declaration version gives exactly the general path.

``ledger.period_bases`` takes ``_one_version`` for a period known by a single liability row (most
periods of a long account); ``fast=False`` takes the general path for every period. Hypothesis
generates accounts (PR and VI; periods of one version, of several versions, of several filers,
estimated, superseded estimates, notices, decisions; operators', intermediaries' and the agency's
returns, amounts with any number of decimals, as of dates before, between and after the facts)
as the recomputation's records (``repository._RECOMPUTED``' columns), and compares the two paths
field by field: the same periods, each with the same values, Decimals by their text (the
balance digest keys on it: ``0.00 + 1.0`` is ``1.00``) and the same filings.
"""

from __future__ import annotations

from collections import namedtuple
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from assessment.accounts import repository
from assessment.accounts.ledger import BalanceCache, Facts, PeriodBasis, period_bases
from assessment.casework.models import AdjustmentFact
from assessment.models import Estimate, Liability, Notice
from taxcore.parameters import default_tree
from taxcore.periods import Period, due_date

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LAW = default_tree()
#: a liability as the batch's recomputation reads it
Record = namedtuple("Record", repository._RECOMPUTED[Liability])  # type: ignore[misc]  # noqa: PYI024

amounts = st.builds(
    lambda units, exponent: Decimal(units).scaleb(-exponent),
    st.integers(min_value=0, max_value=2_000_000),
    st.integers(min_value=0, max_value=3),
)


@st.composite
def accounts(draw: st.DrawFn) -> tuple[Facts, list[date | None]]:
    jurisdiction = draw(st.sampled_from(["PR", "VI"]))
    account = f"{jurisdiction}-0000001-0"
    first = Period(draw(st.integers(2023, 2025)), draw(st.integers(1, 12)))
    periods = [first.add_months(n) for n in range(draw(st.integers(1, 5)))]
    facts = Facts(tax_account=account, jurisdiction=jurisdiction, balances=BalanceCache(law=LAW))
    dates: list[date | None] = [None]
    for n, period in enumerate(periods):
        due = due_date(jurisdiction, period, parameters=LAW)
        days = st.integers(min_value=-15, max_value=120).map(lambda d, due=due: due + timedelta(days=d))
        for f in range(draw(st.integers(0, 3))):  # filings of the period (0: none)
            kind = draw(st.sampled_from(["operator", "operator", "facilitator", "agency"]))
            filed = draw(days)
            for version in range(1, draw(st.integers(1, 3)) + 1):
                facts.liabilities.append(
                    Record(
                        tax_account=account,
                        jurisdiction=jurisdiction,
                        lodging_class=draw(st.sampled_from(["hotel", "inn"])),
                        period=str(period),
                        filing_id=f"f-{n}-{f}",
                        version=version,
                        filer_kind=kind,
                        filed_on=filed,
                        books_kept=draw(st.booleans()),
                        tax=draw(amounts),
                        impact_fee=draw(amounts) if jurisdiction == "VI" else Decimal("0.00"),
                    )
                )
                dates.append(filed)
                filed += timedelta(days=draw(st.integers(0, 60)))
        if draw(st.integers(0, 3)) == 0:
            raised = draw(days)
            facts.estimates.append(
                Estimate(
                    id=f"e-{n}", tax_account=account, period=str(period), raised_on=raised,
                    jurisdiction=jurisdiction, lodging_class="hotel", taxable_base=draw(amounts),
                    tax=draw(amounts), impact_fee=Decimal("0.00"), method="adr", trace=[],
                )
            )  # fmt: skip
            dates.append(raised)
        for k in range(draw(st.integers(0, 2))):
            issued = draw(days)
            facts.notices.append(Notice(id=f"n-{n}-{k}", period=str(period), issued_on=issued))
            dates.append(issued)
        if draw(st.integers(0, 4)) == 0:
            effective = draw(days)
            facts.adjustments.append(
                AdjustmentFact(
                    id=f"a-{n}", seq=n, tax_account=account, jurisdiction=jurisdiction, period=str(period),
                    kind=draw(st.sampled_from(["reduce", "abate"])), component="penalty",
                    amount=draw(amounts), effective_on=effective, section="s", reason="r", approved_by="u",
                )
            )  # fmt: skip
            dates.append(effective)
    as_of = [d - timedelta(days=1) if d is not None else None for d in dates] + dates
    return facts, draw(st.lists(st.sampled_from(as_of), min_size=1, max_size=4))


def exactly(basis: PeriodBasis) -> tuple[Any, ...]:
    """Every field of ``basis`` with its type, Decimals as their text (equal Decimals may not be
    the same text, and the digest keys on the text), taxcore's adjustments by their repr (which
    shows the text), the filings and the estimates (the facts' own rows) by identity."""
    return tuple((name, _exactly(getattr(basis, name))) for name in PeriodBasis.__dataclass_fields__)


def _exactly(v: Any) -> Any:
    if isinstance(v, list):
        return [_exactly(x) for x in v]
    if isinstance(v, Decimal):
        return ("Decimal", str(v))
    if isinstance(v, BaseModel):
        return ("model", repr(v))
    if v is None or isinstance(v, str | int | date):  # bool is an int: the type name tells them apart
        return (type(v).__name__, v)
    return ("row", id(v))


class TestOneVersionShortcut:
    @SETTINGS
    @given(accounts())
    def test_the_shortcut_is_the_general_path(self, drawn: tuple[Facts, list[date | None]]) -> None:
        facts, days = drawn
        for as_of in days:
            fast = period_bases(facts, as_of)
            general = period_bases(facts, as_of, fast=False)
            assert list(fast) == list(general)
            assert [exactly(b) for b in fast.values()] == [exactly(b) for b in general.values()], as_of

    def test_a_period_of_one_version_keeps_the_sum_s_exponent(self) -> None:
        """What the property caught when the shortcut was mutated to return the row's amount as it
        is (``tax=row.tax``: 0 declared, 0.00 summed; another text, another digest), and an
        intermediary's return, which files no declaration (``declaration_filed_on=row.filed_on``)."""
        row = Record(
            tax_account="PR-0000001-0", jurisdiction="PR", lodging_class="hotel", period="2025-01",
            filing_id="f", version=1, filer_kind="facilitator", filed_on=date(2025, 2, 10),
            books_kept=True, tax=Decimal("1.0"), impact_fee=Decimal("0"),
        )  # fmt: skip
        facts = Facts(tax_account="PR-0000001-0", jurisdiction="PR", balances=BalanceCache(law=LAW))
        facts.liabilities.append(row)
        [basis] = period_bases(facts, None).values()
        assert str(basis.tax) == "1.00"
        assert str(basis.impact_fee) == "0.00"
        assert basis.declaration_filed_on is None  # an intermediary's return files no declaration
        assert basis.filings == [row]

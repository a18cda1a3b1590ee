"""A recomputation walks again only the periods whose balance can have changed, and its summaries
are exactly those of the full recomputation.

Each summary row keeps the digest of what its balance was computed from (the period's taxcore
history, the day, the law and taxcore's code: ``BalanceCache.digest``); a recomputation reuses
the stored figures of a period whose digest is the same and rewrites only the rows that changed.
The seeded random accounts of ``test_consumer_batches`` (declarations, amendments, intermediaries'
rows, designated and undesignated payments, a reversal, duplicates) go through the worker's
consumer one event per transaction (every event recomputes, so the stored figures are reused
again and again); then every account's summaries are compared with a full recomputation by a
fresh process (no stored rows, an empty balance cache).
"""

from __future__ import annotations

import random
import shutil
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from assessment_factories import RUNTIME
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from test_consumer_batches import MIGRATIONS, _declaration, interleaved

from assessment.accounts import repository, service
from assessment.accounts.ledger import BalanceCache, PeriodBasis, balance_fingerprint
from assessment.consumers import consumers
from assessment.settings import AssessmentSettings
from servicekit.consumer import EventConsumer
from servicekit.db import make_engine, make_sessionmaker
from servicekit.testing import consumer_records, fresh_database
from taxcore.parameters import PACKAGE_ROOT, load_tree
from taxcore.rules.balance import AccountHistory

SELECT_SUMMARIES = (
    f"SELECT {', '.join(repository.SUMMARY_FIELDS)}, refreshed_at FROM account_summaries ORDER BY 1, 2"
)


async def full_recomputation(s: AsyncSession, accounts: list[str]) -> list[tuple[Any, ...]]:
    """The summary rows of ``accounts`` as a fresh process computes them: no stored row, no memo."""
    out: list[tuple[Any, ...]] = []
    for facts in (await repository.load_facts_many(s, accounts, traces=False)).values():
        facts.balances = BalanceCache(law=RUNTIME.law)
        rows = service.summary_rows(facts, RUNTIME.today())
        out += [tuple(r[c] for c in repository.SUMMARY_FIELDS) for r in rows]
    return sorted(out)


async def stored_rows(sm: async_sessionmaker[AsyncSession]) -> list[tuple[Any, ...]]:
    async with sm() as s:
        return [tuple(r) for r in (await s.execute(text(SELECT_SUMMARIES))).all()]


async def test_stored_figures_are_those_of_the_full_recomputation() -> None:
    url = await fresh_database("roomtax_test_assessment_summary_digest", MIGRATIONS)
    engine = make_engine(url, application_name="summary-digest", pool_size=2)
    sm = make_sessionmaker(engine, service="assessment")
    settings = AssessmentSettings(environment="test", database_url=url)
    registry, filing, _ = consumers(settings, sm, RUNTIME)
    assert isinstance(filing, EventConsumer)
    filing.batch_size = 1  # every event recomputes its account
    filing.max_attempts = 1
    lodgings, events = interleaved()
    await registry.handle_records(consumer_records(lodgings))
    await filing.handle_records(consumer_records(events))
    accounts = sorted({str(e.data["tax_account"]) for e in events})
    on = RUNTIME.today()
    walked: list[str] = []  # the periods walked to today
    async with sm() as s:
        cache = repository.cache_of(s)
    real = cache.balance

    def counting(history: Any, as_of: Any) -> Any:
        if as_of == on:
            walked.append(history.period)
        return real(history, as_of)

    try:
        stored = await stored_rows(sm)
        assert len(stored) > len(accounts)
        assert all(r[12] is not None for r in stored if r[10] != 0)  # open periods: a digest each
        async with sm() as s:
            assert await full_recomputation(s, accounts) == [r[:-1] for r in stored]

        # nothing changed: no period is walked to today again, no row is rewritten
        cache.clear()
        cache.balance = counting  # type: ignore[method-assign]
        async with sm() as s, s.begin():
            await service.recompute_accounts(s, tax_accounts=accounts)
        assert walked == []
        assert await stored_rows(sm) == stored  # refreshed_at too: the rows were left as they were

        # a new declaration of one period: no other period is walked to today
        account, period = accounts[0], "2025-06"
        await filing.handle_records(
            consumer_records([_declaration(account, period, 40, 1, random.Random(1))])
        )
        assert set(walked) <= {period}
        now = await stored_rows(sm)
        assert [r for r in now if r[0] != account] == [r for r in stored if r[0] != account]
        assert any(r[:2] == (account, period) for r in now)
        async with sm() as s:
            assert await full_recomputation(s, accounts) == [r[:-1] for r in now]

        # rows without their digest (as after the migration) are walked and get it back
        walked.clear()
        async with sm() as s, s.begin():
            unset = "UPDATE account_summaries SET balance_digest = NULL WHERE tax_account = :a"
            await s.execute(text(unset), {"a": account})
            await service.recompute_accounts(s, tax_accounts=[account])
        again = await stored_rows(sm)
        assert sorted(walked) == sorted(r[1] for r in again if r[0] == account and r[12] is not None)
        assert [r[:-1] for r in again] == [r[:-1] for r in now]

        # a stored row of a period the account does not know is dropped; rows of the same digest
        # that differ outside their figures (another operator, another day) are written again;
        # the others are left as they were, refreshed_at too
        mine = [r for r in again if r[0] == account and r[12] is not None]
        assert len(mine) >= 2
        (_, first, *_), (_, second, *_) = mine[0], mine[1]
        async with sm() as s, s.begin():
            fields = ", ".join(repository.SUMMARY_FIELDS)
            copy = fields.replace("period", "'2001-01'", 1)
            await s.execute(
                text(f"INSERT INTO account_summaries ({fields}) SELECT {copy} FROM account_summaries "
                     "WHERE tax_account = :a AND period = :p"),
                {"a": account, "p": first},
            )  # fmt: skip
            other = (
                "UPDATE account_summaries SET operator_id = 'op-other' WHERE tax_account = :a AND period = :p"
            )
            await s.execute(text(other), {"a": account, "p": first})
            earlier = "UPDATE account_summaries SET as_of = as_of - 1 WHERE tax_account = :a AND period = :p"
            await s.execute(text(earlier), {"a": account, "p": second})
        touched = await stored_rows(sm)
        assert len(touched) == len(again) + 1
        async with sm() as s, s.begin():
            await service.recompute_accounts(s, tax_accounts=[account])
        fixed = await stored_rows(sm)
        assert [r[:-1] for r in fixed] == [r[:-1] for r in again]
        rewritten = {(account, first), (account, second)}
        assert [r for r in fixed if r[:2] not in rewritten] == [r for r in again if r[:2] not in rewritten]
        was = {r[:2]: r[-1] for r in touched}
        assert [r[:2] for r in fixed if r[-1] > was[r[:2]]] == sorted(rewritten)
    finally:
        cache.__dict__.pop("balance", None)
        await engine.dispose()


class TestDigest:
    def test_another_day_or_history_is_another_digest(self) -> None:
        cache = BalanceCache(law=RUNTIME.law)
        day = RUNTIME.today()
        history = AccountHistory(jurisdiction="PR", period="2025-01", tax=Decimal("900.00"), due_date=day)
        same = AccountHistory(jurisdiction="PR", period="2025-01", tax=Decimal("900.00"), due_date=day)
        assert cache.digest(history, day) == cache.digest(same, day)
        assert len(cache.digest(history, day)) == 16
        assert cache.digest(history, day) != cache.digest(history, day + timedelta(days=1))
        other = history.model_copy(update={"tax": history.tax + 1})
        assert cache.digest(history, day) != cache.digest(other, day)

    def test_the_fingerprint_is_computed_once_per_tree(self) -> None:
        assert balance_fingerprint(RUNTIME.law) is balance_fingerprint(RUNTIME.law)
        assert len(balance_fingerprint(RUNTIME.law)) == 16

    def test_the_same_law_the_same_fingerprint_another_value_another(self, tmp_path: Path) -> None:
        root = tmp_path / "parameters"
        shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("*.py", "__pycache__", "py.typed"))
        same = load_tree(root)
        assert same is not RUNTIME.law
        assert balance_fingerprint(same) == balance_fingerprint(RUNTIME.law)
        rate = root / "PR" / "penalties" / "interest_rate.yaml"
        text = rate.read_text(encoding="utf-8")
        assert "value: 0.10\n" in text
        rate.write_text(text.replace("value: 0.10\n", "value: 0.11\n", 1), encoding="utf-8")
        other = load_tree(root)
        assert balance_fingerprint(other) != balance_fingerprint(RUNTIME.law)
        day = RUNTIME.today()
        history = AccountHistory(jurisdiction="PR", period="2025-01", tax=Decimal("900.00"), due_date=day)
        assert BalanceCache(law=other).digest(history, day) != BalanceCache(law=RUNTIME.law).digest(
            history, day
        )

    def test_a_period_digest_is_the_digest_of_its_history_whatever_was_memoized(self) -> None:
        day = RUNTIME.today()
        basis = PeriodBasis(
            period="2025-01", due_date=day, basis="declaration", tax=Decimal("900.00"),
            impact_fee=Decimal("0"), declaration_filed_on=day, books_kept=True, notice_on=None,
            filings=[], estimate=None, superseded_estimate=None,
        )  # fmt: skip
        pieces = {"p1": (day, Decimal("100.00"))}
        changed = [
            (replace(basis, tax=Decimal("900.01")), pieces),
            (replace(basis, tax=Decimal("900.0")), pieces),  # equal amount, other text: another history key
            (replace(basis, impact_fee=Decimal("1.00")), pieces),
            (replace(basis, due_date=day - timedelta(days=1)), pieces),
            (replace(basis, declaration_filed_on=None), pieces),
            (replace(basis, books_kept=False), pieces),
            (replace(basis, notice_on=day), pieces),
            (replace(basis, period="2025-02"), pieces),
            (basis, {"p1": (day, Decimal("100.01"))}),
            (basis, {"p2": (day, Decimal("100.00"))}),
            (basis, {"p1": (day - timedelta(days=1), Decimal("100.00"))}),
            (basis, {}),
        ]
        cache = BalanceCache(law=RUNTIME.law)
        first = cache.period_digest(basis, "PR", pieces, day)
        for b, p in changed:  # memoized one after the other: none answers for another
            assert cache.period_digest(b, "PR", p, day) == cache.digest(b.history("PR", p), day)
            assert cache.period_digest(b, "PR", p, day) != first
        assert (
            cache.period_digest(basis, "PR", pieces, day)
            == first
            == cache.digest(basis.history("PR", pieces), day)
        )
        assert cache.period_digest(basis, "PR", pieces, day + timedelta(days=1)) != first
        assert cache.period_digest(basis, "VI", pieces, day) != first
        assert BalanceCache(law=RUNTIME.law).period_digest(basis, "PR", pieces, day) == first

"""The law and the day a filing app computes with are its runtime's, not the process globals.

An app built with a pinned runtime (a parameter tree where PR's general rate is 10% instead of
9%, and a day before the period's due date) files a declaration by THAT law and on THAT day,
while the packaged tree (``default_tree()``) and the machine's date say otherwise: nothing on
the way reads the globals.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import pytest
from fastapi import FastAPI
from filing_factories import as_operator, declaration, file, make_lodging

from filing.app import build_app
from filing.settings import FilingSettings
from servicekit.runtime import PinnedClock, Runtime
from servicekit.testing import BrokerProcess, rolled_back, serving
from taxcore.parameters import PACKAGE_ROOT, default_tree, load_tree
from taxcore.periods import Period

DAY = date(2026, 11, 5)  # 2026-10 is due on 2026-11-10 (PR §28)


def amended_tree(root: Path) -> Path:
    """The packaged parameters with PR's general rate (§24(B)) at 10%."""
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("*.py", "__pycache__", "py.typed"))
    rate = root / "PR" / "rates" / "general.yaml"
    text = rate.read_text(encoding="utf-8")
    assert "    value: 0.09\n" in text
    rate.write_text(text.replace("    value: 0.09\n", "    value: 0.10\n"), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
async def pinned_app(
    filing_db: str, broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FastAPI]:
    law = load_tree(amended_tree(tmp_path_factory.mktemp("law") / "parameters"))
    settings = FilingSettings(environment="test", database_url=filing_db, kafka_bootstrap=broker.bootstrap)
    async with serving(build_app(settings, runtime=Runtime(law=law, clock=PinnedClock(DAY)))) as app:
        yield app


class TestPinnedRuntime:
    async def test_a_declaration_is_computed_by_the_runtimes_law_on_its_day(
        self, pinned_app: FastAPI
    ) -> None:
        # the globals disagree with the runtime, so a result that followed them would show it
        packaged = default_tree().value("PR", "rates.general", Period(2026, 10).first_day)
        assert packaged != pinned_app.state.runtime.law.value("PR", "rates.general", DAY)
        assert date.today() != DAY
        async with rolled_back(pinned_app) as db:
            hotel = await make_lodging(db)
            out = await file(pinned_app.state.test_client, declaration(hotel), as_operator(hotel.operator_id))
        assert (out["computed"]["rate"], out["computed"]["tax"], out["computed"]["total_due"]) == (
            "0.1",  # the tree's value as written (the packaged file writes 0.09)
            "1000.00",
            "1000.00",
        )

        assert (out["filed_on"], out["due_date"], out["late"]) == ("2026-11-05", "2026-11-10", False)

"""A PR fiscal year (FY 2027: July 2026 - June 2027) under §31, with one short month and the catch-up."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
from distribution_factories import AUDITOR, allocated, certify, collect, run
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

MONTHS = [
    "2026-07",
    "2026-08",
    "2026-09",
    "2026-10",
    "2026-11",
    "2026-12",
    "2027-01",
    "2027-02",
    "2027-03",
    "2027-04",
    "2027-05",
    "2027-06",
]
D = Decimal


def expected(month: str) -> dict[str, Decimal]:
    """Worked by hand from §31 with a $1,200,000 certification ($120,000 a month, July - April)."""
    normal = {
        "pr_bank_special_account": D("120000.00"),
        "pr_company_administration": D("20000.00"),
        "pr_treasury_general_fund": D("50000.00"),
        "pr_convention_bureau": D("375000.00"),
        "pr_remainder": D("435000.00"),
    }
    if month == "2026-10":  # short: $100,000 all to the Bank, $20,000 short
        return {**{k: D("0.00") for k in normal}, "pr_bank_special_account": D("100000.00")}
    if month == "2026-11":  # catch-up: Bank 120,000 + 20,000; Bureau 375,000 + 375,000
        return {
            **normal,
            "pr_bank_special_account": D("140000.00"),
            "pr_convention_bureau": D("750000.00"),
            "pr_remainder": D("40000.00"),
        }
    if month in ("2027-05", "2027-06"):  # the ten installments are paid
        return {**normal, "pr_bank_special_account": D("0.00"), "pr_remainder": D("555000.00")}
    return normal


class TestPRFiscalYear:
    async def test_twelve_months_with_a_short_month_and_catch_up(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await certify(client, 2027, "1200000.00")
        for month in MONTHS:
            y, m = map(int, month.split("-"))
            amount = "100000.00" if month == "2026-10" else "1000000.00"
            await collect(db, amount=amount, collected_on=date(y, m, 15))
            if month == "2026-08":
                await collect(db, amount="500.00", collected_on=date(y, m, 20), component="penalty")
            body = await run(client, "PR", month)
            got = allocated(body)
            other = got.pop("other:PR", None)
            assert got == expected(month), month
            if month == "2026-08":
                assert other == D("500.00")
                assert body["collected"] == "1000500.00"
            assert D(body["pending"]) == 0
            assert sum(got.values()) + (other or 0) == D(body["collected"])

            if month == "2026-10":
                summary = (
                    await client.get(
                        "/v1/fiscal-years/2027/summary", params={"jurisdiction": "PR"}, headers=AUDITOR
                    )
                ).json()
                assert summary["debt_service"]["shortfall"] == "20000.00"
                bureau = next(f for f in summary["funds"] if f["account"] == "fund:pr_convention_bureau")
                assert bureau["received"] == "1125000.00"
                assert bureau["floor"]["owed_to_date"] == "1500000.00"
                assert bureau["floor"]["shortfall_to_date"] == "375000.00"
                assert bureau["floor"]["on_track"] is False
                assert summary["on_track"] is False

        summary = (
            await client.get("/v1/fiscal-years/2027/summary", params={"jurisdiction": "PR"}, headers=AUDITOR)
        ).json()
        assert summary["months_run"] == 12
        assert summary["collected"] == "11100500.00"
        received = {f["account"]: f["received"] for f in summary["funds"]}
        assert received == {
            "fund:pr_bank_special_account": "1200000.00",
            "fund:pr_company_administration": "220000.00",
            "fund:pr_treasury_general_fund": "550000.00",
            "fund:pr_convention_bureau": "4500000.00",
            "fund:pr_remainder": "4630000.00",
            "other:PR": "500.00",
        }
        bureau = next(f for f in summary["funds"] if f["account"] == "fund:pr_convention_bureau")
        floor = bureau["floor"]
        assert D(floor["annual"]) == D(floor["owed_to_date"]) == D("4500000.00")
        assert (floor["installments"], floor["deadline"], floor["shortfall_to_date"]) == (
            12,
            "2027-06-30",
            "0.00",
        )
        assert (floor["on_track"], floor["met"], floor["section"]) == (True, True, "§31(B)(iii)")
        assert summary["debt_service"] | {"certification_id": None} == {
            "certification_id": None,
            "certified": "1200000.00",
            "scheduled_to_date": "1200000.00",
            "transferred": "1200000.00",
            "arrears_carried": "0.00",
            "shortfall": "0.00",
            "on_track": True,
        }
        assert summary["on_track"] is True

        funds = (
            await client.get(
                "/v1/funds", params={"jurisdiction": "PR", "as_of": "2027-06-30"}, headers=AUDITOR
            )
        ).json()
        assert (funds["collected"], funds["pending"], funds["distributed"]) == (
            "11100500.00",
            "0.00",
            "11100500.00",
        )
        balances = {a["account"]: a["balance"] for a in funds["accounts"]}
        assert balances["fund:pr_convention_bureau"] == "4500000.00"
        assert balances["fund:pr_remainder"] == "4630000.00"
        mid = (
            await client.get(
                "/v1/funds", params={"jurisdiction": "PR", "as_of": "2026-10-31"}, headers=AUDITOR
            )
        ).json()
        assert {a["account"]: a["balance"] for a in mid["accounts"]}["fund:pr_bank_special_account"] == (
            "460000.00"
        )

        by_month = (
            await client.get(
                "/v1/allocations", params={"jurisdiction": "PR", "fiscal_year": 2027}, headers=AUDITOR
            )
        ).json()
        assert [m["month"] for m in by_month["months"]] == MONTHS
        assert by_month["months"][4]["allocations"]["fund:pr_bank_special_account"] == "140000.00"
        assert by_month["totals"]["fund:pr_company_administration"] == "220000.00"

        tb = (
            await client.get("/v1/ledger/trial-balance", params={"jurisdiction": "PR"}, headers=AUDITOR)
        ).json()
        assert tb["balanced"] is True
        assert tb["total_debit"] == tb["total_credit"] == "22201000.00"

    async def test_uncertified_months_are_held_then_released(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await collect(db, amount="300000.00", collected_on=date(2026, 7, 10))
        july = await run(client, "PR", "2026-07")
        assert (july["allocations"], july["pending"], july["collected"]) == ([], "300000.00", "300000.00")
        assert july["journal_entry_id"] is None
        await certify(client, 2027, "1000000.00")
        await collect(db, amount="700000.00", collected_on=date(2026, 8, 10))
        august = await run(client, "PR", "2026-08")
        assert (august["released"], august["collected"], august["pending"]) == (
            "300000.00",
            "1000000.00",
            "0.00",
        )
        # two installments of 1/10 of 1,000,000 catch up; 2%/5% of 1,000,000; the Bureau's two installments
        assert allocated(august) == {
            "pr_bank_special_account": D("200000.00"),
            "pr_company_administration": D("20000.00"),
            "pr_treasury_general_fund": D("50000.00"),
            "pr_convention_bureau": D("730000.00"),
            "pr_remainder": D("0.00"),
        }
        funds = (
            await client.get(
                "/v1/funds", params={"jurisdiction": "PR", "as_of": "2026-08-31"}, headers=AUDITOR
            )
        ).json()
        assert (funds["pending"], funds["distributed"], funds["conserved"]) == ("0.00", "1000000.00", True)

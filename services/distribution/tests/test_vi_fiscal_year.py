"""A VI fiscal year (FY 2027: October 2026 - September 2027) under §54(e) and (b)(3)(D)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import httpx
from distribution_factories import AUDITOR, allocated, collect, run
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

D = Decimal
EARMARKS = (  # §54(e)(2)(1)-(4): the Fund's 15% of the impact fee, 25% each
    "vi_tarf_virgin_islands_advertising",
    "vi_tarf_st_john_advertising",
    "vi_tarf_st_croix_advertising",
    "vi_tarf_marine_industry_advertising",
)
MONTHS = ["2026-10", "2026-11", "2026-12", "2027-01", "2027-02", "2027-03", "2027-04", "2027-05", "2027-06"]


class TestVIFiscalYear:
    async def test_floors_met_by_june_30(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        for month in MONTHS:
            y, m = map(int, month.split("-"))
            await collect(db, jurisdiction="VI", amount="500000.00", collected_on=date(y, m, 5))
            await collect(
                db, jurisdiction="VI", component="impact_fee", amount="10000.00", collected_on=date(y, m, 6)
            )
            await collect(
                db, jurisdiction="VI", component="interest", amount="12.34", collected_on=date(y, m, 7)
            )
            body = await run(client, "VI", month)
            if month == "2026-10":
                # floors: 1,000,000 / 9; 1,000,000 / 12; 500,000 / 12 (twice), rounded half-up;
                # the Fund: room tax 500,000.00 - 277,777.78; impact fee 15% x 10,000.00 =
                # 1,500.00 split 25% (375.00) to each §54(e)(2) earmark fund; 85% General Fund
                assert allocated(body) == {
                    "vi_agriculture_revolving_fund": D("111111.11"),
                    "vi_sports_tourism": D("83333.33"),
                    "vi_department_of_education": D("41666.67"),
                    "vi_sports_parks_recreation": D("41666.67"),
                    "vi_tourism_advertising_revolving_fund": D("222222.22"),
                    **{code: D("375.00") for code in EARMARKS},
                    "vi_general_fund": D("8500.00"),
                    "other:VI": D("12.34"),
                }
                earmarked = [a for a in body["allocations"] if a["fund"] in EARMARKS]
                assert [(a["account"], a["rule"], a["section"]) for a in earmarked] == [
                    (f"fund:{code}", "vi.impact_fee_tarf", f"§54(b)(3)(D)(i); §54(e)(2)({n})")
                    for n, code in enumerate(EARMARKS, start=1)
                ]
            assert sum(allocated(body).values()) == D(body["collected"]) == D("510012.34")

        summary = (
            await client.get("/v1/fiscal-years/2027/summary", params={"jurisdiction": "VI"}, headers=AUDITOR)
        ).json()
        funds = {f["account"]: f for f in summary["funds"]}
        agriculture = funds["fund:vi_agriculture_revolving_fund"]
        assert agriculture["received"] == "1000000.00"
        assert agriculture["floor"]["deadline"] == "2027-06-30"
        assert (agriculture["floor"]["met"], agriculture["floor"]["on_track"]) == (True, True)
        for code, received in (
            ("vi_sports_tourism", "750000.00"),
            ("vi_department_of_education", "375000.00"),
            ("vi_sports_parks_recreation", "375000.00"),
        ):
            fund = funds[f"fund:{code}"]
            assert fund["received"] == received
            assert D(fund["floor"]["owed_to_date"]) == D(received)
            assert (fund["floor"]["on_track"], fund["floor"]["met"]) == (True, False)
            assert fund["floor"]["deadline"] == "2027-09-30"
        # room tax only: 4,500,000.00 - 2,500,000.00 of floors through June
        assert funds["fund:vi_tourism_advertising_revolving_fund"]["received"] == "2000000.00"
        assert funds["fund:vi_tourism_advertising_revolving_fund"]["floor"] is None
        for n, code in enumerate(EARMARKS, start=1):  # 9 x 375.00
            earmark = funds[f"fund:{code}"]
            assert (earmark["received"], earmark["floor"]) == ("3375.00", None)
            assert earmark["section"] == f"§54(e)(2)({n})"
            assert earmark["name"].startswith("Tourism Advertising Revolving Fund: ")
        assert funds["fund:vi_general_fund"]["received"] == "76500.00"
        assert funds["other:VI"]["received"] == "111.06"
        assert summary["on_track"] is True
        assert summary["debt_service"] is None

        balances = (
            await client.get(
                "/v1/funds", params={"jurisdiction": "VI", "as_of": "2027-06-30"}, headers=AUDITOR
            )
        ).json()
        assert (balances["collected"], balances["distributed"], balances["pending"]) == (
            "4590111.06",
            "4590111.06",
            "0.00",
        )
        by_account = {a["account"]: a for a in balances["accounts"]}
        for code in EARMARKS:
            assert (by_account[f"fund:{code}"]["kind"], by_account[f"fund:{code}"]["balance"]) == (
                "fund",
                "3375.00",
            )

    async def test_a_short_month_is_made_up_in_priority_order(
        self, client: httpx.AsyncClient, db: async_sessionmaker[AsyncSession]
    ) -> None:
        await collect(db, jurisdiction="VI", amount="150000.00", collected_on=date(2026, 10, 5))
        october = await run(client, "VI", "2026-10")
        assert allocated(october) == {
            "vi_agriculture_revolving_fund": D("111111.11"),
            "vi_sports_tourism": D("38888.89"),
            "vi_department_of_education": D("0.00"),
            "vi_sports_parks_recreation": D("0.00"),
            "vi_tourism_advertising_revolving_fund": D("0.00"),
            **{code: D("0.00") for code in EARMARKS},
            "vi_general_fund": D("0.00"),
        }
        await collect(db, jurisdiction="VI", amount="1000000.00", collected_on=date(2026, 11, 5))
        november = await run(client, "VI", "2026-11")
        # owed by month 2: 222,222.22; 166,666.67; 83,333.33; 83,333.33
        got = allocated(november)
        assert got["vi_sports_tourism"] == D("166666.67") - D("38888.89")
        assert got["vi_department_of_education"] == D("83333.33")
        assert got["vi_tourism_advertising_revolving_fund"] == D("1000000.00") - (
            D("111111.11") + D("127777.78") + D("83333.33") * 2
        )

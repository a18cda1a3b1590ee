"""Go-live: the first run starts from a declared opening state (issue 10 item 9).

PR FY 2027 with a $1,200,000 certification ($120,000 a month to the Bank from July). July
and August were distributed outside the platform, $1,000,000 of Tax each: the Bank 120,000,
the Company 20,000, the Treasury 50,000, the Bureau 375,000, the remainder 435,000 a month.
The platform's first run is September, with $2,000,000 collected.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import httpx
from distribution_factories import AUDITOR, allocated, certify, collect, run
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.testing import auth

D = Decimal
DB = async_sessionmaker[AsyncSession]
PERSON = auth("agency-admin", user_id="u-go-live")
PR_OPENING = {
    "jurisdiction": "PR",
    "through_month": "2026-08",
    "transferred": {
        "pr_bank_special_account": "240000.00",
        "pr_company_administration": "40000.00",
        "pr_treasury_general_fund": "100000.00",
        "pr_convention_bureau": "750000.00",
        "pr_remainder": "870000.00",
    },
    "document_reference": "PRTC transfers FY2027 Jul-Aug",
}


async def declare(client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str] = PERSON) -> Any:
    return await client.post("/v1/opening-states", json=body, headers=headers)


async def summary(client: httpx.AsyncClient, jurisdiction: str) -> dict[str, Any]:
    params = {"jurisdiction": jurisdiction}
    r = await client.get("/v1/fiscal-years/2027/summary", params=params, headers=AUDITOR)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def fund(body: dict[str, Any], account: str) -> dict[str, Any]:
    return next(f for f in body["funds"] if f["account"] == account)


class TestPuertoRico:
    async def test_without_an_opening_state_the_first_run_catches_up_every_earlier_month(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        await certify(client, 2027, "1200000.00")
        await collect(db, amount="2000000.00", collected_on=date(2026, 9, 15))
        body = await run(client, "PR", "2026-09")
        # month 3: Bank 3 x 120,000; Company 2% and Treasury 5% of 2,000,000; Bureau
        # max(9% x 2,000,000, 3 x 375,000) = 1,125,000; remainder 2,000,000 - 1,625,000
        assert allocated(body) == {
            "pr_bank_special_account": D("360000.00"),
            "pr_company_administration": D("40000.00"),
            "pr_treasury_general_fund": D("100000.00"),
            "pr_convention_bureau": D("1125000.00"),
            "pr_remainder": D("375000.00"),
        }
        assert body["inputs"]["opening_state"] is None

    async def test_the_first_run_from_the_opening_state_pays_september_only(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        await certify(client, 2027, "1200000.00")
        r = await declare(client, PR_OPENING)
        assert r.status_code == 201, r.text
        opening = r.json()
        assert (opening["version"], opening["fiscal_year"]) == (1, 2027)
        assert opening["first_run_month"] == "2026-09"
        assert opening["entered_by"] == "user:u-go-live"
        assert opening["transferred"]["pr_convention_bureau"] == "750000.00"

        await collect(db, amount="2000000.00", collected_on=date(2026, 9, 15))
        early = await run(client, "PR", "2026-07", expect=409)
        assert early["errors"][0] == {
            "pointer": "#/body/month",
            "detail": "the first month to run is 2026-09",
        }
        body = await run(client, "PR", "2026-09")
        # Bank 360,000 scheduled - 240,000 received = 120,000; Company 40,000; Treasury
        # 100,000; Bureau max(9% x 4,000,000 = 360,000, 1,125,000) - 750,000 = 375,000;
        # remainder 2,000,000 - 635,000 = 1,365,000
        assert allocated(body) == {
            "pr_bank_special_account": D("120000.00"),
            "pr_company_administration": D("40000.00"),
            "pr_treasury_general_fund": D("100000.00"),
            "pr_convention_bureau": D("375000.00"),
            "pr_remainder": D("1365000.00"),
        }
        assert body["inputs"]["opening_state"]["id"] == opening["id"]
        assert body["trace"][0]["rule"] == "rule6.distribution.pr.opening"

        report = await summary(client, "PR")
        bureau = fund(report, "fund:pr_convention_bureau")
        assert (bureau["received"], bureau["opening"]) == ("1125000.00", "750000.00")
        assert (bureau["floor"]["owed_to_date"], bureau["floor"]["on_track"]) == ("1125000.00", True)
        bank = fund(report, "fund:pr_bank_special_account")
        assert (bank["received"], bank["opening"]) == ("360000.00", "240000.00")
        assert report["debt_service"]["transferred"] == "360000.00"
        assert report["debt_service"]["shortfall"] == "0.00"
        assert report["collected"] == "2000000.00"  # what the platform collected
        assert report["opening_state"] | {"entered_at": None} == {
            "id": opening["id"],
            "version": 1,
            "through_month": "2026-08",
            "document_reference": "PRTC transfers FY2027 Jul-Aug",
            "collected": "2000000.00",
            "entered_by": "user:u-go-live",
            "entered_at": None,
        }
        assert report["on_track"] is True

        # once a run is posted the opening state is history: no correction
        late = await declare(client, {**PR_OPENING, "supersedes": opening["id"]})
        assert late.status_code == 409

    async def test_the_summary_shows_the_opening_state_before_any_run(
        self, client: httpx.AsyncClient
    ) -> None:
        await certify(client, 2027, "1200000.00")
        assert (await declare(client, PR_OPENING)).status_code == 201
        report = await summary(client, "PR")
        assert report["months_run"] == 0
        assert fund(report, "fund:pr_convention_bureau")["received"] == "750000.00"
        # two months of floor owed (2 x 375,000), two received
        assert fund(report, "fund:pr_convention_bureau")["floor"]["owed_to_date"] == "750000.00"
        assert report["debt_service"]["transferred"] == "240000.00"


class TestDeclaring:
    async def test_corrections_are_versions_and_only_an_admin_declares(
        self, client: httpx.AsyncClient
    ) -> None:
        first = (await declare(client, PR_OPENING)).json()
        again = await declare(client, PR_OPENING)
        assert again.status_code == 409
        assert again.json()["errors"][0]["pointer"] == "#/body/supersedes"
        fixed = await declare(
            client,
            {
                **PR_OPENING,
                "transferred": {**PR_OPENING["transferred"], "pr_remainder": "869000.00"},
                "supersedes": first["id"],
                "reason": "remainder misread",
            },
        )
        assert fixed.status_code == 201, fixed.text
        assert fixed.json()["version"] == 2
        params = {"jurisdiction": "PR"}
        listed = (await client.get("/v1/opening-states", params=params, headers=AUDITOR)).json()
        assert [(o["version"], o["current"]) for o in listed["items"]] == [(1, False), (2, True)]
        denied = await declare(client, PR_OPENING, headers=AUDITOR)
        assert denied.status_code == 403

    async def test_errors_name_the_field(self, client: httpx.AsyncClient) -> None:
        foreign = await declare(client, {**PR_OPENING, "transferred": {"vi_general_fund": "1.00"}})
        assert foreign.status_code == 422
        assert foreign.json()["errors"][0]["pointer"] == "#/body/transferred/vi_general_fund"
        negative = await declare(client, {**PR_OPENING, "transferred": {"pr_remainder": "-1.00"}})
        assert negative.status_code == 422
        too_early = await declare(client, {**PR_OPENING, "through_month": "1990-08"})
        assert too_early.status_code == 422
        assert too_early.json()["errors"][0]["pointer"] == "#/body/through_month"
        unknown = await client.get("/v1/opening-states/nope", headers=AUDITOR)
        assert unknown.status_code == 404


class TestVirginIslands:
    async def test_the_first_run_from_the_opening_state_pays_january_only(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        body = {
            "jurisdiction": "VI",
            "through_month": "2026-12",
            "transferred": {
                "vi_agriculture_revolving_fund": "333333.33",
                "vi_sports_tourism": "250000.00",
                "vi_department_of_education": "125000.00",
                "vi_sports_parks_recreation": "125000.00",
                "vi_tourism_advertising_revolving_fund": "2000000.00",
            },
            "document_reference": "BIR transfers FY2027 Oct-Dec",
        }
        assert (await declare(client, body)).status_code == 201
        await collect(db, amount="1500000.00", collected_on=date(2027, 1, 15), jurisdiction="VI")
        got = allocated(await run(client, "VI", "2027-01"))
        # month 4 of FY 2027: floors owed less received: Agriculture 444,444.44 - 333,333.33;
        # sports tourism 333,333.33 - 250,000; Education and SPR 166,666.67 - 125,000 each;
        # the Fund 1,500,000 - 277,777.78 (without the opening state: 1,111,111.11 to floors)
        assert {k: v for k, v in got.items() if v} == {
            "vi_agriculture_revolving_fund": D("111111.11"),
            "vi_sports_tourism": D("83333.33"),
            "vi_department_of_education": D("41666.67"),
            "vi_sports_parks_recreation": D("41666.67"),
            "vi_tourism_advertising_revolving_fund": D("1222222.22"),
        }
        report = await summary(client, "VI")
        agriculture = fund(report, "fund:vi_agriculture_revolving_fund")
        assert (agriculture["received"], agriculture["opening"]) == ("444444.44", "333333.33")
        assert agriculture["floor"]["on_track"] is True

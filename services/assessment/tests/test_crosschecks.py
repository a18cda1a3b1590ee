"""Cross-checks run on every return of a lodging-period; findings go on the operator's declaration."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
from assessment_factories import ADMIN, AUDITOR, Bus, new_account
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from assessment.crosschecks import repository
from assessment.crosschecks.repository import crosscheck_coverage
from assessment.models import LodgingView
from servicekit.testing import auth
from taxcore.periods import Period

OPERATOR = auth("operator", operator_id="op-cc")
OTHER = auth("operator", operator_id="op-cc-other")
FACILITATOR = auth("facilitator", facilitator_id="fac-cc")


async def operator_return(bus: Bus, account: str, period: str, lines: dict[str, Any], **kw: Any) -> str:
    event = await bus.declare(account, period, filer_id="op-cc", lines=lines, **kw)
    return str(event.data["declaration_id"])


async def schedule_row(bus: Bus, account: str, period: str, lines: dict[str, Any], **kw: Any) -> str:
    event = await bus.declare(account, period, filer_kind="facilitator", filer_id="fac-cc", lines=lines, **kw)
    return str(event.data["declaration_id"])


async def findings(client: httpx.AsyncClient, path: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    r = await client.get(path, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def brief(items: list[dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    return [(f["rule"], f["declared"], f["reported"], f["difference"], f["section"]) for f in items]


class TestIntermediaryShortfall:
    async def test_schedule_after_the_return_puts_the_finding_on_the_return(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI", operator_id="op-cc")
        decl = await operator_return(
            bus, account, "2026-03", {"room_revenue": "8000.00", "room_nights": 40}, jurisdiction="VI"
        )
        assert await findings(client, f"/v1/declarations/{decl}/crosschecks", OPERATOR) == []
        await schedule_row(
            bus,
            account,
            "2026-03",
            {"room_revenue": "9000.00", "intermediary_retained": "1000.00", "room_nights": 45},
            jurisdiction="VI",
        )
        on_return = await findings(client, f"/v1/declarations/{decl}/crosschecks", OPERATOR)
        assert brief(on_return) == [("intermediary_shortfall", "8000.00", "10000.00", "2000.00", "§54(b)(1)")]
        assert on_return[0]["declaration_id"] == decl
        assert on_return[0]["parameters"] == {"tolerance": "100.00", "amount": "50.00", "share": "0.01"}
        assert "below the 10000.00 that online intermediaries reported" in on_return[0]["message"]
        assert brief(await findings(client, f"/v1/accounts/{account}/crosschecks", OPERATOR)) == brief(
            on_return
        )
        agency = await findings(client, "/v1/crosschecks?jurisdiction=VI&period=2026-03", AUDITOR)
        assert [f["tax_account"] for f in agency] == [account]

    async def test_returns_that_arrive_before_the_lodging_are_checked_when_it_arrives(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        """Returns and the registry's snapshots travel on different topics, in no order between
        them: a lodging-period whose returns came first is checked once the lodging is known,
        as of its last return's filing date, and a later snapshot checks nothing again."""
        account = new_account("VI")
        decl = await operator_return(
            bus, account, "2026-03", {"room_revenue": "8000.00", "room_nights": 40}, jurisdiction="VI"
        )
        await schedule_row(
            bus,
            account,
            "2026-03",
            {"room_revenue": "9000.00", "intermediary_retained": "1000.00", "room_nights": 45},
            jurisdiction="VI",
        )
        path = f"/v1/declarations/{decl}/crosschecks"
        await bus.lodging(account, jurisdiction="VI", operator_id="op-cc")
        on_return = await findings(client, path, OPERATOR)
        assert brief(on_return) == [("intermediary_shortfall", "8000.00", "10000.00", "2000.00", "§54(b)(1)")]
        await bus.lodging(
            account, jurisdiction="VI", operator_id="op-cc", event_type="roomtax.registry.lodging.updated.v1"
        )
        assert [f["id"] for f in await findings(client, path, OPERATOR)] == [f["id"] for f in on_return]

    async def test_an_amendment_that_declares_the_gross_clears_it(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account("VI")
        await bus.lodging(account, jurisdiction="VI", operator_id="op-cc")
        await schedule_row(
            bus, account, "2026-03", {"room_revenue": "10000.00", "room_nights": 45}, jurisdiction="VI"
        )
        first = await bus.declare(
            account,
            "2026-03",
            jurisdiction="VI",
            filer_id="op-cc",
            filing_id="f-cc-op",
            lines={"room_revenue": "7000.00", "room_nights": 40},
        )
        found = await findings(client, f"/v1/accounts/{account}/crosschecks?period=2026-03", OPERATOR)
        assert brief(found) == [("intermediary_shortfall", "7000.00", "10000.00", "3000.00", "§54(b)(1)")]
        second = await bus.declare(
            account,
            "2026-03",
            jurisdiction="VI",
            filer_id="op-cc",
            filing_id="f-cc-op",
            version=2,
            supersedes=str(first.data["declaration_id"]),
            lines={"room_revenue": "10000.00", "room_nights": 40},
        )
        assert await findings(client, f"/v1/accounts/{account}/crosschecks", OPERATOR) == []
        assert (
            await findings(client, f"/v1/declarations/{second.data['declaration_id']}/crosschecks", ADMIN)
            == []
        )
        # the first version keeps what was found on it (append-only)
        kept = await findings(client, f"/v1/declarations/{first.data['declaration_id']}/crosschecks", ADMIN)
        assert brief(kept) == brief(found)

    async def test_declared_zero_while_the_intermediary_sold(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account, operator_id="op-cc", lodging_class="short_term_rental")
        await schedule_row(
            bus,
            account,
            "2026-05",
            {"room_revenue": "3000.00", "room_nights": 12},
            lodging_class="short_term_rental",
        )
        decl = await operator_return(bus, account, "2026-05", {}, lodging_class="short_term_rental")
        assert brief(await findings(client, f"/v1/declarations/{decl}/crosschecks", OPERATOR)) == [
            ("declared_zero_with_intermediary_sales", "0.00", "3000.00", "3000.00", "§2(20), §28, §32")
        ]


async def five_peers(bus: Bus, period: str) -> None:
    """Five lodgings of the same class and municipality with ADRs 100.00 to 140.00 in ``period``."""
    for adr in ("100.00", "110.00", "120.00", "130.00", "140.00"):
        peer = new_account()
        await bus.lodging(peer, operator_id="op-peer")
        await bus.declare(peer, period, lines={"room_revenue": adr, "room_nights": 1})


class TestRegistryAndPeerChecks:
    async def test_peers_fetched_for_returns_only_and_on_first_use_the_same(
        self, bus: Bus, db: async_sessionmaker[AsyncSession]
    ) -> None:
        """A batch fetches the peers of its operator returns' groups only (a schedule's rows are
        not judged against peers; a municipality's peers are a probe of each of its lodgings);
        another group's are fetched when a check asks for them, and they are the same peers."""
        await five_peers(bus, "2025-05")  # ADRs 100.00-140.00
        account = new_account()
        await bus.lodging(account, operator_id="op-cc")
        await operator_return(bus, account, "2025-05", {"room_revenue": "10000.00", "room_nights": 20})
        async with db() as s:
            lodging = await s.get(LodgingView, account)
            assert lodging is not None
            pair, group = (account, "2025-05"), (lodging.jurisdiction, lodging.municipality, "2025-05")
            eager = await repository.load(s, [pair], {account: lodging})
            lazy = await repository.load(s, [pair], {account: lodging}, peers_of=[])
            assert (eager.unfetched, group in eager.peers) == (set(), True)
            assert (lazy.unfetched, group in lazy.peers) == ({group}, False)
            peers = [Decimal(x) for x in ("100.00", "110.00", "120.00", "130.00", "140.00")]
            assert await eager.peer_adrs(s, lodging, "2025-05", lodging.lodging_class) == peers  # ascending
            assert await lazy.peer_adrs(s, lodging, "2025-05", lodging.lodging_class) == peers
            assert lazy.unfetched == set()

    async def test_room_nights_above_rooms_times_days(self, client: httpx.AsyncClient, bus: Bus) -> None:
        account = new_account()
        await bus.lodging(account, operator_id="op-cc", room_count=10)
        decl = await operator_return(
            bus, account, "2026-04", {"room_revenue": "30100.00", "room_nights": 301}
        )
        assert brief(await findings(client, f"/v1/declarations/{decl}/crosschecks", OPERATOR)) == [
            ("room_nights_above_capacity", "301.00", "300.00", "1.00", "§2(18)(ii), §32")
        ]

    async def test_adr_far_above_the_class_and_municipality(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        await five_peers(bus, "2025-07")  # ADRs 100.00-140.00, median 120.00
        account = new_account()
        await bus.lodging(account, operator_id="op-cc")
        decl = await operator_return(bus, account, "2025-07", {"room_revenue": "10000.00", "room_nights": 20})
        found = await findings(client, f"/v1/declarations/{decl}/crosschecks", OPERATOR)
        assert brief(found) == [("adr_outlier", "500.00", "120.00", "380.00", "§2(32), §32")]
        assert found[0]["parameters"] == {"factor": "3", "peers": "5", "low": "40.00", "high": "360.00"}
        # an intermediary's row re-checks the period; the ADR judged on the return is carried over
        await schedule_row(bus, account, "2025-07", {"room_revenue": "10000.00", "room_nights": 20})
        again = await findings(client, f"/v1/accounts/{account}/crosschecks", OPERATOR)
        assert [(f["rule"], f["parameters"]) for f in again] == [("adr_outlier", found[0]["parameters"])]

    async def test_adr_far_below_is_a_negative_difference_and_the_return_is_assessed(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        await five_peers(bus, "2025-06")  # ADRs 100.00-140.00, median 120.00
        account = new_account()
        await bus.lodging(account, operator_id="op-cc")
        decl = await operator_return(bus, account, "2025-06", {"room_revenue": "200.00", "room_nights": 20})
        found = await findings(client, f"/v1/declarations/{decl}/crosschecks", OPERATOR)
        # the event carries the signed difference (it once refused it, and the return was parked)
        assert brief(found) == [("adr_outlier", "10.00", "120.00", "-110.00", "§2(32), §32")]
        statement = (await client.get(f"/v1/accounts/{account}/statement", headers=OPERATOR)).json()
        [period] = [p for p in statement["periods"] if p["period"] == "2025-06"]
        # 9% of $200.00, assessed on the return
        assert (period["basis"], period["principal"]["tax"]) == ("declaration", "18.00")


class TestExemptionAndCoverage:
    async def test_an_exemption_whose_certificate_filing_could_not_verify(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account, operator_id="op-cc")
        lines = {
            "room_revenue": "10000.00",
            "room_nights": 80,
            "exempt": [{"exemption": "pr_film_production", "amount": "2000.00", "evidence": None}],
        }
        decl = await operator_return(bus, account, "2026-02", lines)
        assert brief(await findings(client, f"/v1/declarations/{decl}/crosschecks", OPERATOR)) == [
            ("exempt_without_certificate", "2000.00", "0.00", "2000.00", "§24(F), §2(18)(iii)")
        ]

    async def test_coverage_counts_lodging_periods_with_intermediary_data(
        self, client: httpx.AsyncClient, bus: Bus, db: async_sessionmaker[AsyncSession]
    ) -> None:
        checked, unchecked, flagged = new_account("VI"), new_account("VI"), new_account("VI")
        for account in (checked, unchecked, flagged):
            await bus.lodging(account, jurisdiction="VI", operator_id="op-cc")
            await schedule_row(
                bus, account, "2026-06", {"room_revenue": "1000.00", "room_nights": 5}, jurisdiction="VI"
            )
        await operator_return(
            bus, checked, "2026-06", {"room_revenue": "1000.00", "room_nights": 5}, jurisdiction="VI"
        )
        await operator_return(
            bus, flagged, "2026-06", {"room_revenue": "500.00", "room_nights": 5}, jurisdiction="VI"
        )
        june = Period.parse("2026-06")
        async with db() as session:
            got = await crosscheck_coverage(session, jurisdiction="VI", first=june, last=june)
            july = await crosscheck_coverage(session, jurisdiction="VI", first=june.next(), last=june.next())
        assert (got.with_intermediary_data, got.checked, got.with_findings) == (3, 2, 1)
        assert (july.with_intermediary_data, july.checked, july.with_findings) == (0, 0, 0)


class TestCrosscheckAccess:
    async def test_others_get_404_and_the_list_is_agency_only(
        self, client: httpx.AsyncClient, bus: Bus
    ) -> None:
        account = new_account()
        await bus.lodging(account, operator_id="op-cc", room_count=1)
        decl = await operator_return(bus, account, "2026-04", {"room_revenue": "3100.00", "room_nights": 31})
        for who in (OTHER, FACILITATOR):
            for path in (f"/v1/declarations/{decl}/crosschecks", f"/v1/accounts/{account}/crosschecks"):
                r = await client.get(path, headers=who)
                assert r.status_code == 404, (path, r.text)
        r = await client.get("/v1/declarations/no-such/crosschecks", headers=ADMIN)
        assert r.status_code == 404
        r = await client.get("/v1/crosschecks", headers=OPERATOR)
        assert r.status_code == 403
        assert len(await findings(client, f"/v1/declarations/{decl}/crosschecks", AUDITOR)) == 1


class TestPeerRates:
    """The peers' rates of a group and class, kept sorted as versions arrive (pure, no I/O)."""

    def test_latest_version_of_each_filing_ascending_less_the_lodgings_own(self) -> None:
        rates = repository._Rates()
        d = Decimal
        rates.see("A", "fa", 1, d("130.00"))
        rates.see("B", "fb", 1, d("100.00"))
        rates.see("C", "fc", 2, d("120.00"))
        rates.see("C", "fc", 1, d("999.00"))  # an older version arriving late changes nothing
        rates.see("D", "fd", 1, None)  # no room nights: no rate
        rates.see("E", "fe", 1, d("120.00"))
        assert rates.excluding("Z") == [d("100.00"), d("120.00"), d("120.00"), d("130.00")]
        rates.see("A", "fa", 2, d("90.00"))  # an amendment replaces its filing's rate
        rates.see("D", "fd", 2, d("110.00"))
        rates.see("E", "fe", 3, None)  # and one without room nights removes it
        assert rates.excluding("Z") == [d("90.00"), d("100.00"), d("110.00"), d("120.00")]
        assert rates.excluding("C") == [d("90.00"), d("100.00"), d("110.00")]
        assert rates.excluding("E") == [d("90.00"), d("100.00"), d("110.00"), d("120.00")]
        rates.see("A", "fa2", 1, d("100.00"))  # a second filing of A's
        assert rates.excluding("A") == [d("100.00"), d("110.00"), d("120.00")]
        assert rates.excluding("B") == [d("90.00"), d("100.00"), d("110.00"), d("120.00")]

    def test_built_from_the_fetched_arrays_as_from_each_version(self) -> None:
        d = Decimal
        accounts, filings, versions = ["A", "B", "A", "C"], ["fa", "fb", "fa2", "fc"], [2, 1, 1, 3]
        adrs: list[Decimal | None] = [d("130.00"), None, d("100.00"), d("120.00")]
        fetched = repository._Rates.fetched(accounts, filings, versions, adrs)
        one_by_one = repository._Rates()
        for entry in zip(accounts, filings, versions, adrs, strict=True):
            one_by_one.see(*entry)
        assert fetched == one_by_one
        assert fetched.excluding("A") == [d("120.00")]
        assert fetched.excluding("Z") == [d("100.00"), d("120.00"), d("130.00")]
        # a filing twice in the arrays (not what the statement gives) is merged version by version
        twice = repository._Rates.fetched(["A", "A"], ["fa", "fa"], [2, 1], [d("90.00"), d("80.00")])
        assert (twice.latest, twice.excluding("Z")) == ({"fa": (2, d("90.00"))}, [d("90.00")])

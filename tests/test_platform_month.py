"""A full tax month in both jurisdictions, across the four real services, driven over HTTP.

The story (tax month ``M`` = the latest month already past due in both PR and VI):

* The agency registers five lodgings (registry): a San Juan casino hotel and a Ponce
  guesthouse (one operator), a Vieques short-term rental whose bookings an online
  intermediary remits, a St. Thomas hotel and a St. John timeshare; bonds for the PR
  lodgings (PR §27), the intermediary's authorization, and OAuth clients for two
  operators and the intermediary, who then act with their own tokens.
* On time: paper returns for the casino hotel and the timeshare, received by the agency
  before their due dates, with a check and a wire (the wire pays $100 too much).
* The non-filer job (assessment) runs the day after the due dates: the guesthouse, the
  rental and the St. Thomas hotel have filed nothing, so each gets an estimate.
* The PR Bank certifies the fiscal year; the agency closes the months before today.
* Today: the St. Thomas hotel's operator files late (own token), the intermediary files
  the rental's return in a remittance schedule (late, own token), the casino's check
  bounces, and the late payers pay with their own tokens. The guesthouse never files, and
  the rental's operator never files its own declaration (the schedule meets only the
  intermediary's obligation, PR §28(B), so the §47 fine runs on).
* Statements (assessment) as of today, exact to the cent; the distribution runs of the
  current month; then the totals agree across filing, assessment and distribution.

Every expected amount is computed here from the inputs, citing the section; penalties
and interest are cross-checked against taxcore's ``compute_balance`` on the same facts
(the point is that the services agree with the law-as-code and with each other).

The story is told in steps, the test functions below in their order (``test_registration``
... ``test_ledger_reconciles``): one stack and one :class:`Story` for the module, so each
step goes on from what the steps above it did and waited for. A step that runs without
them (alone, out of order, or after one failed) fails at once saying which one it needs.
The module runs on one xdist worker (``--dist loadgroup``, conftest.py's lanes).
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from platform_harness import TODAY, Api, Platform, eventually, new_client

from taxcore.money import fmt, round_cents
from taxcore.periods import Period, due_date, fiscal_year
from taxcore.rules.balance import AccountHistory, Balance, PaymentIn, compute_balance
from taxcore.rules.distribution import (
    PRCertification,
    PRState,
    VIState,
    distribute_pr_month,
    distribute_vi_month,
)

D = Decimal


def tax_month(today: date) -> Period:
    """The latest month whose PR (§28: 10th of next month) and VI (§54(f): 30 days) due dates are past."""
    month = Period.of(today).prev()
    while not (due_date("PR", month) < today and due_date("VI", month) < today):
        month = month.prev()
    return month


M = tax_month(TODAY)
R = Period.of(TODAY)  # the month the late payments are collected in
DUE_PR = due_date("PR", M)
DUE_VI = due_date("VI", M)
REGISTERED = M.first_day
PAPER_PR = DUE_PR - timedelta(days=2)  # on time: received two days before the due date
PAPER_VI = DUE_VI - timedelta(days=5)
JOB_AS_OF = max(DUE_PR, DUE_VI) + timedelta(days=1)
INDUSTRY_COST = D("85.00")


def months(first: Period, last: Period) -> list[Period]:
    out = [first]
    while out[-1] < last:
        out.append(out[-1].next())
    return out


RUN_MONTHS = months(Period.of(min(PAPER_PR, PAPER_VI)), R)


@pytest.fixture(scope="module")
async def platform() -> AsyncIterator[Platform]:
    p = Platform(prefix="roomtax_e2e_month")
    try:
        await p.start()
        yield p
    finally:
        p.stop()


def pr_surcharge_rate(days_late: int) -> D:
    """PR §46 (provisional parameter): 5% of the unpaid tax from day 31, 10% from day 61 (replaces)."""
    return D("0.10") if days_late > 60 else D("0.05") if days_late > 30 else D("0")


def vi_penalty_rate(days_late: int) -> D:
    """33 V.I.C. §54(i): 5% after the due date, 15% > 30 days, 25% > 90, 50% > 180, 100% > 1 year."""
    for days, rate in ((365, "1.00"), (180, "0.50"), (90, "0.25"), (30, "0.15"), (0, "0.05")):
        if days_late > days:
            return D(rate)
    return D("0")


def pr_fine(days_late: int) -> D:
    """PR §47 (provisional parameter): $500 a day late, each day a separate infraction, up to $25,000."""
    return min(D(500) * max(days_late, 0), D("25000.00"))


def assert_period(period: dict[str, Any], bal: Balance) -> None:
    """The statement's period equals taxcore's balance of the same facts, component by component."""
    for c in bal.components:
        assert period["components"][c.component] == {
            "assessed": fmt(c.assessed),
            "paid": fmt(c.paid),
            "outstanding": fmt(c.outstanding),
        }, c.component
    assert period["total_assessed"] == fmt(bal.total_assessed)
    assert period["total_paid"] == fmt(bal.total_paid)
    assert period["balance"] == fmt(bal.balance)
    assert period["days_late"] == bal.days_late


def component(bal: Balance, name: str) -> D:
    return next(c.assessed for c in bal.components if c.component == name)


class Story:
    """What the steps of the month share, learnt in their order: ONE object for the module (the
    ``story`` fixture), so a step reads what the steps before it did, never a fresh copy."""

    admin: Api
    condado: dict[str, Any]
    charlotte: dict[str, Any]
    cruz_bay: dict[str, Any]
    ota: dict[str, Any]
    acct: dict[str, str]
    condado_api: Api
    charlotte_api: Api
    ota_api: Api
    casino_tax: D
    ts_tax: D
    ts_fee: D
    ts_paid: D
    check: dict[str, Any]
    wire: dict[str, Any]
    expected_estimates: dict[tuple[str, str], D]
    runs: dict[str, list[dict[str, Any]]]
    reef_tax: D
    rental_tax: D
    casino_owed: D
    reef_owed: D
    transfer: dict[str, Any]
    reef_pay: dict[str, Any]
    ota_pay: dict[str, Any]
    statements: dict[str, dict[str, Any]]
    by_jur: dict[str, tuple[str, ...]]
    applied: dict[str, D]
    applied_by_component: dict[str, dict[str, D]]

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.tag = uuid.uuid4().hex[:6]
        self.done: list[str] = []  # the steps that finished, in order

    def apis(self) -> list[Api]:
        names = ("admin", "condado_api", "charlotte_api", "ota_api")
        return [getattr(self, n) for n in names if hasattr(self, n)]

    async def statement(self, key: str) -> dict[str, Any]:
        out: dict[str, Any] = await self.admin.get(
            "assessment", f"/v1/accounts/{self.acct[key]}/statement", params={"as_of": TODAY.isoformat()}
        )
        return out

    async def funds(self, jur: str) -> dict[str, Any]:
        out: dict[str, Any] = await self.admin.get(
            "distribution", "/v1/funds", params={"jurisdiction": jur, "as_of": R.last_day.isoformat()}
        )
        return out


@pytest.fixture(scope="module")
async def story(platform: Platform) -> AsyncIterator[Story]:
    told = Story(platform)
    try:
        yield told
    finally:
        for api in told.apis():
            await api.close()


STEPS: list[str] = []
Step = Callable[[Story], Awaitable[None]]


def step(fn: Step) -> Step:
    """A step of the month: it runs only once every step above it has finished, since it goes on
    from their state (run alone, out of order or after a failure, it fails saying which is missing)."""
    STEPS.append(fn.__name__)
    before = list(STEPS[:-1])

    @functools.wraps(fn)
    async def run(story: Story) -> None:
        if story.done != before:
            missing = next(name for name in before if name not in story.done)
            pytest.fail(f"not run: it goes on from {missing}, which did not finish first")
        await fn(story)
        story.done.append(fn.__name__)

    return run


@step
async def test_registration(story: Story) -> None:
    """Five lodgings and their operators, the PR bonds, the intermediary's authorization and
    the callers' OAuth clients (registry); filing and assessment see every lodging."""
    platform, tag = story.platform, story.tag
    admin = story.admin = await Api.login(platform, "agency-admin", "dev-admin-secret")

    async def party(kind: str, name: str) -> dict[str, Any]:
        body = {"name": f"{name} {tag}", "email": f"tax@{kind}-{tag}.example"}
        result: dict[str, Any] = await admin.post("registry", f"/v1/{kind}", body, expect=201)
        return result

    condado = story.condado = await party("operators", "Condado Resorts LLC")
    isla_nena = await party("operators", "Isla Nena Rentals")
    charlotte = story.charlotte = await party("operators", "Charlotte Amalie Hospitality")
    cruz_bay = story.cruz_bay = await party("operators", "Cruz Bay Vacation Club")
    ota = story.ota = await party("facilitators", "IslandStays OTA")

    async def lodging(
        name: str,
        jur: str,
        cls: str,
        operator: dict[str, Any],
        rooms: int,
        town: str,
        *,
        casino: bool = False,
    ) -> dict[str, Any]:
        body = {
            "jurisdiction": jur,
            "lodging_class": cls,
            "casino": casino,
            "name": f"{name} {tag}",
            "address": {"line1": "1 Calle del Mar", "municipality": town},
            "room_count": rooms,
            "operator_id": operator["id"],
            "registered_on": REGISTERED.isoformat(),
        }
        out: dict[str, Any] = await admin.post("registry", "/v1/lodgings", body, expect=201)
        assert re.fullmatch(rf"{jur}-\d{{7}}-\d", out["tax_account"]), out["tax_account"]  # PR §26 format
        return out

    casino = await lodging("El San Juan Casino Hotel", "PR", "hotel", condado, 400, "San Juan", casino=True)
    ponce = await lodging("Casa Ponce Guesthouse", "PR", "guesthouse", condado, 12, "Ponce")
    rental = await lodging("Vieques Bay Villa", "PR", "short_term_rental", isla_nena, 4, "Vieques")
    reef = await lodging("Frenchman's Reef", "VI", "hotel", charlotte, 300, "St. Thomas")
    timeshare = await lodging("Cruz Bay Timeshare", "VI", "timeshare", cruz_bay, 80, "St. John")
    acct = story.acct = {
        k: v["tax_account"] for k, v in dict(casino=casino, ponce=ponce, rental=rental).items()
    }
    acct |= {"reef": reef["tax_account"], "timeshare": timeshare["tax_account"]}

    bonds = {}
    for key, kind, amount in (
        ("casino", "surety", "250000.00"),
        ("ponce", "letter_of_credit", "10000.00"),
        ("rental", "cash_deposit", "5000.00"),
    ):
        bonds[key] = await admin.post(
            "registry",
            f"/v1/lodgings/{acct[key]}/bonds",
            {
                "kind": kind,
                "amount": amount,
                "issuer": "Banco Popular",
                "effective_on": REGISTERED.isoformat(),
                "expires_on": (REGISTERED + timedelta(days=364)).isoformat(),
            },
            expect=201,
        )
    compliance = await admin.get(
        "registry", f"/v1/lodgings/{acct['casino']}/compliance", params={"as_of": str(M.last_day)}
    )
    assert compliance["compliant"] is True
    assert compliance["valid_bond_id"] == bonds["casino"]["id"]
    vi_compliance = await admin.get("registry", f"/v1/lodgings/{acct['reef']}/compliance")
    assert vi_compliance["bond_required"] is False  # 33 V.I.C. §54 has no bond
    await admin.post(
        "registry",
        f"/v1/lodgings/{acct['rental']}/authorizations",
        {"facilitator_id": ota["id"], "starts_on": REGISTERED.isoformat()},
        expect=201,
    )
    story.condado_api = await new_client(
        platform, admin, f"condado-pms-{tag}", "operator", operator_id=condado["id"]
    )
    story.charlotte_api = await new_client(
        platform, admin, f"reef-pms-{tag}", "operator", operator_id=charlotte["id"]
    )
    ota_api = story.ota_api = await new_client(
        platform, admin, f"islandstays-{tag}", "facilitator", facilitator_id=ota["id"]
    )

    async def ok(api: Api, service: str, path: str) -> bool:
        return (await api.call("GET", service, path)).status_code == 200

    async def projections_ready() -> bool:
        filing = [ok(admin, "filing", f"/v1/lodgings/{a}/periods/{M}") for a in acct.values()]
        assessment = [ok(admin, "assessment", f"/v1/accounts/{a}/statement") for a in acct.values()]
        seen = [await c for c in (*filing, *assessment)]
        return all(seen) and await ok(ota_api, "filing", f"/v1/lodgings/{acct['rental']}/periods/{M}")

    await eventually(projections_ready)
    # the intermediary sees only the lodging that authorized it (404, not a leak)
    assert (
        await ota_api.call("GET", "filing", f"/v1/lodgings/{acct['casino']}/periods/{M}")
    ).status_code == 404


@step
async def test_on_time_paper_returns(story: Story) -> None:
    """The casino hotel's and the timeshare's paper returns, received before their due dates."""
    admin, acct, condado, cruz_bay = story.admin, story.acct, story.condado, story.cruz_bay
    # PR casino hotel, §2(8)/§24(A): room revenue + resort fees; §24(D): 120 comp rooms valued at the
    # greatest of average rate, room cost, industry cost (150.00); §24(B): 11% for lodgings with casinos.
    casino_base = D("412500.00") + D("18750.00") + 120 * D("150.00")
    casino_tax = story.casino_tax = round_cents(casino_base * D("0.11"))
    assert casino_tax == D("49417.50")
    casino_decl = await admin.post(
        "filing",
        "/v1/declarations",
        {
            "lodging": acct["casino"],
            "period": str(M),
            "room_revenue": "412500.00",
            "resort_and_other_fees": "18750.00",
            "room_nights": 2750,
            "comp_rooms": [
                {
                    "kind": "comp",
                    "room_nights": 120,
                    "average_daily_rate": "150.00",
                    "room_cost": "95.00",
                    "industry_cost": "110.00",
                }
            ],
            "declared": {"taxable_base": fmt(casino_base), "tax": fmt(casino_tax), "total": fmt(casino_tax)},
            "received_on": PAPER_PR.isoformat(),
            "filer": {"kind": "operator", "id": condado["id"]},
        },
        expect=201,
    )
    assert casino_decl["computed"]["taxable_base"] == fmt(casino_base)
    assert casino_decl["computed"]["tax"] == fmt(casino_tax)
    assert D(casino_decl["computed"]["rate"]) == D("0.11")
    assert (casino_decl["status"], casino_decl["findings"], casino_decl["due_date"]) == (
        "on_time",
        [],
        DUE_PR.isoformat(),
    )

    # VI timeshare, §54(b)(1): 12.5% of the exchange guests' room revenue; §54(b)(2)-(3): the owners'
    # 1,240 unit-days pay the $25 Environmental/Infrastructure Impact Fee instead.
    ts_tax = story.ts_tax = round_cents(D("96000.00") * D("0.125"))
    ts_fee = story.ts_fee = 1240 * D("25.00")
    assert (ts_tax, ts_fee) == (D("12000.00"), D("31000.00"))
    ts_decl = await admin.post(
        "filing",
        "/v1/declarations",
        {
            "lodging": acct["timeshare"],
            "period": str(M),
            "room_revenue": "96000.00",
            "room_nights": 480,
            "timeshare_owner_unit_days": 1240,
            "declared": {
                "taxable_base": "96000.00",
                "tax": fmt(ts_tax),
                "impact_fee": fmt(ts_fee),
                "total": fmt(ts_tax + ts_fee),
            },
            "received_on": PAPER_VI.isoformat(),
            "filer": {"kind": "operator", "id": cruz_bay["id"]},
        },
        expect=201,
    )
    assert (ts_decl["computed"]["tax"], ts_decl["computed"]["impact_fee"]) == (fmt(ts_tax), fmt(ts_fee))
    assert (ts_decl["status"], ts_decl["findings"]) == ("on_time", [])


@step
async def test_on_time_counter_payments(story: Story) -> None:
    """A check for the casino hotel, a wire $100 too large for the timeshare; assessment applies both."""
    statement = story.statement
    admin, acct, condado, cruz_bay, tag = story.admin, story.acct, story.condado, story.cruz_bay, story.tag
    casino_tax, ts_tax, ts_fee = story.casino_tax, story.ts_tax, story.ts_fee
    check = story.check = await admin.post(
        "filing",
        "/v1/payments",
        {
            "tax_account": acct["casino"],
            "amount": fmt(casino_tax),
            "method": "check",
            "reference": f"CHK-88213-{tag}",
            "received_on": PAPER_PR.isoformat(),
            "periods": [{"period": str(M), "amount": fmt(casino_tax)}],
            "payer": {"kind": "operator", "id": condado["id"]},
        },
        expect=201,
    )
    receipt = await admin.get("filing", f"/v1/payments/{check['id']}/receipt")
    assert (receipt["agency"], receipt["amount"], receipt["status"]) == (
        "Puerto Rico Tourism Company",
        fmt(casino_tax),
        "received",
    )
    ts_paid = story.ts_paid = ts_tax + ts_fee + D("100.00")  # $100 more than owed: a credit
    wire = story.wire = await admin.post(
        "filing",
        "/v1/payments",
        {
            "tax_account": acct["timeshare"],
            "amount": fmt(ts_paid),
            "method": "electronic_transfer",
            "received_on": PAPER_VI.isoformat(),
            "periods": [{"period": str(M), "amount": fmt(ts_tax + ts_fee)}],
            "payer": {"kind": "operator", "id": cruz_bay["id"]},
        },
        expect=201,
    )
    assert wire["unallocated"] == "100.00"

    async def on_time_known() -> bool:
        c, t = await statement("casino"), await statement("timeshare")
        return (
            [p["basis"] for p in c["periods"]] == ["declaration"]
            and c["totals"]["total_paid"] == fmt(casino_tax)
            and t["totals"]["total_paid"] == fmt(ts_tax + ts_fee)
        )

    await eventually(on_time_known)


@step
async def test_non_filer_job(story: Story) -> None:
    """PR §32; VI §54(d): the day after the due dates, an estimate for each lodging that filed nothing."""
    admin, acct = story.admin, story.acct
    job = await admin.post(
        "assessment",
        "/v1/jobs/non-filers",
        params={"as_of": JOB_AS_OF.isoformat(), "industry_cost": str(INDUSTRY_COST)},
        expect=200,
    )
    # no history: the capacity estimate, rooms x days x industry cost x occupancy 1, at the class rate
    # (PR §24(B): guesthouse 9%, short-term rental 7%; VI §54(b)(1) 12.5%)
    expected_estimates = story.expected_estimates = {
        (acct["ponce"], str(M)): round_cents(12 * M.days * INDUSTRY_COST * D("0.09")),
        (acct["rental"], str(M)): round_cents(4 * M.days * INDUSTRY_COST * D("0.07")),
        (acct["reef"], str(M)): round_cents(300 * M.days * INDUSTRY_COST * D("0.125")),
    }
    assert {(r["tax_account"], r["period"]): D(r["tax"]) for r in job["raised"]} == expected_estimates
    assert job["skipped"] == []
    again = await admin.post(
        "assessment",
        "/v1/jobs/non-filers",
        params={"as_of": JOB_AS_OF.isoformat(), "industry_cost": str(INDUSTRY_COST)},
        expect=200,
    )
    assert again["raised"] == []  # one estimate per period, ever


@step
async def test_closed_months_distributed(story: Story) -> None:
    """The PR Bank certifies the fiscal years; once the on-time money reached distribution, the
    agency runs every month before today's (today's run comes once all of today's money is in)."""
    funds = story.funds
    admin, tag, casino_tax = story.admin, story.tag, story.casino_tax
    ts_tax, ts_fee = story.ts_tax, story.ts_fee
    for fy in sorted({fiscal_year("PR", m.first_day) for m in RUN_MONTHS}):
        await admin.post(
            "distribution",
            "/v1/certifications",
            {
                "fiscal_year": fy,
                "amount": "120000.00",
                "certified_on": date(fy - 1, 6, 15).isoformat(),
                "document_reference": f"BGF-DS-{fy}-{tag}",
            },
            expect=201,
        )

    async def collected_on_time() -> bool:
        pr, vi = await funds("PR"), await funds("VI")
        return D(pr["collected"]) == casino_tax and D(vi["collected"]) == ts_tax + ts_fee

    await eventually(collected_on_time)
    runs: dict[str, list[dict[str, Any]]] = {"PR": [], "VI": []}
    story.runs = runs
    for month in RUN_MONTHS[:-1]:
        for jur in ("PR", "VI"):
            runs[jur].append(
                await admin.post(
                    "distribution", "/v1/runs", {"jurisdiction": jur, "month": str(month)}, expect=201
                )
            )


@step
async def test_late_returns(story: Story) -> None:
    """Today: the St. Thomas hotel's operator files late with its own token, and the intermediary
    files the rental's return in a remittance schedule (the rental's operator never files)."""
    acct, charlotte, ota = story.acct, story.charlotte, story.ota
    # St. Thomas hotel, §54(b)(1): the guest-paid total, energy surcharge and what the OTAs kept included.
    reef_base = D("180000.00") + D("7200.00") + D("12800.00")
    reef_tax = story.reef_tax = round_cents(reef_base * D("0.125"))
    assert reef_tax == D("25000.00")
    reef_decl = await story.charlotte_api.post(
        "filing",
        "/v1/declarations",
        {
            "lodging": acct["reef"],
            "period": str(M),
            "room_revenue": "180000.00",
            "surcharges_and_service_charges": "7200.00",
            "intermediary_retained": "12800.00",
            "room_nights": 900,
            "declared": {"taxable_base": fmt(reef_base), "tax": fmt(reef_tax), "total": fmt(reef_tax)},
        },
        expect=201,
    )
    assert (reef_decl["status"], reef_decl["filed_on"], reef_decl["findings"]) == (
        "late",
        TODAY.isoformat(),
        [],
    )
    assert reef_decl["filer"] == {"kind": "operator", "id": charlotte["id"]}

    # Vieques rental through the intermediary's schedule, §24(B): supplementary short-term lodging 7%.
    rental_base = D("14400.00") + D("600.00")
    rental_tax = story.rental_tax = round_cents(rental_base * D("0.07"))
    assert rental_tax == D("1050.00")
    schedule = await story.ota_api.post(
        "filing",
        "/v1/remittance-schedules",
        {
            "period": str(M),
            "rows": [
                {
                    "tax_account": acct["rental"],
                    "room_revenue": "14400.00",
                    "resort_and_other_fees": "600.00",
                    "room_nights": 48,
                    "declared_taxable_base": fmt(rental_base),
                    "declared_tax": fmt(rental_tax),
                    "declared_total": fmt(rental_tax),
                }
            ],
        },
        expect=201,
    )
    assert (schedule["status"], schedule["accepted"], schedule["facilitator_id"]) == (
        "accepted",
        1,
        ota["id"],
    )
    assert (schedule["results"][0]["tax"], schedule["results"][0]["flagged"]) == (fmt(rental_tax), False)


@step
async def test_bounced_check(story: Story) -> None:
    """The casino's check comes back unpaid; assessment then knows it and both late returns."""
    statement = story.statement
    admin, check, casino_tax = story.admin, story.check, story.casino_tax
    bounced = await admin.post(
        "filing",
        f"/v1/payments/{check['id']}/reversals",
        {"reason": "check returned unpaid: insufficient funds"},
        expect=201,
    )
    assert (bounced["amount"], bounced["reversed_on"]) == (fmt(casino_tax), TODAY.isoformat())

    async def late_facts_known() -> bool:
        c, r, f = await statement("casino"), await statement("reef"), await statement("rental")
        return (
            c["payments"][0]["reversed"] != []
            and [p["basis"] for p in r["periods"]] == ["declaration"]
            and [p["basis"] for p in f["periods"]] == ["declaration"]
        )

    await eventually(late_facts_known)


@step
async def test_late_payments(story: Story) -> None:
    """The late payers pay with their own tokens: what taxcore says they owe today."""
    acct, condado, ota = story.acct, story.condado, story.ota
    casino_tax, reef_tax, rental_tax = story.casino_tax, story.reef_tax, story.rental_tax
    casino_owed = story.casino_owed = compute_balance(
        AccountHistory(
            jurisdiction="PR",
            period=str(M),
            tax=casino_tax,
            declaration_filed_on=PAPER_PR,
            payments=[
                PaymentIn(payment_id="check", received_on=PAPER_PR, amount=casino_tax, reversed_on=TODAY)
            ],
        ),
        as_of=TODAY,
    ).balance
    reef_owed = story.reef_owed = compute_balance(
        AccountHistory(jurisdiction="VI", period=str(M), tax=reef_tax, declaration_filed_on=TODAY),
        as_of=TODAY,
    ).balance

    async def pay_today(api: Api, key: str, amount: D) -> dict[str, Any]:
        out: dict[str, Any] = await api.post(
            "filing",
            "/v1/payments",
            {
                "tax_account": acct[key],
                "amount": fmt(amount),
                "method": "electronic_transfer",
                "periods": [{"period": str(M), "amount": fmt(amount)}],
            },
            expect=201,
        )
        return out

    transfer = story.transfer = await pay_today(story.condado_api, "casino", casino_owed)
    story.reef_pay = await pay_today(story.charlotte_api, "reef", reef_owed)
    ota_pay = story.ota_pay = await pay_today(story.ota_api, "rental", rental_tax)
    assert ota_pay["payer"] == {"kind": "facilitator", "id": ota["id"]}
    assert transfer["payer"] == {"kind": "operator", "id": condado["id"]}


@step
async def test_statements_as_of_today(story: Story) -> None:
    """Assessment's statements equal taxcore's balance of the same facts, to the cent (penalties,
    fines and the credit hand-checked against the statute), once every payment is applied."""
    statement = story.statement
    acct, check, wire, transfer, ota_pay = story.acct, story.check, story.wire, story.transfer, story.ota_pay
    casino_tax, ts_tax, ts_fee, ts_paid = story.casino_tax, story.ts_tax, story.ts_fee, story.ts_paid
    reef_tax, rental_tax = story.reef_tax, story.rental_tax
    casino_owed, reef_owed, reef_pay = story.casino_owed, story.reef_owed, story.reef_pay
    expected_estimates = story.expected_estimates
    histories = {
        "casino": AccountHistory(
            jurisdiction="PR",
            period=str(M),
            tax=casino_tax,
            declaration_filed_on=PAPER_PR,
            payments=[
                PaymentIn(payment_id=check["id"], received_on=PAPER_PR, amount=casino_tax, reversed_on=TODAY),
                PaymentIn(payment_id=transfer["id"], received_on=TODAY, amount=casino_owed),
            ],
        ),
        "ponce": AccountHistory(
            jurisdiction="PR", period=str(M), tax=expected_estimates[(acct["ponce"], str(M))]
        ),
        "rental": AccountHistory(
            jurisdiction="PR",
            period=str(M),
            tax=rental_tax,
            # the intermediary's schedule meets only its own obligation (taxcore
            # obligations.declaration_filers): the operator's declaration is still missing
            declaration_filed_on=None,
            payments=[PaymentIn(payment_id=ota_pay["id"], received_on=TODAY, amount=rental_tax)],
        ),
        "reef": AccountHistory(
            jurisdiction="VI",
            period=str(M),
            tax=reef_tax,
            declaration_filed_on=TODAY,
            payments=[PaymentIn(payment_id=reef_pay["id"], received_on=TODAY, amount=reef_owed)],
        ),
        "timeshare": AccountHistory(
            jurisdiction="VI",
            period=str(M),
            tax=ts_tax,
            impact_fee=ts_fee,
            declaration_filed_on=PAPER_VI,
            payments=[PaymentIn(payment_id=wire["id"], received_on=PAPER_VI, amount=ts_paid)],
        ),
    }
    expected = {k: compute_balance(h, as_of=TODAY) for k, h in histories.items()}
    late_pr = (TODAY - DUE_PR).days
    late_vi = (TODAY - DUE_VI).days
    # hand checks of the statute's figures on the same facts (taxcore must agree with them)
    assert component(expected["casino"], "penalty") == round_cents(casino_tax * pr_surcharge_rate(late_pr))
    assert component(expected["casino"], "fine") == 0  # filed on time: no §47 fine
    assert component(expected["rental"], "fine") == pr_fine(
        late_pr
    )  # §47, the operator never filed: to today
    assert component(expected["ponce"], "fine") == pr_fine(late_pr)  # §47, never filed: days to today
    assert component(expected["reef"], "penalty") == round_cents(reef_tax * vi_penalty_rate(late_vi))
    assert expected["casino"].balance == expected["reef"].balance == 0
    assert expected["timeshare"].credit == D("100.00")

    async def payments_applied() -> dict[str, dict[str, Any]] | None:
        out = {k: await statement(k) for k in acct}
        paid = {k: D(s["totals"]["total_paid"]) for k, s in out.items()}
        want = {k: b.total_paid for k, b in expected.items()}
        return out if paid == want else None

    statements = story.statements = await eventually(payments_applied)
    for key, stmt in statements.items():
        assert [p["period"] for p in stmt["periods"]] == [str(M)], key
        assert_period(stmt["periods"][0], expected[key])
        assert stmt["totals"]["balance"] == fmt(expected[key].balance), key
    assert statements["casino"]["periods"][0]["balance"] == "0.00"
    assert statements["reef"]["periods"][0]["balance"] == "0.00"
    assert statements["timeshare"]["credit"]["total"] == "100.00"
    for key in ("rental", "reef"):  # the late declaration superseded the job's estimate
        period = statements[key]["periods"][0]
        assert (period["basis"], period["estimate"]["status"]) == ("declaration", "superseded")
        assert D(period["estimate"]["tax"]) == expected_estimates[(acct[key], str(M))]
    ponce_period = statements["ponce"]["periods"][0]
    assert (ponce_period["basis"], ponce_period["estimate"]["status"]) == ("estimate", "in_force")
    assert ponce_period["estimate"]["raised_on"] == JOB_AS_OF.isoformat()
    casino_payments = {p["payment_id"]: p for p in statements["casino"]["payments"]}
    assert casino_payments[check["id"]]["reversed"][0]["amount"] == fmt(casino_tax)


@step
async def test_filing_compliance_view(story: Story) -> None:
    """Filing's compliance view: on time, late, not at all."""
    admin, acct = story.admin, story.acct
    pr_comp = await admin.get("filing", "/v1/compliance", params={"jurisdiction": "PR", "period": str(M)})
    # the rental's operator has not filed: its intermediary's schedule does not file for it
    assert (pr_comp["required"], pr_comp["filed_on_time"], pr_comp["filed_late"], pr_comp["not_filed"]) == (
        3,
        1,
        0,
        2,
    )
    assert (pr_comp["late_accounts"], pr_comp["not_filed_accounts"]) == ([], [acct["ponce"], acct["rental"]])
    vi_comp = await admin.get("filing", "/v1/compliance", params={"jurisdiction": "VI", "period": str(M)})
    assert (vi_comp["required"], vi_comp["filed_on_time"], vi_comp["filed_late"], vi_comp["not_filed"]) == (
        2,
        1,
        1,
        0,
    )
    assert vi_comp["late_accounts"] == [acct["reef"]]


@step
async def test_filing_money_is_what_assessment_applied(story: Story) -> None:
    """Cross-service totals, to the cent: filing's money net of the bounced check is what
    assessment applied plus the credit it holds."""
    admin, statements, check = story.admin, story.statements, story.check
    casino_owed, rental_tax = story.casino_owed, story.rental_tax
    ts_paid, reef_owed = story.ts_paid, story.reef_owed
    by_jur = story.by_jur = {"PR": ("casino", "ponce", "rental"), "VI": ("reef", "timeshare")}
    applied = story.applied = {
        j: sum((D(statements[k]["totals"]["total_paid"]) for k in ks), D(0)) for j, ks in by_jur.items()
    }
    credit = {j: sum((D(statements[k]["credit"]["total"]) for k in ks), D(0)) for j, ks in by_jur.items()}
    story.applied_by_component = {
        j: {
            c: sum((D(statements[k]["periods"][0]["components"][c]["paid"]) for k in ks), D(0))
            for c in ("tax", "impact_fee", "penalty", "interest", "fine")
        }
        for j, ks in by_jur.items()
    }
    payments = await admin.pages("filing", "/v1/payments")
    net = {
        j: sum(
            (D(p["amount"]) for p in payments if p["jurisdiction"] == j and p["status"] == "received"), D(0)
        )
        for j in by_jur
    }
    assert net == {"PR": casino_owed + rental_tax, "VI": ts_paid + reef_owed}
    assert {p["id"]: p["status"] for p in payments}[check["id"]] == "reversed"
    # filing's money (net of the bounced check) == what assessment applied + the credit it holds
    assert net == {j: applied[j] + credit[j] for j in by_jur}
    assert credit == {"PR": D(0), "VI": D("100.00")}


@step
async def test_distribution_run_of_today(story: Story) -> None:
    """Distribution receives what is applied (a credit is not yet a collection of any period);
    then the current month's runs."""
    funds = story.funds
    admin, runs, by_jur = story.admin, story.runs, story.by_jur
    applied, casino_tax = story.applied, story.casino_tax

    async def distribution_caught_up() -> bool:
        return all([D((await funds(j))["collected"]) == applied[j] for j in by_jur])

    await eventually(distribution_caught_up)
    for jur in ("PR", "VI"):
        runs[jur].append(
            await admin.post("distribution", "/v1/runs", {"jurisdiction": jur, "month": str(R)}, expect=201)
        )
    if len(RUN_MONTHS) > 1:  # the bounced check was collected in a closed month: netted by today's run
        assert D(runs["PR"][-1]["inputs"]["late"]["amount"]) == -casino_tax


@step
async def test_runs_are_taxcores_distribution(story: Story) -> None:
    """Each run is taxcore's distribution of its own inputs, chained by state; the runs add up to
    what assessment applied, per bucket; the funds hold every cent collected."""
    funds = story.funds
    runs, applied, applied_by_component = story.runs, story.applied, story.applied_by_component
    for jur in ("PR", "VI"):
        previous: dict[str, Any] | None = None
        for run in runs[jur]:
            # conservation: every cent collected is allocated or pending
            allocated = sum((D(a["amount"]) for a in run["allocations"]), D(0))
            assert allocated + D(run["pending"]) == D(run["collected"])
            # the run is taxcore's distribution of its own inputs, chained by state
            buckets = {k: D(v) for k, v in run["inputs"]["by_bucket"].items()}
            if jur == "PR":
                cert = run["inputs"]["certification"]
                fy = fiscal_year("PR", Period.parse(run["month"]).first_day)
                result = distribute_pr_month(
                    month=run["month"],
                    collected=buckets["room_tax"],
                    certification=PRCertification(
                        fiscal_year=fy,
                        amount=D(cert["amount"]),
                        certified_on=date(fy - 1, 6, 15),
                        document_reference=cert["document_reference"],
                    ),
                    state=PRState.model_validate(previous["state"]) if previous else None,
                )
            else:
                result = distribute_vi_month(
                    month=run["month"],
                    room_tax=buckets["room_tax"],
                    impact_fee=buckets["impact_fee"],
                    state=VIState.model_validate(previous["state"]) if previous else None,
                )
            funds_of_run = {
                a["fund"]: D(a["amount"]) for a in run["allocations"] if a["account"].startswith("fund:")
            }
            assert funds_of_run == {a.fund: a.amount for a in result.allocations}
            assert D(run["pending"]) == result.pending
            other = [D(a["amount"]) for a in run["allocations"] if a["account"] == f"other:{jur}"]
            assert sum(other, D(0)) == buckets["other"]
            previous = run
        totals = {
            b: sum((D(r["inputs"]["by_bucket"][b]) for r in runs[jur]), D(0))
            for b in ("room_tax", "impact_fee", "other", "suspense")
        }
        comp = applied_by_component[jur]
        assert totals == {
            "room_tax": comp["tax"],
            "impact_fee": comp["impact_fee"],
            "other": comp["penalty"] + comp["interest"] + comp["fine"],
            "suspense": D(0),
        }
        assert sum((D(r["collected"]) for r in runs[jur]), D(0)) == applied[jur]

        balances = await funds(jur)
        assert D(balances["collected"]) == applied[jur]
        assert D(balances["pending"]) == 0  # certified and run: nothing held
        assert D(balances["distributed"]) == applied[jur]
        assert balances["conserved"] is True
        # funds + pending + other receipts == collected
        in_accounts = sum(
            (
                D(a["balance"])
                for a in balances["accounts"]
                if a["kind"] in ("fund", "pending", "other", "suspense")
            ),
            D(0),
        )
        assert in_accounts == applied[jur]


@step
async def test_ledger_reconciles(story: Story) -> None:
    """Distribution's ledger: balanced, every entry double, no collection booked twice, one
    entry per run that moved money."""
    admin, runs = story.admin, story.runs
    trial = await admin.get("distribution", "/v1/ledger/trial-balance")
    assert trial["balanced"] is True
    assert D(trial["total_debit"]) == D(trial["total_credit"])
    entries = await admin.pages("distribution", "/v1/ledger/entries")
    for entry in entries:  # every entry balances on its own (double entry)
        assert sum((D(x["amount"]) for x in entry["lines"]), D(0)) == 0, entry
    collections = [e for e in entries if e["kind"] == "collection"]
    assert len({e["event_id"] for e in collections}) == len(collections)  # no posting booked twice
    posted_runs = [r for r in runs["PR"] + runs["VI"] if D(r["collected"]) != 0]
    assert len([e for e in entries if e["kind"] == "run"]) == len(posted_runs)

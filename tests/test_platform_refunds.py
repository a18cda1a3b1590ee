"""A paid refund of money already distributed, across the real services, driven over HTTP.

The story (VI, 33 V.I.C. §54; tax month ``M`` = the latest month already past due):

* Two St. John timeshares. Timeshare A files ``M`` on time: 8,000.00 of exchange guests'
  room revenue at 12.5% = 1,000.00 of room tax (§54(b)(1)) and 40 owner unit-days at $25 =
  1,000.00 of impact fee (§54(b)(2)-(3)), and pays 2,000.00 with the return.
* Distribution runs ``M`` (and any month up to the current one): §54(e) room tax to the
  Agriculture Revolving Fund's floor, §54(b)(3)(D) impact fee 15% to the Tourism Advertising
  Revolving Fund (its four purposes, 3.75% each) and 85% to the General Fund.
* Today A amends: 20 owner unit-days, 500.00 of impact fee. The 500.00 becomes A's credit;
  the agency holds it, so the funds keep it (nothing is posted).
* A's refund of the 500.00 is requested, reviewed, approved and paid by two different agency
  officers (maker-checker). Only now does the money leave: assessment posts -500.00 of impact
  fee, naming the refund, dated A's payment (a closed month: a late arrival).
* Timeshare B files ``M`` late today (40 unit-days, 1,000.00 of impact fee) and pays it:
  today's run nets B's 1,000.00 with A's -500.00, so the funds get 500.00 of impact fee by
  the same rule: exactly the refunded 500.00's shares less than B's 1,000.00 would have
  given them (15% = 75.00, 18.75 to each purpose; 85% = 425.00 to the General Fund).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from platform_harness import TODAY, Api, Platform, eventually

from taxcore.money import fmt
from taxcore.periods import Period, due_date

D = Decimal


def tax_month(today: date) -> Period:
    """The latest month whose VI due date (§54(f): 30 days after the month) is past."""
    month = Period.of(today).prev()
    while not due_date("VI", month) < today:
        month = month.prev()
    return month


M = tax_month(TODAY)
R = Period.of(TODAY)
PAID_ON = due_date("VI", M) - timedelta(days=5)
TARF = (
    "vi_tarf_virgin_islands_advertising",
    "vi_tarf_st_john_advertising",
    "vi_tarf_st_croix_advertising",
    "vi_tarf_marine_industry_advertising",
)


@pytest.fixture(scope="module")
async def platform() -> AsyncIterator[Platform]:
    p = Platform(prefix="roomtax_e2e_refunds")
    try:
        await p.start()
        yield p
    finally:
        p.stop()


async def person(platform: Platform, admin: Api, tag: str, name: str, role: str) -> Api:
    """An agency person (registry user) signed in with e-mail and password."""
    email, password = f"{name}-{tag}@agency.example", f"pw-{uuid.uuid4().hex}"
    body = {"email": email, "name": f"{name} {tag}", "role": role, "password": password}
    await admin.post("registry", "/v1/people/users", body, expect=201)
    r = await admin.client.post(
        f"{platform.url('registry')}/v1/people/token", json={"email": email, "password": password}
    )
    assert r.status_code == 200, r.text
    return Api(platform, r.json()["access_token"])


def fund_balances(funds: dict[str, Any]) -> dict[str, D]:
    return {
        a["account"].removeprefix("fund:"): D(a["balance"])
        for a in funds["accounts"]
        if a["kind"] == "fund" and D(a["balance"]) != 0
    }


async def test_a_paid_refund_gives_the_funds_shares_back_in_the_next_run(platform: Platform) -> None:
    tag = uuid.uuid4().hex[:6]
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    maker = await person(platform, admin, tag, "maker", "agency-officer")
    checker = await person(platform, admin, tag, "checker", "agency-officer")

    operator = await admin.post(
        "registry",
        "/v1/operators",
        {"name": f"Cruz Bay Vacation Club {tag}", "email": f"tax@cruzbay-{tag}.example"},
        expect=201,
    )

    async def timeshare(name: str) -> str:
        body = {
            "jurisdiction": "VI",
            "lodging_class": "timeshare",
            "casino": False,
            "name": f"{name} {tag}",
            "address": {"line1": "1 North Shore Rd", "municipality": "St. John"},
            "room_count": 40,
            "operator_id": operator["id"],
            "registered_on": M.first_day.isoformat(),
        }
        out: dict[str, Any] = await admin.post("registry", "/v1/lodgings", body, expect=201)
        return str(out["tax_account"])

    a, b = await timeshare("Cruz Bay Timeshare"), await timeshare("Maho Bay Timeshare")

    async def known(account: str) -> bool:
        filing = await admin.call("GET", "filing", f"/v1/lodgings/{account}/periods/{M}")
        stmt = await admin.call("GET", "assessment", f"/v1/accounts/{account}/statement")
        return filing.status_code == stmt.status_code == 200

    await eventually(lambda: _all(known(a), known(b)))

    def lines(revenue: str, unit_days: int, tax: str, fee: str) -> dict[str, Any]:
        return {
            "room_revenue": revenue,
            "room_nights": 64 if D(revenue) else 0,
            "timeshare_owner_unit_days": unit_days,
            "declared": {
                "taxable_base": revenue,
                "tax": tax,
                "impact_fee": fee,
                "total": fmt(D(tax) + D(fee)),
            },
        }

    # A: §54(b)(1) 8,000.00 x 12.5% = 1,000.00; §54(b)(2)-(3) 40 x 25.00 = 1,000.00; paid on time
    declared = await admin.post(
        "filing",
        "/v1/declarations",
        {
            "lodging": a,
            "period": str(M),
            **lines("8000.00", 40, "1000.00", "1000.00"),
            "received_on": PAID_ON.isoformat(),
            "filer": {"kind": "operator", "id": operator["id"]},
        },
        expect=201,
    )
    assert (declared["computed"]["tax"], declared["computed"]["impact_fee"]) == ("1000.00", "1000.00")
    payment = await admin.post(
        "filing",
        "/v1/payments",
        {
            "tax_account": a,
            "amount": "2000.00",
            "method": "electronic_transfer",
            "received_on": PAID_ON.isoformat(),
            "periods": [{"period": str(M), "amount": "2000.00"}],
            "payer": {"kind": "operator", "id": operator["id"]},
        },
        expect=201,
    )

    async def funds() -> dict[str, Any]:
        out: dict[str, Any] = await admin.get(
            "distribution", "/v1/funds", params={"jurisdiction": "VI", "as_of": R.last_day.isoformat()}
        )
        return out

    async def collected(amount: str) -> bool:
        return (await funds())["collected"] == amount

    await eventually(lambda: collected("2000.00"))
    month = M
    while month < R:  # run M and every month after it, up to the current month
        await admin.post("distribution", "/v1/runs", {"jurisdiction": "VI", "month": str(month)}, expect=201)
        month = month.next()
    given = fund_balances(await funds())
    # §54(e): room tax to the Agriculture Revolving Fund (its $1,000,000 floor comes first);
    # §54(b)(3)(D): impact fee 15% to TARF (3.75% x 1,000.00 = 37.50 to each of its four
    # purposes), 85% = 850.00 to the General Fund
    assert given == {"vi_agriculture_revolving_fund": D("1000.00"), "vi_general_fund": D("850.00")} | {
        f: D("37.50") for f in TARF
    }

    # A amends to 20 owner unit-days: 500.00 of impact fee; the 500.00 paid too much is credit
    await admin.post(
        "filing",
        f"/v1/declarations/{declared['id']}/amendments",
        lines("8000.00", 20, "1000.00", "500.00"),
        expect=201,
    )

    async def credit_of_a(amount: str) -> bool:
        stmt = await admin.get("assessment", f"/v1/accounts/{a}/statement")
        return bool(stmt["credit"]["total"] == amount)

    await eventually(lambda: credit_of_a("500.00"))
    assert (await funds())["collected"] == "2000.00"  # held: the funds keep it until it leaves

    # the refund: requested (the agency administrator, for the taxpayer), reviewed, approved and
    # paid; each money step by two officers
    refund = await admin.post("assessment", f"/v1/accounts/{a}/refunds", {"amount": "500.00"}, expect=201)
    rid = refund["refund_id"]
    await maker.post("assessment", f"/v1/refunds/{rid}/review", expect=200)
    proposed = await maker.post(
        "assessment",
        f"/v1/refunds/{rid}/decision",
        {"outcome": "approve", "reasons": "amended return: 20 owner unit-days"},
        expect=200,
    )
    own = await maker.call(
        "POST", "assessment", f"/v1/proposals/{proposed['pending_proposal_id']}/approve", json={}
    )
    assert own.status_code == 409  # the maker cannot check
    await checker.post(
        "assessment", f"/v1/proposals/{proposed['pending_proposal_id']}/approve", {}, expect=200
    )
    payout = await maker.post(
        "assessment",
        f"/v1/refunds/{rid}/payment",
        {"method": "ach", "reference": f"ACH-{tag}"},
        expect=200,
    )
    await checker.post("assessment", f"/v1/proposals/{payout['pending_proposal_id']}/approve", {}, expect=200)
    assert (await maker.get("assessment", f"/v1/refunds/{rid}"))["status"] == "paid"

    await eventually(lambda: collected("1500.00"))  # the give-back arrived: -500.00
    entries = await admin.pages("distribution", "/v1/ledger/entries", tax_account=a)
    [back] = [e for e in entries if e["kind"] == "collection" and f"refund {rid}" in e["description"]]
    assert (back["effective_on"], sorted(D(x["amount"]) for x in back["lines"])) == (
        PAID_ON.isoformat(),
        [D("-500.00"), D("500.00")],
    )
    assert f"of payment {payment['id']}: impact_fee -500.00" in back["description"]
    assert fund_balances(await funds()) == given  # not yet: the next run gives the shares back

    # B files M late today and pays its 40 x 25.00 = 1,000.00 of impact fee
    await admin.post(
        "filing",
        "/v1/declarations",
        {
            "lodging": b,
            "period": str(M),
            **lines("0.00", 40, "0.00", "1000.00"),
            "filer": {"kind": "operator", "id": operator["id"]},
        },
        expect=201,
    )
    await admin.post(
        "filing",
        "/v1/payments",
        {
            "tax_account": b,
            "amount": "1000.00",
            "method": "electronic_transfer",
            "periods": [{"period": str(M), "amount": "1000.00"}],
            "payer": {"kind": "operator", "id": operator["id"]},
        },
        expect=201,
    )
    await eventually(lambda: collected("2500.00"))
    run = await admin.post("distribution", "/v1/runs", {"jurisdiction": "VI", "month": str(R)}, expect=201)
    assert run["inputs"]["by_bucket"]["impact_fee"] == "500.00"  # 1,000.00 - 500.00
    assert run["inputs"]["late"] == {"collections": 1, "amount": "-500.00"}
    after = fund_balances(await funds())
    # B's 1,000.00 alone gives 37.50 to each purpose and 850.00; less the refunded 500.00's
    # shares (18.75 to each purpose, 425.00): 18.75 and 425.00 this run
    assert {f: after[f] - given[f] for f in after} == {
        "vi_agriculture_revolving_fund": D("0.00"),
        "vi_general_fund": D("850.00") - D("425.00"),
    } | {f: D("37.50") - D("18.75") for f in TARF}
    balances = await funds()
    assert (balances["collected"], balances["distributed"], balances["pending"]) == (
        "2500.00",
        "2500.00",
        "0.00",
    )
    assert balances["conserved"] is True
    assert (await admin.get("distribution", "/v1/ledger/trial-balance"))["balanced"] is True
    for api in (admin, maker, checker):
        await api.close()


async def _all(*checks: Any) -> bool:
    return all([await c for c in checks])

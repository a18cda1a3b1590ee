"""Load the demo story through the public HTTP APIs, as clients would (idempotent).

Four lodgings, two jurisdictions, four months (the four before the last month
that is over, M1..M4) and that last finished month (M5): a month is filed only
once it is over (taxcore ``periods.filing_opens_on``), so nothing files the
current month.

* El San Juan Casino Hotel (PR, casino rate): its operator files and pays every
  month on time; the M2 check bounces and is paid again, late, with the penalty
  and interest of the statement. Its property-management system (an ``operator``
  API client) files and pays M5 itself.
* Casita Esperanza (Vieques, PR short-term rental): the online intermediary
  Caribe Stays files remittance schedules (JSON, then CSV) for its bookings and
  pays for them; its own API client files M5's schedule. The intermediary's
  schedule meets only its own obligation (taxcore ``obligations.declaration_filers``,
  PR §28(B), §47), so the operator, Isla Nena Rentals, files its own return on time
  every month too (its few direct bookings) and pays it; its API client files and
  pays M5.
* Harbour View Hotel (St. Thomas, VI): files late and pays late every month;
  penalties and interest show on its statement.
* Cruz Bay Vacation Club (St. John, VI timeshare): owner unit-days bear the
  impact fee; it misses M3, and the agency's non-filer job estimates it.

Then the Bank's certification of the PR fiscal year and the monthly distribution
runs M1..M4 in both jurisdictions, once every collection has reached the
distribution service (events are asynchronous: polled).

Returns received in the past are recorded by the agency (``agency-admin``, with
``received_on``: the APIs let only the agency date a document in the past); what
happens today goes through the clients' own credentials. Every POST carries an
``Idempotency-Key`` (a replay returns the first response), payments computed from
a statement are looked up by their reference first, so running the demo again
after an interruption resumes where it stopped and never duplicates anything. Once
loaded (its last distribution runs posted) it is skipped, with a line saying so.
It waits only for its own lodgings' events (their payments in distribution's ledger),
so payments on other lodgings never hold it up. Writes ``.run/demo.json``
(ids and credentials) and ``.run/demo-curl.txt`` (curl lines the banner prints).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from taxcore.money import fmt
from taxcore.periods import Period, due_date
from taxcore.rules.declaration import DeclarationInput, compute_declaration

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = os.environ.get("ROOMTAX_REGISTRY_URL", "http://127.0.0.1:8001")
FILING = os.environ.get("ROOMTAX_FILING_URL", "http://127.0.0.1:8002")
ASSESSMENT = os.environ.get("ROOMTAX_ASSESSMENT_URL", "http://127.0.0.1:8003")
DISTRIBUTION = os.environ.get("ROOMTAX_DISTRIBUTION_URL", "http://127.0.0.1:8004")
NOTIFY = os.environ.get("ROOMTAX_NOTIFY_URL", "http://127.0.0.1:8005")
ADMIN_ID = os.environ.get("REGISTRY_BOOTSTRAP_ADMIN_CLIENT_ID", "agency-admin")
ADMIN_SECRET = os.environ.get("REGISTRY_BOOTSTRAP_ADMIN_SECRET", "dev-admin-secret")
WAIT_SECONDS = float(os.environ.get("ROOMTAX_DEMO_WAIT_SECONDS", "40"))
WEB = os.environ.get("ROOMTAX_WEB_URL", "http://127.0.0.1:8000")
# the demo people's password: development data only (the registry refuses nothing here, so
# never load the demo into a production registry)
DEMO_PASSWORD = os.environ.get("ROOMTAX_DEMO_PASSWORD", "roomtax-demo-2026")

SJ, VQ, ST, SJN = (
    "El San Juan Casino Hotel",
    "Casita Esperanza",
    "Harbour View Hotel",
    "Cruz Bay Vacation Club",
)


def say(msg: str) -> None:
    print(f"[roomtax] {msg}", flush=True)


class DemoError(SystemExit):
    pass


def token(client: httpx.Client, cid: str, secret: str) -> dict[str, str]:
    r = client.post(
        f"{REGISTRY}/v1/oauth/token",
        data={"grant_type": "client_credentials", "client_id": cid, "client_secret": secret},
    )
    r.raise_for_status()
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


@dataclass
class Api:
    client: httpx.Client
    admin: dict[str, str]
    today: date
    replayed: int = 0
    created: int = 0
    notes: list[str] = field(default_factory=list)

    def post(
        self,
        url: str,
        body: dict[str, Any] | None,
        key: str,
        headers: dict[str, str] | None = None,
        *,
        content: str | None = None,
        content_type: str | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        h = {**(headers or self.admin), "Idempotency-Key": key}
        if content is not None:
            h["Content-Type"] = content_type or "text/plain"
            r = self.client.post(url, content=content.encode(), headers=h, params=params)
        else:
            r = self.client.post(url, json=body, headers=h, params=params)
        if r.status_code >= 400:
            raise DemoError(f"demo: POST {url} ({key}) failed: {r.status_code} {r.text}")
        if r.headers.get("idempotent-replayed") == "true":
            self.replayed += 1
        else:
            self.created += 1
        return r.json()

    def get(self, url: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
        r = self.client.get(url, params=params, headers=headers or self.admin)
        if r.status_code >= 400:
            raise DemoError(f"demo: GET {url} failed: {r.status_code} {r.text}")
        return r.json()

    def pages(self, url: str, **params: Any) -> list[Any]:
        """Every item of a cursor-paginated list."""
        items: list[Any] = []
        cursor: str | None = None
        while True:
            query: dict[str, Any] = {**params, **({"cursor": cursor} if cursor else {})}
            page = self.get(url, None, **query)
            items.extend(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def past(self, d: date) -> date:
        """A day in the story, never after today (the APIs refuse future dates)."""
        return min(d, self.today)


# --------------------------------------------------------------------------- registry


def load_registry(api: Api, anchor: date) -> dict[str, Any]:
    """Operators, the intermediary, four lodgings, bonds, an authorization, a film
    certificate and three API clients (their secrets come back on a replay too)."""
    post = api.post
    ops = {
        name: post(f"{REGISTRY}/v1/operators", {"name": name, "email": email}, f"demo-op-{i}")
        for i, (name, email) in enumerate(
            [
                ("Condado Hospitality Group", "tax@condado.example"),
                ("Isla Nena Rentals", "hola@islanena.example"),
                ("Charlotte Amalie Hotels", "accounts@cahotels.example"),
                ("Cruz Bay Vacation Owners", "owners@cruzbay.example"),
            ]
        )
    }
    ota = post(f"{REGISTRY}/v1/facilitators", {"name": "Caribe Stays Online"}, "demo-fac-0")
    specs = [
        (SJ, "PR", "hotel", True, "San Juan", 388, "Condado Hospitality Group"),
        (VQ, "PR", "short_term_rental", False, "Vieques", 3, "Isla Nena Rentals"),
        (ST, "VI", "hotel", False, "St. Thomas", 120, "Charlotte Amalie Hotels"),
        (SJN, "VI", "timeshare", False, "St. John", 64, "Cruz Bay Vacation Owners"),
    ]
    lodgings = {}
    for i, (name, jur, cls, casino, muni, rooms, op) in enumerate(specs):
        lodgings[name] = post(
            f"{REGISTRY}/v1/lodgings",
            {
                "jurisdiction": jur,
                "lodging_class": cls,
                "casino": casino,
                "name": name,
                "address": {"line1": f"{100 + i} Calle Principal", "municipality": muni},
                "room_count": rooms,
                "operator_id": ops[op]["id"],
                "registered_on": anchor.isoformat(),
            },
            f"demo-lodging-{i}",
        )
    sj, vq = lodgings[SJ], lodgings[VQ]
    m3 = Period.of(anchor).add_months(2)
    post(
        f"{REGISTRY}/v1/lodgings/{sj['id']}/bonds",
        {
            "kind": "surety",
            "amount": "250000.00",
            "issuer": "Seguros Triple Fianza",
            "effective_on": anchor.isoformat(),
            "expires_on": date(anchor.year + 2, anchor.month, 1).isoformat(),
        },
        "demo-bond-0",
    )
    post(
        f"{REGISTRY}/v1/lodgings/{vq['id']}/bonds",
        {
            "kind": "cash_deposit",
            "amount": "2500.00",
            "issuer": "Isla Nena Rentals",
            "effective_on": anchor.isoformat(),
            "expires_on": date(anchor.year + 1, anchor.month, 1).isoformat(),
        },
        "demo-bond-1",
    )
    post(
        f"{REGISTRY}/v1/lodgings/{vq['id']}/authorizations",
        {"facilitator_id": ota["id"], "starts_on": anchor.isoformat()},
        "demo-auth-0",
    )
    post(
        f"{REGISTRY}/v1/lodgings/{sj['id']}/certificates",
        {
            "certificate_number": f"PRFILM-{m3.year}-0042",
            "production": "Isla del Encanto (feature film)",
            "valid_from": m3.first_day.isoformat(),
            "valid_to": m3.add_months(3).last_day.isoformat(),
        },
        "demo-cert-0",
    )
    creds = {}
    for i, (label, name, role, bind) in enumerate(
        [
            (
                "operator",
                "demo San Juan operator (PMS)",
                "operator",
                {"operator_id": ops["Condado Hospitality Group"]["id"]},
            ),
            ("facilitator", "demo intermediary", "facilitator", {"facilitator_id": ota["id"]}),
            ("dashboard", "demo dashboard", "dashboard", {}),
            (
                "vieques-operator",
                "demo Vieques operator",
                "operator",
                {"operator_id": ops["Isla Nena Rentals"]["id"]},
            ),
        ]
    ):
        c = post(f"{REGISTRY}/v1/oauth-clients", {"name": name, "role": role, **bind}, f"demo-client-{i}")
        creds[label] = {"client_id": c["client_id"], "client_secret": c["client_secret"]}
    people = load_people(api, ops, ota)
    return {"operators": ops, "facilitator": ota, "lodgings": lodgings, "clients": creds, "people": people}


def load_people(api: Api, ops: dict[str, Any], ota: dict[str, Any]) -> dict[str, str]:
    """One person per role for the web app (e-mail by role); an existing one is kept."""
    people = {
        "agency-admin": ("admin@agency.example", "Ana Agency Admin", {}),
        "agency-auditor": ("auditor@agency.example", "Alberto Auditor", {}),
        "dashboard": ("dashboard@agency.example", "Dora Dashboard", {}),
        "operator": (
            "operator@condado.example",
            "Olga Operator",
            {"operator_id": ops["Condado Hospitality Group"]["id"]},
        ),
        "facilitator": (
            "facilitator@caribestays.example",
            "Félix Facilitator",
            {"facilitator_id": ota["id"]},
        ),
    }
    for role, (email, name, bind) in people.items():
        body = {"email": email, "name": name, "role": role, "password": DEMO_PASSWORD, **bind}
        r = api.client.post(f"{REGISTRY}/v1/people/users", json=body, headers=api.admin)
        if r.status_code not in (201, 409):  # 409: created by an earlier run
            raise DemoError(f"demo: creating the {role} person failed: {r.status_code} {r.text}")
    return {role: email for role, (email, _, _) in people.items()}


# --------------------------------------------------------------------------- filing helpers


def lines_for(lodging: dict[str, Any], period: Period, scale: int) -> dict[str, Any]:
    """A month's lines: revenue grows a little month to month (``scale``)."""
    name = lodging["name"]
    if name == SJ:
        return {
            "room_revenue": f"{412000 + 9750 * scale}.00",
            "resort_and_other_fees": "18400.00",
            "room_nights": 1890 + 40 * scale,
        }
    if name == VQ:
        return {"room_revenue": f"{5200 + 350 * scale}.00", "room_nights": 24 + 2 * scale}
    if name == ST:
        return {"room_revenue": f"{96500 + 2300 * scale}.00", "room_nights": 640 + 15 * scale}
    return {
        "room_revenue": f"{38200 + 900 * scale}.00",
        "room_nights": 210 + 6 * scale,
        "timeshare_owner_unit_days": 310 + 12 * scale,
    }


def direct_lines(scale: int) -> dict[str, Any]:
    """Casita Esperanza's own direct bookings (not through the intermediary) in a month."""
    return {"room_revenue": f"{450 + 50 * scale}.00", "room_nights": 2 + scale % 2}


def declared_for(lodging: dict[str, Any], period: Period, lines: dict[str, Any]) -> dict[str, str]:
    """What the filer's own software computes it owes (the statute's arithmetic, taxcore)."""
    result = compute_declaration(
        DeclarationInput(
            jurisdiction=lodging["jurisdiction"],
            lodging_class=lodging["lodging_class"],
            casino=lodging["casino"],
            period=str(period),
            **{k: Decimal(v) if isinstance(v, str) else v for k, v in lines.items()},
        ),
        today=period.last_day,
    )
    declared = {
        "taxable_base": fmt(result.taxable_base),
        "tax": fmt(result.tax),
        "total": fmt(result.total_due),
    }
    if result.impact_fee:
        declared["impact_fee"] = fmt(result.impact_fee)
    return declared


def file_return(
    api: Api,
    lodging: dict[str, Any],
    period: Period,
    scale: int,
    key: str,
    *,
    received_on: date | None,
    headers: dict[str, str] | None = None,
    lines: dict[str, Any] | None = None,
) -> dict[str, Any]:
    lines = lines or lines_for(lodging, period, scale)
    body: dict[str, Any] = {
        "lodging": lodging["tax_account"],
        "period": str(period),
        **lines,
        "declared": declared_for(lodging, period, lines),
    }
    if received_on is not None:  # the agency records a return received on a past day
        body["received_on"] = received_on.isoformat()
        body["filer"] = {"kind": "operator", "id": lodging["operator_id"]}
    out: dict[str, Any] = api.post(f"{FILING}/v1/declarations", body, key, headers)
    return out


@dataclass
class Payments:
    """Payments already recorded, by reference (a payment computed from a statement
    would change its body on a second run; its reference says it is already there)."""

    api: Api
    seen: dict[str, set[str]] = field(default_factory=dict)

    def references(self, tax_account: str) -> set[str]:
        if tax_account not in self.seen:
            payments = self.api.pages(f"{FILING}/v1/payments", lodging=tax_account, limit=200)
            self.seen[tax_account] = {p["reference"] for p in payments if p["reference"]}
        return self.seen[tax_account]

    def pay(
        self,
        lodging: dict[str, Any],
        period: Period,
        amount: str,
        method: str,
        reference: str,
        *,
        received_on: date | None,
        payer: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any] | None:
        account = lodging["tax_account"]
        if reference in self.references(account):
            return None
        body: dict[str, Any] = {
            "tax_account": account,
            "amount": amount,
            "method": method,
            "reference": reference,
            "periods": [{"period": str(period), "amount": amount}],
        }
        if received_on is not None:
            body["received_on"] = received_on.isoformat()
            body["payer"] = payer or {"kind": "operator", "id": lodging["operator_id"]}
        out: dict[str, Any] = self.api.post(f"{FILING}/v1/payments", body, f"demo-pay-{reference}", headers)
        self.seen[account].add(reference)
        return out


def statement(api: Api, account: str, as_of: date) -> dict[str, Any]:
    out: dict[str, Any] = api.get(f"{ASSESSMENT}/v1/accounts/{account}/statement", as_of=as_of.isoformat())
    return out


def wait_for(what: str, check: Any, timeout: float = WAIT_SECONDS) -> None:
    """Poll ``check()`` until true (events between services are asynchronous)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except DemoError:
            pass  # e.g. an account assessment does not know yet (404)
        if time.monotonic() > deadline:
            raise DemoError(f"demo: gave up waiting for {what} after {timeout:.0f}s; see .run/*.log")
        time.sleep(0.3)


def loaded(api: Api, last_month: Period) -> bool:
    """The demo's last step is done: both jurisdictions' distribution runs of its last month."""
    return all(
        str(last_month)
        in {r["month"] for r in api.pages(f"{DISTRIBUTION}/v1/runs", jurisdiction=j, limit=500)}
        for j in ("PR", "VI")
    )


def collected_for(api: Api, tax_account: str) -> Decimal:
    """What distribution's ledger holds in cash for one lodging (its collection entries)."""
    entries = api.pages(f"{DISTRIBUTION}/v1/ledger/entries", tax_account=tax_account, limit=500)
    return sum(
        (Decimal(x["amount"]) for e in entries for x in e["lines"] if x["account"].startswith("cash:")),
        Decimal(0),
    )


def period_of(st: dict[str, Any], period: Period) -> dict[str, Any] | None:
    for p in st["periods"]:
        if p["period"] == str(period):
            return p  # type: ignore[no-any-return]
    return None


# --------------------------------------------------------------------------- the story


def main() -> int:
    today = date.today()
    with httpx.Client(timeout=60) as client:
        api = Api(client, token(client, ADMIN_ID, ADMIN_SECRET), today)
        existing = api.get(f"{REGISTRY}/v1/lodgings", limit=500)["items"]
        found = [x for x in existing if x["name"] == SJ]
        # The story's months hang on the registration day, chosen on the first run
        # (five months before the current one) and read back on every later run.
        anchor = (
            date.fromisoformat(found[0]["registered_on"])
            if found
            else Period.of(today).add_months(-5).first_day
        )
        months = [Period.of(anchor).add_months(i) for i in range(4)]
        current = Period.of(today).prev()  # M5: the last month that is over, filed live by the clients
        if months[-1] >= current:
            raise DemoError(
                f"demo: the loaded demo's months ({months[0]}..{months[-1]}) are not over yet; "
                "drop the roomtax_* databases to start again"
            )
        if found and loaded(api, months[-1]):
            saved = ROOT / ".run" / "demo.json"
            state = json.loads(saved.read_text()) if saved.exists() else {}
            if {"lodgings", "runs", "schedules"} <= set(state):
                write_curl(state, months, today)  # the banner's lines, dated today
            say(
                f"demo already loaded (story months {months[0]}..{months[-1]}, distribution runs posted): "
                "skipped; its ids and credentials are in .run/demo.json"
            )
            return 0
        state = load_registry(api, anchor)
        lodgings = state["lodgings"]
        sj, vq, st, sjn = (lodgings[n] for n in (SJ, VQ, ST, SJN))
        ota = state["facilitator"]
        creds = state["clients"]
        (ROOT / ".run").mkdir(exist_ok=True)
        (ROOT / ".run" / "demo.json").write_text(json.dumps(state, indent=2))
        say(
            f"registry: 4 lodgings, bonds, authorization, certificate; story months {months[0]}..{months[-1]}"
        )

        pays = Payments(api)

        # Filing learns of the lodgings (and the authorization) from registry events.
        def filing_knows() -> bool:
            for lod in lodgings.values():
                r = client.get(f"{FILING}/v1/lodgings/{lod['id']}/periods/{months[0]}", headers=api.admin)
                if r.status_code != 200:
                    return False
            return True

        wait_for("the filing service to learn of the lodgings", filing_knows)
        schedules: dict[str, str] = {}

        def due(lodging: dict[str, Any], p: Period) -> date:
            return due_date(lodging["jurisdiction"], p)

        # San Juan: on time, paid on time; M2's check bounces and is paid again late.
        for i, p in enumerate(months):
            d = due(sj, p)
            decl = file_return(
                api, sj, p, i, f"demo-decl-sj-{p}", received_on=api.past(d - timedelta(days=3))
            )
            method = "check" if i == 1 else "electronic_transfer"
            pays.pay(
                sj,
                p,
                decl["computed"]["total_due"],
                method,
                f"SJ-{p}-{'CHK-10442' if i == 1 else 'EFT'}",
                received_on=api.past(d - timedelta(days=2)),
            )
        bounced_month = months[1]
        bounced_ref = f"SJ-{bounced_month}-CHK-10442"
        bounce_day = api.past(due(sj, bounced_month) + timedelta(days=5))
        check = api.get(
            f"{FILING}/v1/payments", lodging=sj["tax_account"], period=str(bounced_month), limit=50
        )
        chk = next(x for x in check["items"] if x["reference"] == bounced_ref)
        if chk["status"] != "reversed":
            api.post(
                f"{FILING}/v1/payments/{chk['id']}/reversals",
                {
                    "reason": "check returned unpaid (insufficient funds)",
                    "reversed_on": bounce_day.isoformat(),
                },
                f"demo-reversal-{bounced_ref}",
            )

        # Vieques: the intermediary's schedules (JSON for M1-M2, CSV for M3-M4), paid by it.
        for i, p in enumerate(months):
            d = due(vq, p)
            lines = lines_for(vq, p, i)
            declared = declared_for(vq, p, lines)
            row = {
                "tax_account": vq["tax_account"],
                **lines,
                "declared_taxable_base": declared["taxable_base"],
                "declared_tax": declared["tax"],
                "declared_total": declared["total"],
            }
            received = api.past(d - timedelta(days=1))
            if i < 2:
                sched = api.post(
                    f"{FILING}/v1/remittance-schedules",
                    {
                        "period": str(p),
                        "facilitator_id": ota["id"],
                        "received_on": received.isoformat(),
                        "rows": [row],
                    },
                    f"demo-schedule-{p}",
                )
            else:
                header = list(row)
                csv_text = ",".join(header) + "\n" + ",".join(str(row[h]) for h in header) + "\n"
                sched = api.post(
                    f"{FILING}/v1/remittance-schedules",
                    None,
                    f"demo-schedule-{p}",
                    content=csv_text,
                    content_type="text/csv",
                    params={
                        "period": str(p),
                        "facilitator_id": ota["id"],
                        "received_on": received.isoformat(),
                    },
                )
            schedules[str(p)] = sched["id"]
            pays.pay(
                vq,
                p,
                declared["total"],
                "electronic_transfer",
                f"CARIBE-{p}",
                received_on=received,
                payer={"kind": "facilitator", "id": ota["id"]},
            )
            # The operator's own return (its direct bookings), on time: only the operator's
            # declaration meets the lodging's obligation (PR §47 fine otherwise).
            own = file_return(
                api,
                vq,
                p,
                i,
                f"demo-decl-vq-{p}",
                received_on=api.past(d - timedelta(days=3)),
                lines=direct_lines(i),
            )
            pays.pay(
                vq,
                p,
                own["computed"]["total_due"],
                "electronic_transfer",
                f"ISLANENA-{p}-EFT",
                received_on=api.past(d - timedelta(days=2)),
            )

        # St. Thomas: late returns (12 days), late payments (25 days) of the statement's balance.
        for i, p in enumerate(months):
            d = due(st, p)
            file_return(api, st, p, i, f"demo-decl-st-{p}", received_on=api.past(d + timedelta(days=12)))

        # St. John timeshare: on time, with owner unit-days; M3 never filed.
        for i, p in enumerate(months):
            if i == 2:
                continue
            d = due(sjn, p)
            decl = file_return(
                api, sjn, p, i, f"demo-decl-sjn-{p}", received_on=api.past(d - timedelta(days=2))
            )
            pays.pay(
                sjn,
                p,
                decl["computed"]["total_due"],
                "electronic_transfer",
                f"CRUZBAY-{p}-EFT",
                received_on=api.past(d - timedelta(days=2)),
            )
        say("filing: returns, schedules and on-time payments recorded; the M2 check bounced")

        # Assessment learns of every return and of the bounce through events: wait for it.
        def knows(lodging: dict[str, Any], periods: list[Period], reversals: int = 0) -> bool:
            s = statement(api, lodging["tax_account"], today)
            have = {x["period"] for x in s["periods"] if x["basis"] == "declaration"}
            rev = sum(len(x["reversed"]) for x in s["payments"])
            return {str(p) for p in periods} <= have and rev >= reversals

        wait_for(
            "assessment to record the returns",
            lambda: (
                knows(sj, months, 1)
                and knows(st, months)
                and knows(vq, months)
                and knows(sjn, [m for i, m in enumerate(months) if i != 2])
            ),
        )

        # The late payments, each the period's balance on the day it is paid.
        repay_day = api.past(due(sj, bounced_month) + timedelta(days=20))
        if f"SJ-{bounced_month}-EFT-REPAY" not in pays.references(sj["tax_account"]):
            bal = period_of(statement(api, sj["tax_account"], repay_day), bounced_month)
            assert bal is not None
            pays.pay(
                sj,
                bounced_month,
                bal["balance"],
                "electronic_transfer",
                f"SJ-{bounced_month}-EFT-REPAY",
                received_on=repay_day,
            )
        for p in months:
            ref = f"HARBOUR-{p}-LATE"
            if ref in pays.references(st["tax_account"]):
                continue
            pay_day = api.past(due(st, p) + timedelta(days=25))
            bal = period_of(statement(api, st["tax_account"], pay_day), p)
            assert bal is not None
            if Decimal(bal["balance"]) > 0:
                pays.pay(st, p, bal["balance"], "check", ref, received_on=pay_day)
        say("filing: late payments recorded (the bounced month paid again with its penalty and interest)")

        # The agency's non-filer job: St. John's missing month gets an estimated assessment.
        job = api.post(
            f"{ASSESSMENT}/v1/jobs/non-filers",
            None,
            f"demo-nonfilers-{today}",
            params={"as_of": today.isoformat()},
        )

        # Today, the clients themselves: the PMS files and pays the last month that is over
        # (M5), the intermediary sends its schedule for it as CSV.
        pms = token(client, creds["operator"]["client_id"], creds["operator"]["client_secret"])
        ota_h = token(client, creds["facilitator"]["client_id"], creds["facilitator"]["client_secret"])
        live = file_return(api, sj, current, 4, f"demo-pms-decl-{current}", received_on=None, headers=pms)
        pays.pay(
            sj,
            current,
            live["computed"]["total_due"],
            "electronic_transfer",
            f"SJ-{current}-PMS",
            received_on=None,
            headers=pms,
        )
        lines = lines_for(vq, current, 4)
        declared = declared_for(vq, current, lines)
        row = {
            "tax_account": vq["tax_account"],
            **lines,
            "declared_taxable_base": declared["taxable_base"],
            "declared_tax": declared["tax"],
            "declared_total": declared["total"],
        }
        csv_text = ",".join(row) + "\n" + ",".join(str(v) for v in row.values()) + "\n"
        live_sched = api.post(
            f"{FILING}/v1/remittance-schedules",
            None,
            f"demo-ota-schedule-{current}",
            ota_h,
            content=csv_text,
            content_type="text/csv",
            params={"period": str(current)},
        )
        schedules[str(current)] = live_sched["id"]
        pays.pay(
            vq,
            current,
            declared["total"],
            "electronic_transfer",
            f"CARIBE-{current}",
            received_on=None,
            headers=ota_h,
        )
        vq_creds = creds["vieques-operator"]
        vq_op = token(client, vq_creds["client_id"], vq_creds["client_secret"])
        own = file_return(
            api,
            vq,
            current,
            4,
            f"demo-vq-decl-{current}",
            received_on=None,
            headers=vq_op,
            lines=direct_lines(4),
        )
        pays.pay(
            vq,
            current,
            own["computed"]["total_due"],
            "electronic_transfer",
            f"ISLANENA-{current}-EFT",
            received_on=None,
            headers=vq_op,
        )
        say(
            f"clients: the PMS filed and paid {current}; Caribe Stays sent its {current} schedule (CSV); "
            f"Isla Nena Rentals filed and paid its own {current} return"
        )

        # Distribution: every payment applied by assessment must have reached the ledger.
        accounts = [x["tax_account"] for x in (sj, vq, st, sjn)]

        def collected_everywhere() -> bool:
            """Each demo lodging's payments, as assessment applied them, are in distribution's
            ledger (only the demo's own accounts: other lodgings' payments do not matter)."""
            paid = {a: Decimal(statement(api, a, today)["totals"]["total_paid"]) for a in accounts}
            got = {a: collected_for(api, a) for a in accounts}
            return paid == got and sum(paid.values(), Decimal(0)) > 0

        wait_for("the collections to reach distribution", collected_everywhere)
        fy = months[0].first_day.year + (1 if months[0].month >= 7 else 0)
        api.post(
            f"{DISTRIBUTION}/v1/certifications",
            {
                "fiscal_year": fy,
                "amount": "1800000.00",
                "certified_on": date(fy - 1, 6, 15).isoformat(),
                "document_reference": f"BGF-CERT-FY{fy}-001",
            },
            f"demo-certification-{fy}",
        )
        runs: dict[str, list[dict[str, Any]]] = {"PR": [], "VI": []}
        for p in months:
            for j in ("PR", "VI"):
                runs[j].append(
                    api.post(
                        f"{DISTRIBUTION}/v1/runs", {"jurisdiction": j, "month": str(p)}, f"demo-run-{j}-{p}"
                    )
                )
        say("distribution: PR certification recorded; runs posted in order for both jurisdictions")

        state["months"] = [str(p) for p in months]
        state["schedules"] = schedules
        state["runs"] = {j: [{"month": r["month"], "id": r["id"]} for r in rs] for j, rs in runs.items()}
        (ROOT / ".run" / "demo.json").write_text(json.dumps(state, indent=2))
        write_curl(state, months, today)
        summary(api, lodgings, months, runs, job, today)
        show_mail(api, lodgings[SJ]["tax_account"])
        say(f"demo loaded: {api.created} new records, {api.replayed} replayed; details in .run/demo.json")
    return 0


def summary(
    api: Api,
    lodgings: dict[str, Any],
    months: list[Period],
    runs: dict[str, list[dict[str, Any]]],
    job: dict[str, Any],
    today: date,
) -> None:
    print("\nThe demo story (as of " + today.isoformat() + "):", flush=True)
    for name, who in (
        (SJ, "operator (M5 by its PMS client)"),
        (VQ, "intermediary Caribe Stays (schedules) and its operator (direct bookings)"),
        (ST, "operator, late"),
        (SJN, "operator, timeshare (impact fee)"),
    ):
        lod = lodgings[name]
        s = statement(api, lod["tax_account"], today)
        print(f"  {lod['tax_account']}  {name} ({lod['address']['municipality']}), filed by {who}")
        for p in s["periods"]:
            penalties = sum((Decimal(x["amount"]) for x in p["penalties"]), Decimal(0))
            extra = ""
            if penalties:
                extra += f"  penalties {fmt(penalties)}"
            if Decimal(p["interest"]):
                extra += f"  interest {p['interest']}"
            late = f" filed {p['declaration_filed_on']}" if p["declaration_filed_on"] else " NOT FILED"
            print(
                f"      {p['period']} {p['basis']:<11}{late:<20} assessed {p['total_assessed']:>11} "
                f"paid {p['total_paid']:>11} balance {p['balance']:>9}{extra}"
            )
        print(
            f"      totals: assessed {s['totals']['total_assessed']} paid {s['totals']['total_paid']} "
            f"balance {s['totals']['balance']}"
        )
    raised = (
        ", ".join(f"{r.get('tax_account')} {r.get('period')}" for r in job.get("raised", [])) or "none new"
    )
    print(f"  non-filer job: estimates raised: {raised}")
    for j in ("PR", "VI"):
        total = sum((Decimal(str(r["collected"])) for r in runs[j]), Decimal(0))
        per = ", ".join(f"{r['month']} {r['collected']}" for r in runs[j])
        funds = api.get(f"{DISTRIBUTION}/v1/funds", jurisdiction=j)
        print(
            f"  distribution {j}: runs {per} (total {fmt(total)}); collected {funds['collected']}, "
            f"distributed {funds['distributed']}, pending {funds['pending']}"
        )
    print(flush=True)


def show_mail(api: Api, tax_account: str) -> None:
    """notify e-mails a receipt on request (PR §28(C)) through the local SMTP sink: ask for
    one of the San Juan hotel's and show what was sent (notify's projection of the
    payment is asynchronous: polled). Without a running notify, says so and moves on."""
    try:
        payment = api.pages(f"{FILING}/v1/payments", lodging=tax_account, limit=200)[0]
        deadline = time.monotonic() + 60
        while True:
            r = api.client.post(f"{NOTIFY}/v1/payments/{payment['id']}/receipt-email", headers=api.admin)
            if r.status_code == 202 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if r.status_code != 202:
            say(f"notify: no receipt e-mail ({r.status_code}); is notify running?")
            return
        while time.monotonic() < deadline:
            mails = api.get(f"{NOTIFY}/v1/emails", limit=5)["items"]
            if mails and all(m["status"] != "pending" for m in mails):
                break
            time.sleep(0.5)
        print("E-mail sent by notify (newest first; the messages are in .run/mail/new):", flush=True)
        for m in mails:
            print(f"  {m['status']:<10} {m['to_address'] or '(no address)':<32} {m['subject']}", flush=True)
        print(flush=True)
    except (httpx.HTTPError, DemoError, IndexError) as exc:
        say(f"notify: the demo's e-mail was not shown ({exc})")


def write_curl(state: dict[str, Any], months: list[Period], today: date) -> None:
    sj = state["lodgings"][SJ]["tax_account"]
    pr_run = state["runs"]["PR"][1]["id"]
    schedule = state["schedules"][str(months[-1])]
    auth = '-H "Authorization: Bearer $TOKEN"'
    people = state.get("people", {})
    lines = [
        "",
        f"Web app: {WEB}/  sign in with password {DEMO_PASSWORD!r} as:",
        *(f"  {role:<15} {email}" for role, email in people.items()),
        "",
        "Try (agency-admin; credentials of the demo clients are in .run/demo.json):",
        f"  export TOKEN=$(curl -s -d grant_type=client_credentials -d client_id={ADMIN_ID} "
        f"-d client_secret={ADMIN_SECRET} {REGISTRY}/v1/oauth/token "
        "| python3 -c 'import sys,json;print(json.load(sys.stdin)[\"access_token\"])')",
        "  # the San Juan hotel's statement, with the statute's trace of every amount",
        f'  curl -s {auth} "{ASSESSMENT}/v1/accounts/{sj}/statement?as_of={today}&explain=true"',
        "  # the intermediary's remittance schedule for Vieques",
        f'  curl -s {auth} "{FILING}/v1/remittance-schedules/{schedule}"',
        "  # filing compliance for a VI month: on time, late, not filed",
        f'  curl -s {auth} "{FILING}/v1/compliance?jurisdiction=VI&period={months[2]}"',
        "  # the same for PR: Casita Esperanza is on time through its operator's own return",
        f'  curl -s {auth} "{FILING}/v1/compliance?jurisdiction=PR&period={months[-1]}"',
        f"  # the PR distribution run of {months[1]} as CSV",
        f'  curl -s {auth} "{DISTRIBUTION}/v1/runs/{pr_run}/report.csv"',
        "  # fund balances",
        f'  curl -s {auth} "{DISTRIBUTION}/v1/funds?jurisdiction=PR"',
        f'  curl -s {auth} "{DISTRIBUTION}/v1/funds?jurisdiction=VI"',
        "  # e-mail notify sent (the SMTP sink keeps the messages in .run/mail/new) and webhooks",
        f'  curl -s {auth} "{NOTIFY}/v1/emails"',
        f'  curl -s {auth} "{NOTIFY}/v1/webhooks/event-types"',
    ]
    (ROOT / ".run" / "demo-curl.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())

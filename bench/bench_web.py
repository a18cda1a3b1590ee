"""Web app: overview and statement page render time under load, against the API calls.

Run: ``uv run python bench/bench_web.py [requests_per_session]`` (default 25). Starts the
real platform (four services as processes, a Tansu broker, fresh databases) and the web
app as a process, creates one agency person and a lodging with one filed and paid
month, then runs 8 concurrent signed-in sessions:

1. **Overview** ``GET /agency``. Baseline, same run: the seven API calls the page makes
   (two ``/v1/dashboard/monthly``, ``/aging``, ``/delinquents``, two ``/v1/funds``, and
   ``/v1/indicators`` for its default window), at once as the page makes them, by the
   same 8 concurrent callers with the person's token.
2. **Statement** ``GET /agency/lodgings/{id}``. Baseline, same run: the six calls the page
   makes, in its order: ``GET /v1/lodgings/{id}``, then at once the statement with
   ``explain=true``, the account's cases, refunds, abatements and timeline.

Each is measured in 3 rounds, baseline and page interleaved; reports p50/p99 of each
round, the ratio page / API, and the median ratio over the rounds: what the backend-for-frontend adds
(session check, template rendering, formatting) on top of the calls it must make.
"""

from __future__ import annotations

import asyncio
import datetime
import re
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

sys.path[:0] = [
    str(Path(__file__).resolve().parents[1] / "tests"),
    str(Path(__file__).resolve().parents[1] / "services/web/tests"),
]

from platform_harness import Api, Platform, eventually  # noqa: E402
from web_browser import WebProcess  # noqa: E402

from taxcore.periods import Period  # noqa: E402
from web.pages.agency import indicator_window  # noqa: E402

SESSIONS = 8
REPEATS = 3
PASSWORD = "a long bench passphrase"
CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def load(n: int, call: Callable[[int], Awaitable[None]]) -> list[float]:
    """``n`` calls per session, ``SESSIONS`` sessions at once; each call's duration."""
    samples: list[float] = []

    async def session(i: int) -> None:
        for _ in range(n):
            t = time.perf_counter()
            await call(i)
            samples.append(time.perf_counter() - t)

    await asyncio.gather(*(session(i) for i in range(SESSIONS)))
    return samples


async def main(n: int) -> None:
    platform = Platform(prefix="roomtax_bench_web")
    try:
        await platform.start()
    except TimeoutError:  # a busy machine: the processes run on, give them longer
        await asyncio.gather(*(s.wait_ready(timeout=300) for s in platform.services.values()))
    web = WebProcess(urls={s: platform.url(s) for s in platform.services}, logs=platform.logs)
    web.start()
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    try:
        month = Period.of(datetime.date.today()).prev()
        op = await admin.post("registry", "/v1/operators", {"name": "Bench Ops"}, expect=201)
        lodging = await admin.register_lodging(
            op["id"],
            name="Bench Hotel",
            line1="1 Calle",
            municipality="San Juan",
            room_count=50,
            registered_on=month.prev().first_day.isoformat(),
        )
        email = f"bench-{uuid.uuid4().hex[:6]}@agency.example"
        await admin.post(
            "registry",
            "/v1/people/users",
            {"email": email, "name": "Bench", "role": "agency-admin", "password": PASSWORD},
            expect=201,
        )

        async def filing_knows() -> bool:
            r = await admin.call("GET", "filing", f"/v1/lodgings/{lodging['id']}/periods/{month}")
            return r.status_code == 200

        await eventually(filing_knows)
        await admin.post(
            "filing",
            "/v1/declarations",
            {
                "lodging": lodging["tax_account"],
                "period": str(month),
                "room_revenue": "50000.00",
                "declared": {},
                "filer": {"kind": "operator", "id": op["id"]},
            },
            expect=201,
        )
        await web.wait_ready()
        browsers = [httpx.AsyncClient(base_url=web.url, timeout=60) for _ in range(SESSIONS)]
        tokens: list[str] = []
        for b in browsers:
            token = CSRF.search((await b.get("/sign-in")).text)
            assert token
            r = await b.post(
                "/sign-in", data={"csrf_token": token.group(1), "email": email, "password": PASSWORD}
            )
            assert r.status_code == 303, r.text
        async with httpx.AsyncClient(timeout=30) as c:
            for _ in range(SESSIONS):
                r = await c.post(
                    f"{platform.url('registry')}/v1/people/token", json={"email": email, "password": PASSWORD}
                )
                tokens.append(r.json()["access_token"])
        api = httpx.AsyncClient(timeout=60)
        this = Period.of(datetime.date.today())
        start = this.add_months(-11)

        def h(i: int) -> dict[str, str]:
            return {"Authorization": f"Bearer {tokens[i]}"}

        async def overview_api(i: int) -> None:
            """What the overview asks (``web.pages.agency.overview``), at once as the page does:
            the two jurisdictions' monthly totals, aging, delinquents, the two fund balances, and
            the indicators of the default window."""
            a, d = platform.url("assessment"), platform.url("distribution")
            jurisdiction, first, last = indicator_window("", "", "", today=datetime.date.today())
            calls = [
                *(
                    (f"{a}/v1/dashboard/monthly", {"from": str(start), "to": str(this), "jurisdiction": j})
                    for j in ("PR", "VI")
                ),
                (f"{a}/v1/dashboard/aging", {}),
                (f"{a}/v1/dashboard/delinquents", {"limit": 10}),
                *((f"{d}/v1/funds", {"jurisdiction": j}) for j in ("PR", "VI")),
                (f"{a}/v1/indicators", {"jurisdiction": jurisdiction, "from": first, "to": last}),
            ]
            for r in await asyncio.gather(*(api.get(u, params=q, headers=h(i)) for u, q in calls)):
                r.raise_for_status()

        async def overview_page(i: int) -> None:
            (await browsers[i].get("/agency")).raise_for_status()

        async def statement_api(i: int) -> None:
            """What the lodging page asks (``web.pages.agency.lodging``): the lodging, then its
            statement with the trace, cases, refunds, abatements and timeline at once."""
            (
                await api.get(f"{platform.url('registry')}/v1/lodgings/{lodging['id']}", headers=h(i))
            ).raise_for_status()
            a, account = platform.url("assessment"), lodging["tax_account"]
            calls = [
                (f"{a}/v1/accounts/{account}/statement", {"explain": "true"}),
                (f"{a}/v1/cases", {"tax_account": account}),
                (f"{a}/v1/accounts/{account}/refunds", {}),
                (f"{a}/v1/accounts/{account}/abatements", {}),
                (f"{a}/v1/accounts/{account}/timeline", {}),
            ]
            for r in await asyncio.gather(*(api.get(u, params=q, headers=h(i)) for u, q in calls)):
                r.raise_for_status()

        async def statement_page(i: int) -> None:
            (await browsers[i].get(f"/agency/lodgings/{lodging['id']}")).raise_for_status()

        results: dict[str, list[tuple[list[float], list[float]]]] = {}
        for name, page, base in (
            ("overview", overview_page, overview_api),
            ("statement", statement_page, statement_api),
        ):
            await load(1, page)
            await load(1, base)  # warm-up
            # REPEATS rounds, the baseline and the page interleaved, so a burst of load from
            # the rest of the machine falls on both alike
            results[name] = []
            for _ in range(REPEATS):
                api_samples = await load(n, base)
                page_samples = await load(n, page)
                results[name].append((api_samples, page_samples))
        print(f"{SESSIONS} concurrent sessions, {n} requests each, {REPEATS} interleaved rounds")
        for name, rounds in results.items():
            for k, (a, p) in enumerate(rounds, 1):
                print(
                    f"{name:<10} round {k} page p50 {pct(p, 0.5):7.1f} ms p99 {pct(p, 0.99):7.1f} ms | "
                    f"API calls p50 {pct(a, 0.5):7.1f} ms p99 {pct(a, 0.99):7.1f} ms | "
                    f"ratio p50 {statistics.median(p) / statistics.median(a):.2f} "
                    f"p99 {pct(p, 0.99) / pct(a, 0.99):.2f}"
                )
            p50 = statistics.median(statistics.median(p) / statistics.median(a) for a, p in rounds)
            p99 = statistics.median(pct(p, 0.99) / pct(a, 0.99) for a, p in rounds)
            print(f"{name:<10} median of rounds: ratio p50 {p50:.2f} p99 {p99:.2f}")
        for b in browsers:
            await b.aclose()
        await api.aclose()
    finally:
        await admin.close()
        web.stop()
        platform.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 25))

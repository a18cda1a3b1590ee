"""The web app as a real process next to the real platform, and a real Chromium.

Chromium is Debian's ``chromium`` package (``./scripts/test`` installs it when missing),
driven by Playwright for Python through ``executable_path``: Playwright's own browser
download is never used. axe-core (vendored, pinned) is injected into each page.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
from platform_harness import TODAY, Api, Platform
from playwright.async_api import Browser, Page, expect

from servicekit.runtime import TODAY_VARIABLE
from servicekit.testing import free_port
from taxcore.periods import Period

# A page that shows what the services derived from events (a filing's status, an account's
# figures) waits for them: on two shared cores the flow can take longer than Playwright's 5 s.
expect.set_options(timeout=20_000)

CHROMIUM = os.environ.get("ROOMTAX_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "a long demo passphrase"
LAST_MONTH = Period.of(TODAY).prev()
TWO_MONTHS_AGO = LAST_MONTH.prev()
AXE = Path(__file__).resolve().parent / "vendor" / "axe-core-4.14.1" / "axe.min.js"
AXE_RUN = """async () => {
  const tags = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
  const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                 nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
}"""


@dataclass
class WebProcess:
    urls: dict[str, str]
    logs: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    #: added to the process's environment (e.g. the OTEL_* variables of a traced platform)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = dict(os.environ)
        env.update({f"WEB_{name.upper()}_URL": url for name, url in self.urls.items()})
        env.update(
            {
                "WEB_ENVIRONMENT": "test",
                "WEB_COOKIE_SECURE": "false",
                "WEB_SECRET_KEY": "browser-test-secret-key-0123456789abcdef",
                TODAY_VARIABLE: TODAY.isoformat(),  # the platform's day (platform_harness)
                **self.env,
            }
        )
        self.logs.mkdir(parents=True, exist_ok=True)
        log = open(self.logs / "web.log", "ab")  # noqa: SIM115 - lives with the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "web", "api", "--port", str(self.port)], env=env, stdout=log, stderr=log
        )

    async def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=3) as client:
            while time.monotonic() < deadline:
                try:
                    if (await client.get(self.url + "/readyz")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"web exited; see {self.logs / 'web.log'}")
                await asyncio.sleep(0.2)
        raise TimeoutError("web not ready")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Walker:
    """One person in one browser context: every page visited is checked by axe and shot."""

    page: Page
    base: str
    shots: Path
    name: str
    visited: list[str] = field(default_factory=list)

    async def check(self, label: str) -> None:
        await self.page.wait_for_load_state("networkidle")
        await self.page.add_script_tag(path=str(AXE))
        violations: list[dict[str, Any]] = await self.page.evaluate(AXE_RUN)
        serious = [v for v in violations if v["impact"] in ("serious", "critical")]
        self.shots.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(
            path=str(self.shots / f"{self.name}-{len(self.visited):02d}-{label}.png"), full_page=True
        )
        self.visited.append(label)
        assert serious == [], (label, self.page.url, serious)

    async def goto(self, path: str, label: str) -> None:
        await self.page.goto(self.base + path)
        await self.check(label)


@dataclass
class WebStack:
    """What a browser module's fixture starts; each module adds the people and objects it seeds."""

    platform: Platform
    web: WebProcess
    admin: Api


async def walker(browser: Browser, stack: WebStack, name: str) -> Walker:
    """A new person in the stack's web app."""
    return await new_walker(browser, stack.web.url, stack.platform.logs, name)


async def guesthouse(admin: Api, operator_id: str, name: str, line1: str) -> dict[str, Any]:
    """A six-room guesthouse in Culebra, registered two months ago."""
    created: dict[str, Any] = await admin.register_lodging(
        operator_id,
        lodging_class="guesthouse",
        name=name,
        line1=line1,
        municipality="Culebra",
        room_count=6,
        registered_on=TWO_MONTHS_AGO.first_day.isoformat(),
    )
    return created


async def person(admin: Api, role: str, **binding: str) -> dict[str, Any]:
    """A person of ``role`` created by the agency, signing in with ``PASSWORD``."""
    email = f"{role}-{uuid.uuid4().hex[:6]}@example.pr"
    body = {"email": email, "name": f"{role.title()} Person", "role": role, "password": PASSWORD, **binding}
    created: dict[str, Any] = await admin.post("registry", "/v1/people/users", body, expect=201)
    return created


async def new_walker(browser: Browser, base: str, logs: Path, name: str) -> Walker:
    # axe is injected as a script tag: the page's CSP (script-src 'self') would refuse it,
    # so these contexts bypass CSP; TestContentSecurityPolicy checks the pages under it.
    context = await browser.new_context(bypass_csp=True, accept_downloads=True, locale="en-US")
    page = await context.new_page()
    return Walker(page, base, logs / "screenshots", name)


async def sign_in(w: Walker, email: str, spanish: bool = False) -> None:
    await w.goto("/sign-in", "sign-in")
    if spanish:
        await w.page.select_option("#language-switch", "es")
        await w.page.get_by_role("button", name="Change").click()
        await expect(w.page.locator("h1")).to_have_text("Iniciar sesión")
        await w.check("sign-in-es")
    await w.page.fill("#f-email", email)
    await w.page.fill("#f-password", PASSWORD)
    await w.page.locator("main button[type=submit]").click()


async def sign_out(page: Page, label: str) -> None:
    await page.locator("form[action='/sign-out'] button").click()
    await expect(page).to_have_url(re.compile(r"/sign-in$"))


@asynccontextmanager
async def platform_with_web(prefix: str) -> AsyncIterator[tuple[Platform, WebProcess, Api]]:
    """Every service a real process, the web app beside them, and the agency's admin client.

    The caller seeds what its module needs, then waits for ``web.wait_ready()``.
    """
    platform = Platform(prefix=prefix)
    web: WebProcess | None = None
    admin: Api | None = None
    try:
        try:
            await platform.start()
        except TimeoutError:  # a busy machine: the processes run on, give them longer
            await asyncio.gather(*(s.wait_ready(timeout=300) for s in platform.services.values()))
        web = WebProcess(urls={n: platform.url(n) for n in platform.services}, logs=platform.logs)
        web.start()
        admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
        yield platform, web, admin
    finally:
        if admin is not None:
            await admin.close()
        if web is not None:
            web.stop()
        platform.stop()


def on_the_islands_clock(moment: str, lang: str) -> str:
    """A UTC moment from an API as the page shows it, worked out here: Atlantic Standard Time
    (UTC-4 all year), the day with its month abbreviated, the 12-hour time, the zone named."""
    local = datetime.fromisoformat(moment).astimezone(timezone(timedelta(hours=-4)))
    hour = local.hour % 12 or 12
    month = local.month - 1
    if lang == "en":
        months = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
        noon = "AM" if local.hour < 12 else "PM"
        return f"{months[month]} {local.day}, {local.year}, {hour}:{local:%M:%S}\u202f{noon} AST"
    months = "ene feb mar abr may jun jul ago sep oct nov dic".split()
    noon = "a.\u202fm." if local.hour < 12 else "p.\u202fm."
    return f"{local.day} {months[month]} {local.year}, {hour}:{local:%M:%S}\u202f{noon} AST"


def utc_iso(moment: str) -> str:
    """An API's moment as a page's ``<time datetime>`` carries it: UTC, ISO 8601, ``Z``."""
    return datetime.fromisoformat(moment).astimezone(UTC).isoformat().replace("+00:00", "Z")

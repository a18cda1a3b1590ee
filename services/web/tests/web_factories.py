"""Plain async factories: people and parties through the registry's API, as the agency would."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
from fastapi import FastAPI

from servicekit.testing import auth
from web.settings import WebSettings

ADMIN = auth("agency-admin")
PASSWORD = "correct horse battery"
CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')


async def make_person(registry_app: FastAPI, role: str = "agency-auditor", **body: Any) -> dict[str, Any]:
    client: httpx.AsyncClient = registry_app.state.test_client
    if role == "operator" and "operator_id" not in body:
        r = await client.post("/v1/operators", json={"name": f"Op {uuid.uuid4().hex[:6]}"}, headers=ADMIN)
        body["operator_id"] = r.json()["id"]
    payload = {
        "email": f"w-{uuid.uuid4().hex[:8]}@example.pr",
        "name": "Marisol Ortiz",
        "role": role,
        "password": PASSWORD,
        **body,
    }
    r = await client.post("/v1/people/users", json=payload, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def csrf(web: httpx.AsyncClient, path: str = "/sign-in") -> str:
    page = await web.get(path)
    found = CSRF.search(page.text)
    assert found, page.text[:500]
    return found.group(1)


async def sign_in(
    web: httpx.AsyncClient, email: str, password: str = PASSWORD, next: str = ""
) -> httpx.Response:
    token = await csrf(web)
    return await web.post(
        "/sign-in", data={"csrf_token": token, "email": email, "password": password, "next": next}
    )


def web_settings(**overrides: object) -> WebSettings:
    base: dict[str, object] = {
        "environment": "test",
        "registry_url": "http://registry",
        "cookie_secure": False,
        "session_check_seconds": 0,
        "secret_key": "test-secret-key-for-the-web-app-0123456789",
    }
    return WebSettings(**{**base, **overrides})  # type: ignore[arg-type]

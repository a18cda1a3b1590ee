"""The four services' public HTTP APIs, called with the signed-in person's token.

The web app has no other way to data: it sees what the person's role and party let
the services show, and every write the services record names the person.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from web.settings import WebSettings


class ApiError(Exception):
    """A problem+json answer (or a transport failure, status 502)."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        super().__init__(f"{status}: {problem.get('detail')}")
        self.status = status
        self.problem = problem

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail") or self.problem.get("title") or "")

    def field_errors(self) -> dict[str, str]:
        """``{"amount": "…"}`` from the problem's JSON pointers (``#/body/amount``)."""
        out: dict[str, str] = {}
        for err in self.problem.get("errors", []) or []:
            path = str(err.get("pointer", "")).removeprefix("#/").split("/")
            if path and path[0] in ("body", "query"):
                path = path[1:]
            key = ".".join(p for p in path if p) or "_form"
            out.setdefault(key, str(err.get("detail", "")))
        return out


@dataclass
class Backend:
    settings: WebSettings
    client: httpx.AsyncClient

    def base(self, service: str) -> str:
        url: str = getattr(self.settings, f"{service}_url")
        return url.rstrip("/")

    async def request(
        self,
        method: str,
        service: str,
        path: str,
        *,
        token: str | None,
        lang: str = "en",
        forwarded_for: str | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        headers: dict[str, str] = {"Accept-Language": lang, **kwargs.pop("headers", {})}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if forwarded_for:
            headers["X-Forwarded-For"] = forwarded_for
        url = self.base(service) + path
        try:
            try:
                r = await self.client.request(method, url, headers=headers, **kwargs)
            except httpx.RemoteProtocolError:
                if method not in ("GET", "HEAD"):
                    raise
                # a pooled connection the service closed as it was reused: a read is safe to repeat
                r = await self.client.request(method, url, headers=headers, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiError(502, {"title": "Bad gateway", "detail": f"{service} unreachable: {exc}"}) from exc
        if r.status_code >= 400:
            try:
                problem = r.json()
            except ValueError:
                problem = {"detail": r.text[:300]}
            raise ApiError(r.status_code, problem if isinstance(problem, dict) else {"detail": str(problem)})
        return r

    async def get(self, service: str, path: str, *, token: str | None, lang: str = "en", **kw: Any) -> Any:
        return (await self.request("GET", service, path, token=token, lang=lang, **kw)).json()

    async def post(
        self, service: str, path: str, body: Any, *, token: str | None, lang: str = "en", **kw: Any
    ) -> Any:
        r = await self.request("POST", service, path, token=token, lang=lang, json=body, **kw)
        return r.json() if r.content else None

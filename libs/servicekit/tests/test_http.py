"""Chassis HTTP behaviour: problem+json, idempotency, pagination, auth, health."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from servicekit_fixtures import UPLOAD_LIMIT, build_widget_app

from servicekit.settings import ServiceSettings
from servicekit.testing import BrokerProcess, auth, free_port, new_key_pair, running_app, token

H = auth("agency-admin")


def unique() -> str:
    return uuid.uuid4().hex[:10]


class TestBusy:
    async def test_a_request_that_finds_no_free_connection_gets_503_and_changes_nothing(
        self, chassis_db: str, broker: BrokerProcess
    ) -> None:
        app = build_widget_app(chassis_db, broker.bootstrap, db_pool_size=1, db_pool_timeout=0.2)
        name = unique()
        async with running_app(app) as client:
            async with app.state.engine.connect():  # the pool's only connection, held
                r = await client.post(
                    "/v1/widgets",
                    json={"name": name, "amount": "1.00"},
                    headers={**H, "Accept-Language": "es"},
                )
            assert (r.status_code, r.headers["retry-after"], r.headers["content-type"]) == (
                503,
                "1",
                "application/problem+json",
            )
            assert r.json() == {
                "type": "https://roomtax.dev/problems/busy",
                "title": "Servicio ocupado",
                "status": 503,
                "detail": "el servicio está al límite de su capacidad; no se hizo nada, envíe la "
                "solicitud de nuevo en unos momentos",
                "instance": "/v1/widgets",
            }
            listed = (await client.get("/v1/widgets", headers=H)).json()["items"]
            assert [w for w in listed if w["name"] == name] == []
            again = await client.post("/v1/widgets", json={"name": name, "amount": "1.00"}, headers=H)
            assert again.status_code == 201


class TestProblemJson:
    async def test_validation_error_points_at_field(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/widgets", json={"name": "x", "amount": "1.5"}, headers=H)
        assert r.status_code == 422
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["type"] == "https://roomtax.dev/problems/validation-failed"
        assert body["status"] == 422
        assert body["errors"] == [
            {"pointer": "#/body/amount", "detail": "String should match pattern '^\\d+\\.\\d{2}$'"}
        ]

    async def test_malformed_json_is_422_not_500(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/widgets", content=b"{not json", headers={**H, "content-type": "application/json"}
        )
        assert r.status_code == 422
        assert r.headers["content-type"] == "application/problem+json"

    async def test_unknown_route_is_problem(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/v1/nothing-here", headers=H)
        assert r.status_code == 404
        assert r.json()["status"] == 404

    async def test_unexpected_error_is_500_problem_without_stack(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/widgets/1/explode", headers=H)
        assert r.status_code == 500
        assert r.json()["detail"] == "An unexpected error occurred; it has been logged."
        assert "boom" not in r.text

    async def test_domain_error_rolls_back(self, client: httpx.AsyncClient) -> None:
        name = unique()
        assert (
            await client.post("/v1/widgets", json={"name": name, "amount": "1.00"}, headers=H)
        ).status_code == 201
        r = await client.post("/v1/widgets", json={"name": name, "amount": "1.00"}, headers=H)
        assert r.status_code == 409
        assert r.json()["title"] == "Conflict"

    async def test_constraint_violation_the_service_missed_is_409(self, client: httpx.AsyncClient) -> None:
        name = unique()
        await client.post("/v1/widgets", json={"name": name, "amount": "1.00"}, headers=H)
        r = await client.post(
            "/v1/widgets", params={"check": "false"}, json={"name": name, "amount": "1.00"}, headers=H
        )
        assert r.status_code == 409
        assert r.headers["content-type"] == "application/problem+json"

    async def test_value_out_of_database_range_is_422(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/widgets", json={"name": unique(), "amount": "1" * 20 + ".00"}, headers=H)
        assert r.status_code == 422
        assert r.json()["detail"] == "a value is out of the range the platform accepts"


class TestIdempotency:
    async def test_same_key_same_body_replays_and_writes_once(self, client: httpx.AsyncClient) -> None:
        name, key = unique(), unique()
        headers = {**H, "Idempotency-Key": key}
        first = await client.post("/v1/widgets", json={"name": name, "amount": "2.50"}, headers=headers)
        second = await client.post("/v1/widgets", json={"name": name, "amount": "2.50"}, headers=headers)
        assert first.status_code == second.status_code == 201
        assert first.json() == second.json()
        assert second.headers["idempotent-replayed"] == "true"
        listing = (await client.get("/v1/widgets", params={"limit": 500}, headers=H)).json()
        assert [w["name"] for w in listing["items"]].count(name) == 1

    async def test_same_key_other_body_is_rejected(self, client: httpx.AsyncClient) -> None:
        key = unique()
        headers = {**H, "Idempotency-Key": key}
        ok = await client.post("/v1/widgets", json={"name": unique(), "amount": "1.00"}, headers=headers)
        assert ok.status_code == 201
        r = await client.post("/v1/widgets", json={"name": unique(), "amount": "1.00"}, headers=headers)
        assert r.status_code == 422
        assert r.json()["type"] == "https://roomtax.dev/problems/idempotency-key-reused"

    async def test_failed_request_does_not_burn_the_key(self, client: httpx.AsyncClient) -> None:
        key, name = unique(), unique()
        headers = {**H, "Idempotency-Key": key}
        bad = await client.post("/v1/widgets", json={"name": name, "amount": "oops"}, headers=headers)
        assert bad.status_code == 422
        good = await client.post("/v1/widgets", json={"name": name, "amount": "oops"}, headers=headers)
        assert good.status_code == 422  # the same bad body fails again; nothing was stored
        fixed = await client.post("/v1/widgets", json={"name": name, "amount": "3.00"}, headers=headers)
        assert fixed.status_code == 201

    async def test_keys_are_scoped_per_client(self, client: httpx.AsyncClient) -> None:
        key = unique()
        a = {**auth("agency-admin", client_id="client-a"), "Idempotency-Key": key}
        b = {**auth("agency-admin", client_id="client-b"), "Idempotency-Key": key}
        ra = await client.post("/v1/widgets", json={"name": unique(), "amount": "1.00"}, headers=a)
        rb = await client.post("/v1/widgets", json={"name": unique(), "amount": "1.00"}, headers=b)
        assert ra.status_code == rb.status_code == 201
        assert ra.json()["id"] != rb.json()["id"]

    async def test_unauthenticated_callers_keys_are_never_replayed(self, client: httpx.AsyncClient) -> None:
        """Without a token there is no caller to scope a key to: replaying would hand the first
        caller's response (say, an access token) to anyone who sends the same key."""
        headers = {"Idempotency-Key": unique()}
        first = await client.post("/v1/widgets/public/nonce", headers=headers)
        second = await client.post("/v1/widgets/public/nonce", headers=headers)
        assert first.status_code == second.status_code == 201
        assert first.json() != second.json()
        assert "idempotent-replayed" not in second.headers


class TestPagination:
    async def test_cursor_walks_all_rows_once(self, client: httpx.AsyncClient) -> None:
        for _ in range(5):
            await client.post("/v1/widgets", json={"name": unique(), "amount": "1.00"}, headers=H)
        everything = (await client.get("/v1/widgets", params={"limit": 500}, headers=H)).json()["items"]
        seen, cursor = [], None
        while True:
            params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            page = (await client.get("/v1/widgets", params=params, headers=H)).json()
            seen += [w["id"] for w in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [w["id"] for w in everything]


class TestAuth:
    async def test_missing_and_bad_tokens_are_401(self, client: httpx.AsyncClient) -> None:
        assert (await client.get("/v1/widgets")).status_code == 401
        r = await client.get("/v1/widgets", headers={"Authorization": "Bearer not-a-jwt"})
        assert r.status_code == 401
        assert r.headers["www-authenticate"] == "Bearer"

    async def test_expired_token_is_401(self, client: httpx.AsyncClient) -> None:
        from servicekit import devkeys
        from servicekit.auth import Principal, TokenIssuer

        issuer = TokenIssuer(
            devkeys.DEV_PRIVATE_KEY, issuer="roomtax-registry", audience="roomtax", ttl_seconds=60
        )
        expired, _ = issuer.issue(Principal(client_id="c", role="dashboard"), now=1_000_000)
        r = await client.get("/v1/widgets", headers={"Authorization": f"Bearer {expired}"})
        assert r.status_code == 401
        assert "expired" in r.json()["detail"]

    async def test_token_signed_by_another_key_is_401(self, client: httpx.AsyncClient) -> None:
        from servicekit.auth import Principal, TokenIssuer

        other, _ = new_key_pair()
        forged, _ = TokenIssuer(other, issuer="roomtax-registry", audience="roomtax", ttl_seconds=60).issue(
            Principal(client_id="x", role="agency-admin")
        )
        r = await client.get("/v1/widgets", headers={"Authorization": f"Bearer {forged}"})
        assert r.status_code == 401
        assert token("dashboard").count(".") == 2

    def test_production_refuses_development_keys(self) -> None:
        with pytest.raises(ValueError, match="development signing keys are refused"):
            ServiceSettings(environment="production")


class TestOperations:
    async def test_health_ready_metrics(self, client: httpx.AsyncClient) -> None:
        assert (await client.get("/healthz")).json() == {"status": "ok", "service": "widgets"}
        ready = await client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready", "checks": {"database": "ok"}}
        metrics = await client.get("/metrics")
        assert "roomtax_http_requests_total" in metrics.text

    async def test_an_api_stays_ready_without_a_broker_and_goes_unready_without_its_database(
        self, chassis_db: str
    ) -> None:
        """Its writes touch PostgreSQL only (the outbox): no broker is no reason to be unready."""
        nobody = f"127.0.0.1:{free_port()}"
        async with running_app(build_widget_app(chassis_db, nobody)) as client:
            ready = await client.get("/readyz")
            assert ready.status_code == 200
            assert ready.json() == {"status": "ready", "checks": {"database": "ok"}}
            made = await client.post("/v1/widgets", json={"name": unique(), "amount": "1.00"}, headers=H)
            assert made.status_code == 201
        gone = chassis_db.rsplit("/", 1)[0] + f"/roomtax_no_such_db_{unique()}"
        async with running_app(build_widget_app(gone, nobody)) as client:
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"] == {"database": "unavailable: DBAPIError"}

    async def test_request_id_is_echoed(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/healthz", headers={"X-Request-ID": "abc123"})
        assert r.headers["x-request-id"] == "abc123"

    async def test_openapi_declares_problem_schema(self, client: httpx.AsyncClient) -> None:
        spec = (await client.get("/openapi.json")).json()
        assert "Problem" in spec["components"]["schemas"]
        post = spec["paths"]["/v1/widgets"]["post"]
        assert "application/problem+json" in post["responses"]["422"]["content"]


async def chunks(total: int, size: int = 65_536) -> AsyncIterator[bytes]:
    """A body sent without Content-Length (chunked), ``total`` bytes long."""
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        sent += n
        yield b" " * n


class TestBodyLimits:
    """Issue 10 item 1: the chassis caps request bodies while reading them (413 problem+json)."""

    DEFAULT = 1_048_576  # ServiceSettings.max_body_bytes

    def _assert_413(self, r: httpx.Response, limit: int) -> None:
        assert r.status_code == 413
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["type"] == "https://roomtax.dev/problems/payload-too-large"
        assert r.json()["errors"] == [{"pointer": "#/body", "detail": f"at most {limit} bytes"}]

    async def test_declared_length_over_the_default_is_413(self, client: httpx.AsyncClient) -> None:
        body = b'{"name": "' + b"x" * self.DEFAULT + b'", "amount": "1.00"}'
        r = await client.post("/v1/widgets", content=body, headers={**H, "content-type": "application/json"})
        self._assert_413(r, self.DEFAULT)

    async def test_chunked_body_without_length_is_cut_at_the_limit(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/widgets",
            content=chunks(self.DEFAULT + 1),
            headers={**H, "content-type": "application/json"},
        )
        assert "content-length" not in r.request.headers
        self._assert_413(r, self.DEFAULT)

    async def test_body_at_the_limit_is_read(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/widgets/bulk", content=chunks(self.DEFAULT), headers=H)
        assert (r.status_code, r.json()) == (201, {"bytes": self.DEFAULT})

    async def test_upload_route_takes_more_but_not_unbounded(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/v1/widgets/bulk", content=b" " * (UPLOAD_LIMIT - 10), headers=H)
        assert (r.status_code, r.json()) == (201, {"bytes": UPLOAD_LIMIT - 10})
        self._assert_413(
            await client.post("/v1/widgets/bulk", content=chunks(UPLOAD_LIMIT + 1), headers=H), UPLOAD_LIMIT
        )
        self._assert_413(
            await client.post("/v1/widgets/bulk", content=b" " * (UPLOAD_LIMIT + 1), headers=H), UPLOAD_LIMIT
        )


class TestKeyRotation:
    def test_both_keys_verify_during_rotation_and_a_stranger_does_not(self) -> None:
        from servicekit.auth import Principal, TokenIssuer, TokenVerifier
        from servicekit.errors import Unauthorized

        (old_priv, old_pub), (new_priv, new_pub) = new_key_pair(), new_key_pair()
        odd_priv, _ = new_key_pair()
        verifier = TokenVerifier(old_pub + "\n" + new_pub, issuer="i", audience="a")
        who = Principal(client_id="c", role="dashboard")
        for private in (old_priv, new_priv):
            tok, _ = TokenIssuer(private, issuer="i", audience="a", ttl_seconds=60).issue(who)
            assert verifier.verify(tok) == who
        stranger, _ = TokenIssuer(odd_priv, issuer="i", audience="a", ttl_seconds=60).issue(who)
        with pytest.raises(Unauthorized, match="does not trust"):
            verifier.verify(stranger)
        with pytest.raises(ValueError, match="no PEM public key"):
            TokenVerifier("not a key", issuer="i", audience="a")

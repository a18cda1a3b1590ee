"""The statements one ``POST /v1/declarations`` costs (issue 12: the front door's round trips)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from fastapi import FastAPI
from filing_factories import DB, as_operator, declaration, file, make_lodging
from sqlalchemy import event


@contextmanager
def statements(app: FastAPI) -> Iterator[list[str]]:
    """The SQL the app's engine sends meanwhile (savepoints of the test's outer transaction and
    the revocation denylist's reload, a background task of the app, left out)."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        if sql.lstrip().upper().startswith(("SAVEPOINT", "RELEASE SAVEPOINT")):
            return
        if "FROM revoked_principals" in sql:
            return
        seen.append(" ".join(sql.split()))

    engine = app.state.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def kinds(sql: list[str]) -> list[str]:
    """Each statement as its verb and first table (``SELECT lodgings``, ``INSERT declarations``)."""
    out = []
    for s in sql:
        words = s.replace('"', "").split()
        upper = [w.upper() for w in words]
        if upper[0] == "WITH":  # CTEs: the statement's own verb is the last one
            start = max(i for i, w in enumerate(upper) if w in ("INSERT", "UPDATE", "DELETE"))
            words, upper = words[start:], upper[start:]
        verb = upper[0]
        if verb == "SELECT" and "pg_notify" in s:
            out.append("SELECT pg_notify")
            continue
        marker = "INTO" if verb == "INSERT" else "FROM"
        table = words[upper.index(marker) + 1]
        out.append(f"{verb} {table}")
    return out


class TestDeclarationRoundTrips:
    async def test_a_new_declaration_is_three_statements_and_no_re_read(
        self, client: httpx.AsyncClient, db: DB, service_app: FastAPI
    ) -> None:
        hotel = await make_lodging(db)
        with statements(service_app) as sql:
            out = await file(client, declaration(hotel), as_operator(hotel.operator_id))
        assert kinds(sql) == [
            "SELECT lodgings",
            "SELECT certificates",  # UNION ALL the filing's latest version
            "INSERT declarations",  # its event into the outbox and NOTIFY in the same statement
        ]
        assert "FROM declarations WHERE filing_id" in sql[1]
        insert = sql[2]
        assert "pg_notify" in insert
        assert "INSERT INTO outbox" in insert
        # the row comes back from the INSERT itself (RETURNING), server defaults included
        assert insert.endswith("RETURNING seq, created_at")
        assert out["version"] == 1
        assert out["created_at"]

    async def test_the_latest_version_is_looked_up_without_its_json(
        self, client: httpx.AsyncClient, db: DB, service_app: FastAPI
    ) -> None:
        hotel = await make_lodging(db)
        first = await file(client, declaration(hotel), as_operator(hotel.operator_id))
        with statements(service_app) as sql:
            second = await file(client, declaration(hotel), as_operator(hotel.operator_id))
        assert (second["version"], second["supersedes"]) == (2, first["id"])
        latest = sql[1].split("UNION ALL")[1]
        assert latest.startswith(" (SELECT NULL, id, version FROM declarations")
        assert "trace" not in latest

    async def test_the_response_is_the_row_as_stored(
        self, client: httpx.AsyncClient, db: DB, service_app: FastAPI
    ) -> None:
        """Built from what was inserted plus RETURNING, it equals a later read of the row."""
        hotel = await make_lodging(db)
        headers = as_operator(hotel.operator_id)
        out = await file(client, declaration(hotel), headers)
        read = await client.get(f"/v1/declarations/{out['id']}", headers=headers)
        assert read.status_code == 200
        assert read.json() == out

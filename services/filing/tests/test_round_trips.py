"""The statements one ``POST /v1/declarations`` costs (issue 12: the front door's round trips)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from filing_factories import DB, as_operator, declaration, file, make_lodging
from sqlalchemy import event

from filing.app import build_app
from filing.settings import FilingSettings
from servicekit.testing import BrokerProcess, fresh_database, serving_service


@contextmanager
def statements(app: FastAPI) -> Iterator[list[str]]:
    """The SQL the app sends meanwhile, through SQLAlchemy or on the asyncpg connection itself
    (savepoints of the test's outer transaction and the revocation denylist's reload, a
    background task of the app, left out)."""
    seen: list[str] = []

    def keep(sql: str) -> None:
        if sql.lstrip().upper().startswith(("SAVEPOINT", "RELEASE SAVEPOINT")):
            return
        if "FROM revoked_principals" in sql:
            return
        seen.append(" ".join(sql.split()))

    def record(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        keep(sql)

    def logged(query: asyncpg.connection.LoggedQuery) -> None:
        keep(query.query)

    engine = app.state.engine.sync_engine
    # the test's one connection (servicekit.testing.rolled_back): its asyncpg driver logs
    # what is sent on it directly (SQLAlchemy's own prepared statements are not logged there)
    driver = app.state.sessionmaker.kw["bind"].sync_connection.connection.driver_connection
    event.listen(engine, "before_cursor_execute", record)
    driver.add_query_logger(logged)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)
        driver.remove_query_logger(logged)


def outer_words(sql: str) -> list[str]:
    """The statement's words outside parentheses (CTEs and subqueries left out)."""
    depth, words, word = 0, [], ""
    for ch in sql.replace('"', ""):
        if ch in "() ,":
            if word and depth == 0:
                words.append(word)
            word = ""
            depth += {"(": 1, ")": -1}.get(ch, 0)
        else:
            word += ch
    if word and depth == 0:
        words.append(word)
    return words


def kinds(sql: list[str]) -> list[str]:
    """Each statement as its verb and first table outside subqueries (``SELECT lodgings``,
    ``INSERT declarations``)."""
    out = []
    for s in sql:
        words = outer_words(s)
        upper = [w.upper() for w in words]
        if upper[0] == "WITH":  # CTEs: the statement's own verb is the last one
            start = max(i for i, w in enumerate(upper) if w in ("INSERT", "UPDATE", "DELETE", "SELECT"))
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
    async def test_a_new_declaration_is_two_statements_and_no_re_read(
        self, client: httpx.AsyncClient, db: DB, service_app: FastAPI
    ) -> None:
        hotel = await make_lodging(db)
        with statements(service_app) as sql:
            out = await file(client, declaration(hotel), as_operator(hotel.operator_id))
        assert kinds(sql) == [
            "SELECT lodgings",  # its certificates, the filing's latest version, the authorization
            "INSERT declarations",  # its event into the outbox and NOTIFY in the same statement
        ]
        lookup, insert = sql
        assert "FROM certificates c WHERE c.lodging_id = l.lodging_id" in lookup
        assert "FROM declarations d WHERE d.lodging_id = l.lodging_id AND d.period = $" in lookup
        assert "FROM authorizations a WHERE a.lodging_id = l.lodging_id" in lookup
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
        assert kinds(sql) == ["SELECT lodgings", "INSERT declarations"]
        lookup = "(SELECT ARRAY[d.id, CAST(d.version AS text)] FROM declarations d"
        latest = sql[0].split(lookup)[1].split(" AS latest")[0]
        assert latest.startswith(" WHERE d.lodging_id = l.lodging_id")
        assert "trace" not in sql[0]

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


#: the background task that reloads the revocation denylist (``servicekit.app``): it checks a
#: connection out on its own timer (BEGIN, its SELECT, ROLLBACK), maybe inside the window
DENYLIST_TASK = "revocation-denylist"


class Sent(Sequence[str]):
    """The statements of the window's checkouts, in order, read when asked: asyncpg calls a
    query logger soon after the query, so a checkout's last statement may be logged after
    its checkin (a request's connection is back before its response)."""

    def __init__(self) -> None:
        self.checkouts: list[list[str]] = []

    def _all(self) -> list[str]:
        return [q for sent in self.checkouts for q in sent]

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]


@contextmanager
def sent_on_pool(app: FastAPI) -> Iterator[Sent]:
    """Everything sent on the asyncpg connections the app checks out of its pool meanwhile
    (BEGIN and COMMIT included: asyncpg logs them as it sends them), but by the denylist's
    reloads."""
    seen = Sent()
    out: dict[int, Any] = {}  # connection id -> its logger

    def checkout(dbapi_connection: Any, *_: Any) -> None:
        task = asyncio.current_task()
        if task is not None and task.get_name() == DENYLIST_TASK:
            return
        sent: list[str] = []
        seen.checkouts.append(sent)

        def logged(query: asyncpg.connection.LoggedQuery) -> None:
            sent.append(" ".join(query.query.split()))

        dbapi_connection.driver_connection.add_query_logger(logged)
        out[id(dbapi_connection)] = logged

    def checkin(dbapi_connection: Any, *_: Any) -> None:
        logged = out.pop(id(dbapi_connection), None)
        if logged is not None:  # else not logged: the denylist's, or out before the window
            dbapi_connection.driver_connection.remove_query_logger(logged)

    pool = app.state.engine.sync_engine.pool
    event.listen(pool, "checkout", checkout)
    event.listen(pool, "checkin", checkin)
    try:
        yield seen
    finally:
        event.remove(pool, "checkout", checkout)
        event.remove(pool, "checkin", checkin)
        assert out == {}, "a connection checked out in the window is still out"


MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@pytest.fixture(scope="module")
async def committing_app(broker: BrokerProcess) -> AsyncIterator[FastAPI]:
    """A filing app over a database of its own: what it commits stays out of the shared test
    database, whose other modules count what is filed (the compliance summary)."""
    url = await fresh_database("roomtax_test_filing_commits", MIGRATIONS)
    # the denylist reloaded every 20 ms: its checkouts fall inside every window, and
    # ``sent_on_pool`` must leave them out (a reload's BEGIN failed this test under load)
    async with serving_service(
        build_app, FilingSettings, database_url=url, broker=broker, revocation_refresh_seconds=0.02
    ) as app:
        yield app


class TestOneStatementWrite:
    """Without an Idempotency-Key a new declaration's only write is one statement (the row,
    its event, NOTIFY): PostgreSQL runs it as its own transaction, so no BEGIN and COMMIT
    round trips; with a key, the key's row is in the transaction and so is the statement.
    Committed for real here (the app's own sessions, not a test's rolled-back one), in a
    database of its own."""

    async def test_no_begin_or_commit_and_the_row_and_its_event_are_committed(
        self, committing_app: FastAPI
    ) -> None:
        service_app = committing_app
        db = service_app.state.sessionmaker
        hotel = await make_lodging(db)
        transport = httpx.ASGITransport(app=service_app)
        conn = await asyncpg.connect(service_app.state.settings.database_url.replace("+asyncpg", ""))
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://filing") as client:
                headers = as_operator(hotel.operator_id)
                with sent_on_pool(service_app) as plain:
                    first = await file(client, declaration(hotel), headers)
                with sent_on_pool(service_app) as keyed:
                    second = await file(
                        client, declaration(hotel), {**headers, "Idempotency-Key": f"k-{hotel.lodging_id}"}
                    )
            assert not [s for s in plain if s.upper().startswith(("BEGIN", "COMMIT"))]
            assert kinds(plain) == ["SELECT lodgings", "INSERT declarations"]
            assert keyed[0].startswith("BEGIN")
            assert keyed[-1].startswith("COMMIT")
            assert kinds(keyed[1:-1]) == ["SELECT lodgings", "INSERT declarations"]
            stored = await conn.fetch(
                "SELECT id, version FROM declarations WHERE lodging_id = $1 ORDER BY version",
                hotel.lodging_id,
            )
            assert [(r["id"], r["version"]) for r in stored] == [(first["id"], 1), (second["id"], 2)]
            events = await conn.fetch(
                "SELECT event_type FROM outbox WHERE key = $1 ORDER BY id", hotel.tax_account
            )
            assert [e["event_type"] for e in events] == [
                "roomtax.filing.declaration.filed.v1",
                "roomtax.filing.declaration.amended.v1",
            ]
        finally:
            await conn.close()

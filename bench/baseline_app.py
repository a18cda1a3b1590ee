"""The bare baseline of ``bench_filing_api.py``: FastAPI + asyncpg, one INSERT of the JSON body.

    uv run python bench/baseline_app.py --port P --dsn postgresql://postgres@127.0.0.1:5432/db

No validation, no authentication, no tax computation, no outbox: the floor that the
same web stack, the same server and the same PostgreSQL set for a JSON POST that
writes one row. Served by the same ``uvicorn.run`` defaults as ``python -m filing api``
(so it gets uvloop/httptools exactly when the services do).
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

DDL = "CREATE TABLE IF NOT EXISTS bench_baseline (id bigserial PRIMARY KEY, body jsonb NOT NULL)"


def build(dsn: str, pool_size: int = 10) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = await asyncpg.create_pool(dsn, min_size=pool_size, max_size=pool_size)
        async with pool.acquire() as conn:
            await conn.execute(DDL)
        app.state.pool = pool
        try:
            yield
        finally:
            await pool.close()

    app = FastAPI(lifespan=lifespan)

    @app.post("/v1/declarations", status_code=201)
    async def insert(request: Request) -> JSONResponse:
        body = (await request.body()).decode()
        async with request.app.state.pool.acquire() as conn:
            new_id = await conn.fetchval(
                "INSERT INTO bench_baseline (body) VALUES ($1::jsonb) RETURNING id", body
            )
        return JSONResponse({"id": new_id}, status_code=201)

    @app.get("/readyz")
    async def ready() -> dict[str, str]:
        return {"status": "ready"}

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dsn", required=True)
    args = parser.parse_args()
    uvicorn.run(build(args.dsn), host="127.0.0.1", port=args.port, log_config=None, access_log=False)

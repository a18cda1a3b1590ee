"""Scale out: two assessment worker processes in one consumer group share the work, once.

The platform (registry, filing, assessment; real broker, real processes) runs a SECOND
``python -m assessment worker`` next to the first, with its own log and operations port.
Both join the consumer group ``assessment-filing`` (the same consumer name), and the
broker splits the partitions of ``filing.declarations`` and ``filing.payments`` between
them (4 partitions each). Then returns are filed for lodgings whose tax accounts hash to
every partition of ``filing.declarations`` (keyed by tax account). It shows:

- each worker holds partitions of the declarations topic (the consumer reports the lag of
  every partition it is assigned on its ``/metrics``), the two shares are disjoint, cover
  all 4 partitions, and stay so while the returns flow;
- both processes applied declaration events (each worker's ``/metrics``), and together
  exactly one per return: no event applied twice;
- every return's liability exists exactly once in assessment's database, with the
  amount computed here (PR §24(B): 9% of the room revenue), and its statement says so.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import asyncpg
import httpx
import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.partitioner import murmur2
from platform_harness import Api, Platform, ServiceProcess, eventually, new_client
from test_platform_resilience import R, late

from servicekit.testing import database_url, free_port
from taxcore.money import fmt, round_cents
from taxcore.periods import due_date

D = Decimal
GROUP = "assessment-filing"
TOPIC = "filing.declarations"
TOPICS = (TOPIC, "filing.payments")  # what the group reads
PARTITIONS = 4  # as Tansu gives an auto-created topic
RETURNS = 16
DECLARATION_FILED = "roomtax.filing.declaration.filed.v1"


def second_worker(platform: Platform) -> ServiceProcess:
    """Another ``python -m assessment worker`` of the platform's assessment service, with its
    own operations port, heartbeat and log (``<logs>/second/assessment.log``)."""
    svc = platform.services["assessment"]
    heartbeat = {"ROOMTAX_WORKER_HEARTBEAT": str(svc.logs / "assessment-2.heartbeat")}
    worker = ServiceProcess(
        name="assessment",
        port=svc.port,
        env={**svc.env, **heartbeat},
        logs=svc.logs / "second",
        role_env={"worker": {"ROOMTAX_METRICS_PORT": str(free_port())}},
    )
    worker.worker = worker._spawn("worker")
    return worker


@pytest.fixture(scope="module")
async def platform() -> AsyncIterator[Platform]:
    p = Platform(prefix="roomtax_e2e_scaleout", operations_ports=True)
    try:
        await p.start(("registry", "filing", "assessment"))
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
async def second(platform: Platform) -> AsyncIterator[ServiceProcess]:
    admin = AIOKafkaAdminClient(bootstrap_servers=platform.broker.bootstrap)
    await admin.start()
    try:  # the group's topics exist before the returns (no rebalance when the first arrives)
        await admin.create_topics(
            [NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in TOPICS]
        )
    except TopicAlreadyExistsError:
        pass
    finally:
        await admin.close()
    worker = second_worker(platform)
    try:
        yield worker
    finally:
        worker.stop()


def samples(metrics: str, name: str, value: str = r"\S+") -> list[tuple[dict[str, str], str]]:
    """The samples of metric ``name`` in a /metrics text: (labels, value)."""
    out = []
    for labels, v in re.findall(r"^" + name + r"\{([^}]*)\} (" + value + r")$", metrics, re.MULTILINE):
        out.append((dict(re.findall(r'(\w+)="([^"]*)"', labels)), v))
    return out


async def worker_state(client: httpx.AsyncClient, url: str) -> tuple[set[int], int]:
    """A worker's partitions of the declarations topic (the consumer reports the lag of each
    partition it is assigned, and drops those a rebalance took away) and the declaration
    events it applied, from its /metrics."""
    metrics = (await client.get(f"{url}/metrics")).text
    partitions = {
        int(labels["partition"])
        for labels, _ in samples(metrics, "roomtax_consumer_lag")
        if labels.get("consumer") == GROUP and labels.get("topic") == TOPIC
    }
    applied = sum(
        int(float(v))
        for labels, v in samples(metrics, "roomtax_events_consumed_total")
        if (labels.get("consumer"), labels.get("type"), labels.get("outcome"))
        == (GROUP, DECLARATION_FILED, "applied")
    )
    return partitions, applied


def partition_of(key: str) -> int:
    """The producer's partition for ``key`` (Kafka's default partitioner: murmur2)."""
    return int(murmur2(key.encode()) & 0x7FFFFFFF) % PARTITIONS


async def test_two_workers_split_the_partitions_and_apply_each_return_once(
    platform: Platform, second: ServiceProcess
) -> None:
    urls = [
        platform.operations_url("assessment", "worker"),
        f"http://127.0.0.1:{second.role_env['worker']['ROOMTAX_METRICS_PORT']}",
    ]
    client = httpx.AsyncClient(timeout=10)

    async def split() -> tuple[set[int], set[int]] | None:
        """Both workers' shares of the declarations topic, once they hold two disjoint halves."""
        try:
            (one, _), (two, _) = [await worker_state(client, url) for url in urls]
        except httpx.HTTPError:  # the second worker's operations port is not up yet
            return None
        return (one, two) if one and two and one | two == set(range(PARTITIONS)) else None

    one, two = await eventually(split, timeout=120)
    assert not one & two, (one, two)

    tag = uuid.uuid4().hex[:6]
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    operator = await admin.post("registry", "/v1/operators", {"name": f"Scale Hotels {tag}"}, expect=201)
    api = await new_client(platform, admin, f"scale-{tag}", "operator", operator_id=operator["id"])
    try:
        accounts: list[str] = []
        while len(accounts) < RETURNS or {partition_of(a) for a in accounts} != set(range(PARTITIONS)):
            lodging = {"jurisdiction": "PR", "lodging_class": "hotel", "operator_id": operator["id"]}
            lodging |= {"name": f"Hotel {len(accounts)} {tag}", "registered_on": R.first_day.isoformat()}
            lodging |= {"address": {"line1": "1 Calle Luna", "municipality": "San Juan"}, "room_count": 30}
            created = await admin.post("registry", "/v1/lodgings", lodging, expect=201)
            accounts.append(str(created["tax_account"]))

        async def known() -> bool:
            paths = [f"/v1/lodgings/{a}/periods/{R}" for a in accounts]
            return all([(await admin.call("GET", "filing", p)).status_code == 200 for p in paths])

        await eventually(known, timeout=60)
        revenue = {a: D(10_000 + 137 * i) for i, a in enumerate(accounts)}
        tax = {a: round_cents(r * D("0.09")) for a, r in revenue.items()}  # PR §24(B): 9%
        for a in accounts:
            body: dict[str, Any] = {
                "lodging": a,
                "period": str(R),
                "room_revenue": fmt(revenue[a]),
                "room_nights": 100,
                "declared": {"taxable_base": fmt(revenue[a]), "tax": fmt(tax[a]), "total": fmt(tax[a])},
            }
            if late("PR"):  # only the agency dates a document in the past
                paper = {"filer": {"kind": "operator", "id": operator["id"]}}
                body |= paper | {"received_on": due_date("PR", R).isoformat()}
                out = await admin.post("filing", "/v1/declarations", body, expect=201)
            else:
                out = await api.post("filing", "/v1/declarations", body, expect=201)
            assert (out["status"], out["findings"]) == ("on_time", [])

        conn = await asyncpg.connect(database_url(f"{platform.prefix}_assessment", driver="postgresql"))
        try:

            async def liabilities() -> list[tuple[str, int, Decimal]] | None:
                rows = await conn.fetch(
                    "SELECT tax_account, count(*) AS n, sum(tax) AS tax FROM liabilities "
                    "WHERE tax_account = ANY($1::text[]) GROUP BY tax_account ORDER BY tax_account",
                    accounts,
                )
                return (
                    [(r["tax_account"], r["n"], r["tax"]) for r in rows]
                    if len(rows) == len(accounts)
                    else None
                )

            assert await eventually(liabilities, timeout=60) == sorted((a, 1, tax[a]) for a in accounts)
            inbox = await conn.fetchval(
                "SELECT count(*) FROM inbox WHERE consumer = $1 AND event_type = $2", GROUP, DECLARATION_FILED
            )
            assert inbox == len(accounts)
        finally:
            await conn.close()

        states = [await worker_state(client, url) for url in urls]
        counts = [n for _, n in states]
        assert all(n > 0 for n in counts), counts  # both processes did part of the work
        assert sum(counts) == len(accounts), counts  # and each return was applied once
        # the split still stands: no rebalance moved the partitions while the returns flowed
        assert [parts for parts, _ in states] == [one, two]

        for a in accounts:
            statement = await admin.get("assessment", f"/v1/accounts/{a}/statement")
            [period] = statement["periods"]
            assert (period["period"], period["basis"], period["principal"], len(period["filings"])) == (
                str(R),
                "declaration",
                {"tax": fmt(tax[a]), "impact_fee": "0.00"},  # PR levies no impact fee
                1,
            )
        assert second.worker is not None
        assert second.worker.poll() is None  # the second worker is still running
    finally:
        await client.aclose()
        await api.close()
        await admin.close()

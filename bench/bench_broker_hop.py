"""One broker hop on a real Tansu, per consumer ``fetch_max_wait_ms``: latency and idle CPU.

    uv run python -u bench/bench_broker_hop.py [--waits 500,200,100,50] [--rounds 2] [--records 80]

Starts a Tansu broker (``servicekit.testing.BrokerProcess``, a topic of 12 partitions), then
for each wait, interleaved over ``--rounds``: a group consumer as ``EventConsumer`` builds it
(session 3 s, heartbeats 500 ms, ``getmany(timeout_ms=500)``) idles for ``--idle`` seconds
(the CPU of this process and of the broker per second: what an idle consumer costs), then a
producer as the outbox relay's (``acks=all``, ``linger_ms=2``) sends ``--records`` records
20-180 ms apart; the latency is send -> the consumer's ``getmany`` returning it, and the
produce ack time is reported too. Baseline, same run: the first wait (aiokafka's default,
500 ms). Tansu polls its storage at 0, 1/2, 3/4 ... of the wait and answers at the first
poll that finds a record, so the p99 follows half the wait.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import time
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from servicekit.testing import BrokerProcess

TOPIC = "bench.hop"


def process_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def hop(broker: BrokerProcess, wait_ms: int, records: int, idle: float) -> dict[str, float]:
    assert broker.proc is not None
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False, linger_ms=2
    )
    consumer = AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=broker.bootstrap,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        enable_auto_commit=False,
        auto_offset_reset="latest",
        session_timeout_ms=3_000,
        heartbeat_interval_ms=500,
        metadata_max_age_ms=5_000,
        fetch_max_wait_ms=wait_ms,
    )
    await producer.start()
    await consumer.start()
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
        for tp in consumer.assignment():
            await consumer.position(tp)
        mine, broker_cpu, start = own_cpu(), process_cpu(broker.proc.pid), time.monotonic()
        while time.monotonic() < start + idle:
            await consumer.getmany(timeout_ms=500, max_records=500)
        elapsed = time.monotonic() - start
        client_idle = (own_cpu() - mine) / elapsed * 1000
        broker_idle = (process_cpu(broker.proc.pid) - broker_cpu) / elapsed * 1000
        sent: dict[int, float] = {}
        acks: list[float] = []

        async def produce() -> None:
            for i in range(records):
                await asyncio.sleep(random.uniform(0.02, 0.18))
                sent[i] = time.monotonic()
                future = await producer.send(TOPIC, key=str(i).encode(), value=json.dumps({"i": i}).encode())
                await future
                acks.append((time.monotonic() - sent[i]) * 1000)

        task = asyncio.create_task(produce())
        lag: list[float] = []
        while len(lag) < records:
            batches = await consumer.getmany(timeout_ms=500, max_records=500)
            now = time.monotonic()
            lag += [
                (now - sent[json.loads(r.value or b"{}")["i"]]) * 1000 for rs in batches.values() for r in rs
            ]
        await task
        return {
            "p50": pct(lag, 0.5),
            "p99": pct(lag, 0.99),
            "ack p50": pct(acks, 0.5),
            "ack p99": pct(acks, 0.99),
            "idle consumer CPU ms/s": client_idle,
            "idle broker CPU ms/s": broker_idle,
        }
    finally:
        await consumer.stop()
        await producer.stop()


async def main(args: argparse.Namespace) -> None:
    waits = [int(w) for w in args.waits.split(",")]
    broker = BrokerProcess()
    broker.start()
    try:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic(TOPIC, num_partitions=12, replication_factor=1)])
        await admin.close()
        print(f"load before: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)")
        results: dict[int, list[dict[str, float]]] = {w: [] for w in waits}
        for r in range(args.rounds):
            for w in waits:
                res = await hop(broker, w, args.records, args.idle)
                results[w].append(res)
                shown = ", ".join(f"{k} {v:.1f}" for k, v in res.items())
                print(f"round {r + 1} wait {w} ms: {shown} (load {os.getloadavg()[0]:.1f})", flush=True)
        base: dict[str, float] | None = None
        print(
            "\n| fetch_max_wait_ms | hop p50 ms | p99 ms | idle CPU ms/s (consumer + broker) | p99 / first |"
        )
        print("|---|---|---|---|---|")
        for w in waits:
            med = {k: statistics.median(x[k] for x in results[w]) for k in results[w][0]}
            base = base or med
            idle = med["idle consumer CPU ms/s"] + med["idle broker CPU ms/s"]
            print(
                f"| {w} | {med['p50']:.0f} | {med['p99']:.0f} | {idle:.1f} | {med['p99'] / base['p99']:.2f} |"
            )
    finally:
        broker.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--waits", default="500,200,100,50", help="fetch_max_wait_ms values, first = baseline"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--records", type=int, default=80)
    parser.add_argument("--idle", type=float, default=8.0, help="seconds idle per wait (its CPU)")
    asyncio.run(main(parser.parse_args()))

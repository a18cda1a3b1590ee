"""Write the event contracts as AsyncAPI and JSON Schema: ``uv run python scripts/export_events.py``.

taxcore stays free of I/O; this script does the writing, and adds what the deployment knows:
the brokers (servers), each topic's producer, partitions and replicas (``deploy/topics.yaml``)
and who subscribes (each service's consumer groups and the event types their handlers take).
``libs/taxcore/tests/test_events_docs.py`` and ``tests/test_asyncapi.py`` fail when
``docs/events`` is not current.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from taxcore.events import CONTRACTS, asyncapi, json_schemas, load_all

ROOT = Path(__file__).resolve().parent.parent
SERVICES = ("registry", "filing", "assessment", "distribution")
SERVERS = {
    "production": {
        "host": "kafka:9092",
        "protocol": "kafka",
        "description": "the brokers (ROOMTAX_KAFKA_BOOTSTRAP); replication 3, min.insync.replicas 2",
    },
    "development": {
        "host": "127.0.0.1:9092",
        "protocol": "kafka",
        "description": "the Tansu broker ./scripts/run starts",
    },
}


def subscribers() -> dict[str, dict[str, set[str]]]:
    """Consumer group → topic → the event types its handlers take, from each service's consumers."""
    from sqlalchemy.ext.asyncio import async_sessionmaker

    from servicekit.runtime import Runtime
    from servicekit.settings import ServiceSettings

    out: dict[str, dict[str, set[str]]] = {}
    for service in SERVICES:
        module = importlib.import_module(f"{service}.consumers")
        # a session factory bound to no database: consumers are built, never run
        for consumer in module.consumers(
            ServiceSettings(environment="test"), async_sessionmaker(), Runtime.from_environment()
        ):
            for event_type in consumer.handlers:
                topic = CONTRACTS[event_type][0]
                out.setdefault(consumer.name, {}).setdefault(topic, set()).add(event_type)
    return out


def document() -> dict[str, Any]:
    load_all()
    topics = {t["name"]: t for t in yaml.safe_load((ROOT / "deploy" / "topics.yaml").read_text())["topics"]}
    return asyncapi(servers=SERVERS, topics=topics, subscribers=subscribers())


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "events")
    out.mkdir(parents=True, exist_ok=True)
    (out / "asyncapi.json").write_text(json.dumps(document(), indent=2, sort_keys=True) + "\n")
    (out / "schemas.json").write_text(json.dumps(json_schemas(), indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

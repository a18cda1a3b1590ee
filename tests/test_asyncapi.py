"""docs/events/asyncapi.json: operations (who publishes, who subscribes), servers, Kafka bindings."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _document() -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("export_events", ROOT / "scripts" / "export_events.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return json.loads(json.dumps(module.document()))  # type: ignore[no-any-return]


PUBLISHED = json.loads((ROOT / "docs" / "events" / "asyncapi.json").read_text())


def test_the_committed_document_is_current() -> None:
    """Regenerate with ``uv run python scripts/export_events.py``."""
    assert _document() == PUBLISHED


def test_every_topic_is_a_channel_with_its_kafka_binding() -> None:
    topics = {t["name"]: t for t in yaml.safe_load((ROOT / "deploy" / "topics.yaml").read_text())["topics"]}
    for name, channel in PUBLISHED["channels"].items():
        spec = topics[name]
        assert channel["bindings"] == {
            "kafka": {
                "topic": name,
                "partitions": spec["partitions"],
                "replicas": spec["replication_factor"],
                "bindingVersion": "0.5.0",
            }
        }
    assert {s["protocol"] for s in PUBLISHED["servers"].values()} == {"kafka"}


def test_every_message_names_its_key() -> None:
    for message in PUBLISHED["components"]["messages"].values():
        assert message["bindings"]["kafka"]["key"]["type"] == "string"
        assert "tax account" in message["bindings"]["kafka"]["key"]["description"]


def test_operations_say_who_publishes_and_who_subscribes() -> None:
    operations = PUBLISHED["operations"]
    send = operations["filing.send.filing.declarations"]
    assert send["action"] == "send"
    assert send["channel"] == {"$ref": "#/channels/filing.declarations"}
    assert [m["$ref"].rsplit("/", 1)[-1] for m in send["messages"]] == [
        "roomtax_filing_declaration_amended_v1",
        "roomtax_filing_declaration_filed_v1",
    ]
    receive = operations["assessment-filing.receive.filing.declarations"]
    assert receive["action"] == "receive"
    assert receive["bindings"]["kafka"]["groupId"] == {"type": "string", "enum": ["assessment-filing"]}
    # every topic has a publisher; every message a sender lists is one its channel carries
    assert {op["channel"]["$ref"] for op in operations.values() if op["action"] == "send"} == {
        f"#/channels/{t}" for t in PUBLISHED["channels"]
    }
    for op in operations.values():
        channel = PUBLISHED["channels"][op["channel"]["$ref"].rsplit("/", 1)[-1]]
        for message in op["messages"]:
            assert message["$ref"].rsplit("/", 1)[-1] in channel["messages"]

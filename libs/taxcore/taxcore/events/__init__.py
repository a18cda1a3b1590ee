"""Event contracts exchanged by the services.

Every event travels as a CloudEvents 1.0 JSON document (structured mode).
``type`` is ``roomtax.<service>.<aggregate>.<verb>.v<N>``; ``subject`` and the
Kafka key are the lodging's tax account number (or the aggregate's id when the
event is not about one lodging), so one lodging's events stay in order.

Each service's payload models live in a module of this package
(``events.registry``, ``events.filing``, ...) and register their type here with
:func:`contract`, which is what the JSON Schema / AsyncAPI export walks. The
decorator also sets the class's ``event_type`` and ``topic``, so an event is typed
by its contract: ``emit(session, PaymentReceived(...), key=...)`` derives both, and a
consumer's handler names the contract it handles (``servicekit.consumer.handles``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

SPEC_VERSION = "1.0"


class CloudEvent(BaseModel):
    """A CloudEvents 1.0 envelope in JSON structured mode."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    specversion: str = SPEC_VERSION
    id: str
    source: str
    type: str
    subject: str | None = None
    time: datetime
    datacontenttype: str = "application/json"
    data: dict[str, Any] = Field(default_factory=dict)
    # extension attributes: the outbox stream sequence (per topic) for replay checks
    sequence: int | None = None
    # the W3C trace context of the request that emitted the event (CloudEvents Distributed
    # Tracing extension): consumers continue that trace
    traceparent: str | None = None


class EventData(BaseModel):
    """Base of every event payload: strict, decimals as strings in JSON.

    A contract (a class registered with :func:`contract`) carries its ``event_type``
    and ``topic`` as class variables; a payload part nested in a contract has none.
    """

    model_config = ConfigDict(extra="forbid")

    event_type: ClassVar[str]
    topic: ClassVar[str]


M = TypeVar("M", bound=type[EventData])

CONTRACTS: dict[str, tuple[str, type[EventData]]] = {}
"""event type -> (topic, payload model)."""


def contract(event_type: str, topic: str) -> Any:
    """Class decorator registering a payload model for an event type and topic (set on the class).

    One type, one class: registering a type a second time for another class raises.
    """

    def register(model: M) -> M:
        known = CONTRACTS.get(event_type)
        if known is not None and known[1].__qualname__ != model.__qualname__:
            raise ValueError(f"{event_type} is already the type of {known[1].__qualname__}")
        model.event_type = event_type
        model.topic = topic
        CONTRACTS[event_type] = (topic, model)
        return model

    return register


def is_contract(model: type[EventData]) -> bool:
    """Whether ``model`` itself was registered (not only a subclass of a registered contract)."""
    return "event_type" in vars(model) and CONTRACTS.get(model.event_type, ("", None))[1] is model


def contract_of(event_type: str) -> type[EventData]:
    """The payload model registered for ``event_type`` (KeyError when none is)."""
    return CONTRACTS[event_type][1]


def json_schemas() -> dict[str, Any]:
    """JSON Schema of every registered payload, keyed by event type."""
    return {etype: model.model_json_schema() for etype, (_, model) in sorted(CONTRACTS.items())}


KAFKA_BINDING = "0.5.0"
#: every topic is keyed by the lodging's tax account number (deploy/topics.yaml): one lodging's
#: events stay in order within one partition
MESSAGE_KEY = {
    "type": "string",
    "description": "the lodging's tax account number (PR §26), e.g. PR-0000001-5",
}


def asyncapi(
    *,
    servers: dict[str, Any] | None = None,
    topics: dict[str, dict[str, Any]] | None = None,
    subscribers: dict[str, dict[str, set[str]]] | None = None,
) -> dict[str, Any]:
    """An AsyncAPI 3.0 document: every topic (a channel with its Kafka binding), the events it
    carries (each message with its key), who publishes them and who subscribes to them.

    taxcore knows only the contracts; the caller (``scripts/export_events.py``) passes what the
    deployment knows: ``servers``, ``topics`` (``deploy/topics.yaml``: producer, partitions,
    replicas) and ``subscribers`` (consumer group → topic → event types its handlers take).
    """
    topics = topics or {}
    channels: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    sent: dict[str, list[str]] = {}
    for etype, (topic, model) in sorted(CONTRACTS.items()):
        name = etype.replace(".", "_")
        messages[name] = {
            "name": etype,
            "contentType": "application/cloudevents+json",
            "payload": model.model_json_schema(),
            "bindings": {"kafka": {"key": MESSAGE_KEY, "bindingVersion": KAFKA_BINDING}},
        }
        channel = channels.setdefault(topic, {"address": topic, "messages": {}})
        channel["messages"][name] = {"$ref": f"#/components/messages/{name}"}
        sent.setdefault(topic, []).append(name)
    operations: dict[str, Any] = {}
    for topic, channel in channels.items():
        spec = topics.get(topic, {})
        binding: dict[str, Any] = {"topic": topic, "bindingVersion": KAFKA_BINDING}
        if "partitions" in spec:
            binding["partitions"] = spec["partitions"]
            binding["replicas"] = spec["replication_factor"]
        channel["bindings"] = {"kafka": binding}
        producer = spec.get("producer") or topic.split(".")[0]
        operations[f"{producer}.send.{topic}"] = {
            "action": "send",
            "summary": f"{producer} publishes (through its outbox relay)",
            "channel": {"$ref": f"#/channels/{topic}"},
            "messages": [{"$ref": f"#/channels/{topic}/messages/{m}"} for m in sent[topic]],
        }
    for group, by_topic in sorted((subscribers or {}).items()):
        for topic, types in sorted(by_topic.items()):
            names = sorted(
                t.replace(".", "_") for t in types if t.replace(".", "_") in channels[topic]["messages"]
            )
            operations[f"{group}.receive.{topic}"] = {
                "action": "receive",
                "summary": f"consumer group {group} handles these events",
                "channel": {"$ref": f"#/channels/{topic}"},
                "messages": [{"$ref": f"#/channels/{topic}/messages/{m}"} for m in names],
                "bindings": {
                    "kafka": {"groupId": {"type": "string", "enum": [group]}, "bindingVersion": KAFKA_BINDING}
                },
            }
    document: dict[str, Any] = {
        "asyncapi": "3.0.0",
        "info": {"title": "Roomtax events", "version": "1.0.0"},
        "defaultContentType": "application/cloudevents+json",
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    }
    if servers:
        document["servers"] = servers
    return document


def load_all() -> None:
    """Import every service's contract module, so :data:`CONTRACTS` is complete."""
    import importlib

    for module in ("registry", "filing", "assessment", "cases", "plans", "compliance", "distribution"):
        importlib.import_module(f"taxcore.events.{module}")

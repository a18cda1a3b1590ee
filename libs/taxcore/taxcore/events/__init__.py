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


def asyncapi() -> dict[str, Any]:
    """An AsyncAPI 3.0 document listing every topic and the events it carries."""
    channels: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for etype, (topic, model) in sorted(CONTRACTS.items()):
        name = etype.replace(".", "_")
        messages[name] = {"name": etype, "payload": model.model_json_schema()}
        channel = channels.setdefault(topic, {"address": topic, "messages": {}})
        channel["messages"][name] = {"$ref": f"#/components/messages/{name}"}
    return {
        "asyncapi": "3.0.0",
        "info": {"title": "Roomtax events", "version": "1.0.0"},
        "channels": channels,
        "components": {"messages": messages},
    }


def load_all() -> None:
    """Import every service's contract module, so :data:`CONTRACTS` is complete."""
    import importlib

    for module in ("registry", "filing", "assessment", "cases", "plans", "compliance", "distribution"):
        importlib.import_module(f"taxcore.events.{module}")

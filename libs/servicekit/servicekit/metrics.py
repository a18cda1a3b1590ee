"""Prometheus metrics shared by every service process."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

HTTP_REQUESTS = Counter(
    "roomtax_http_requests_total", "HTTP requests", ["service", "method", "route", "status"]
)
HTTP_LATENCY = Histogram(
    "roomtax_http_request_seconds", "HTTP request latency", ["service", "method", "route"]
)
OUTBOX_PUBLISHED = Counter("roomtax_outbox_published_total", "Outbox events published", ["relay"])
OUTBOX_ERRORS = Counter("roomtax_outbox_errors_total", "Outbox relay errors", ["relay"])
OUTBOX_DEAD_LETTERS = Counter(
    "roomtax_outbox_dead_letters_total",
    "Outbox rows parked because they can never be published as they are",
    ["relay", "reason"],
)
OUTBOX_REPLAYS = Counter("roomtax_outbox_replays_total", "Outbox window replays", ["relay"])
EVENTS_CONSUMED = Counter("roomtax_events_consumed_total", "Events consumed", ["consumer", "type", "outcome"])
WORKER_BROKER_UP = Gauge("roomtax_worker_broker_up", "1 when the worker reaches the broker, else 0")

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

# -- consumers (servicekit.consumer) -------------------------------------------------------
HANDLER_LATENCY = Histogram(
    "roomtax_consumer_handler_seconds",
    "Time to apply one event (inbox check, handler, commit; retries included)",
    ["consumer", "type", "outcome"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
CONSUMER_LAG = Gauge(
    "roomtax_consumer_lag",
    "Records on the partition not yet consumed by this consumer group (end offset - position)",
    ["consumer", "topic", "partition"],
)
INBOX_DUPLICATES = Counter(
    "roomtax_inbox_duplicates_skipped_total",
    "Events skipped because the consumer's inbox already held their id (redeliveries, replays)",
    ["consumer"],
)

# -- the service's database, read by the worker (servicekit.monitoring) -------------------
OUTBOX_BACKLOG = Gauge("roomtax_outbox_backlog", "Outbox rows not yet published", ["service"])
OUTBOX_OLDEST_AGE = Gauge(
    "roomtax_outbox_oldest_unpublished_age_seconds",
    "Age of the oldest unpublished outbox row (0 when none waits)",
    ["service"],
)
OUTBOX_DEAD_LETTERS_OPEN = Gauge(
    "roomtax_outbox_dead_letters_open",
    "Outbox rows parked and neither released nor discarded",
    ["service"],
)
CONSUMER_DEAD_LETTERS = Gauge(
    "roomtax_consumer_dead_letters", "Rows in the consumers' dead_letters table", ["service"]
)
JOB_LAST_SUCCESS = Gauge(
    "roomtax_job_last_success_timestamp_seconds",
    "When a daily job last finished successfully (unix time, from job_runs)",
    ["service", "job"],
)
MONITOR_SCRAPE_ERRORS = Counter(
    "roomtax_monitor_errors_total", "Failed reads of the database gauges", ["service"]
)

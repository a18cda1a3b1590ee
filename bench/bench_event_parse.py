"""CPU of reading one consumer record into its CloudEvent (``servicekit.consumer``).

Run: ``uv run python bench/bench_event_parse.py [--rounds 5]``. A ``collection.posted``
record as the relay publishes it, parsed the way the consumer did before session 8
(``json.loads`` of the bytes, then ``CloudEvent.model_validate`` of the dict: the
baseline) and the way it does now (``CloudEvent.model_validate_json`` of the bytes, one
pass in pydantic-core), interleaved; then the handler's contract validation
(``CollectionPosted.model_validate`` of the envelope's data) for scale. Prints the best
of each round in microseconds per record and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import timeit
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal

from taxcore.events import CloudEvent
from taxcore.events.assessment import CollectionPosted

N = 20_000


def record() -> bytes:
    posting = CollectionPosted(
        posting_id=str(uuid.uuid4()),
        payment_id="pay-1",
        tax_account="PR-0000001-0",
        jurisdiction="PR",
        lodging_class="hotel",
        period="2025-01",
        component="tax",
        amount=Decimal("123.45"),
        collected_on=date(2025, 2, 10),
        section="13 L.P.R.A. 2271p",
        refund_id=None,
    )
    event = CloudEvent(
        id=str(uuid.uuid4()),
        source="/roomtax/assessment",
        type=CollectionPosted.event_type,
        subject=posting.tax_account,
        time=datetime.now(UTC),
        data=posting.model_dump(mode="json"),
        traceparent=f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01",
    )
    return event.model_dump_json().encode()


def per_record(fn: Callable[[], object]) -> float:
    """Best of five timings of N calls, in microseconds per call."""
    return min(timeit.repeat(fn, number=N, repeat=5)) / N * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    raw = record()
    data = CloudEvent.model_validate_json(raw).data
    assert CloudEvent.model_validate(json.loads(raw)) == CloudEvent.model_validate_json(raw)
    cases: dict[str, Callable[[], object]] = {
        "json.loads + model_validate (before)": lambda: CloudEvent.model_validate(json.loads(raw)),
        "model_validate_json (now)": lambda: CloudEvent.model_validate_json(raw),
        "contract model_validate of data": lambda: CollectionPosted.model_validate(data),
    }
    got: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(args.rounds):
        line = []
        for name, fn in cases.items():
            got[name].append(per_record(fn))
            line.append(f"{name} {got[name][-1]:.2f} us")
        print(f"round {r + 1}: " + "; ".join(line))
    medians = {name: statistics.median(v) for name, v in got.items()}
    before, now = medians["json.loads + model_validate (before)"], medians["model_validate_json (now)"]
    print(f"{len(raw)} bytes per record; medians of {args.rounds} rounds:")
    for name, value in medians.items():
        print(f"  {name}: {value:.2f} us ({value / before:.2f}x the baseline)")
    print(f"parse: {before:.2f} -> {now:.2f} us per record ({now / before:.2f}x)")


if __name__ == "__main__":
    main()

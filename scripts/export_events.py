"""Write the event contracts as AsyncAPI and JSON Schema: ``uv run python scripts/export_events.py``.

taxcore stays free of I/O; this script does the writing. ``libs/taxcore/tests/test_events_docs.py``
fails when ``docs/events`` is not current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from taxcore.events import asyncapi, json_schemas, load_all


def main() -> None:
    load_all()
    out = Path(
        sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "docs" / "events"
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "asyncapi.json").write_text(json.dumps(asyncapi(), indent=2, sort_keys=True) + "\n")
    (out / "schemas.json").write_text(json.dumps(json_schemas(), indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

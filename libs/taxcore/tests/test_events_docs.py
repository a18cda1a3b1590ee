"""The published event contracts (docs/events) match the pydantic models."""

from __future__ import annotations

import json
from pathlib import Path

from taxcore.events import CONTRACTS, asyncapi, json_schemas, load_all

DOCS = Path(__file__).resolve().parents[3] / "docs" / "events"


class TestPublishedContracts:
    def test_committed_documents_are_current(self) -> None:
        """Regenerate with ``uv run python scripts/export_events.py`` after changing a contract."""
        load_all()
        published = json.loads((DOCS / "asyncapi.json").read_text())
        ours = json.loads(json.dumps(asyncapi()))  # the deployment's part is tests/test_asyncapi.py's
        assert published["components"] == ours["components"]
        assert {k: v["messages"] for k, v in published["channels"].items()} == {
            k: v["messages"] for k, v in ours["channels"].items()
        }
        assert json.loads((DOCS / "schemas.json").read_text()) == json.loads(json.dumps(json_schemas()))

    def test_every_event_type_is_versioned_and_on_a_service_topic(self) -> None:
        load_all()
        # 20 + attributes_changed, access.revoked, user.changed + 8 case work + 8 payment plans
        # + cross-check findings and audit steps
        assert len(CONTRACTS) == 41
        for event_type, (topic, _) in CONTRACTS.items():
            parts = event_type.split(".")
            assert parts[0] == "roomtax"
            assert parts[-1].startswith("v")
            assert topic.split(".")[0] == parts[1], event_type

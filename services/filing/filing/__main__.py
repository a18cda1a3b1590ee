from __future__ import annotations

from pathlib import Path

from filing.app import build_app
from filing.consumers import consumers
from filing.settings import FilingSettings
from servicekit.cli import ServiceSpec, main

SPEC = ServiceSpec(
    name="filing",
    settings=FilingSettings,
    app=lambda s: build_app(s),  # type: ignore[arg-type]
    migrations=Path(__file__).resolve().parent.parent / "migrations",
    default_port=8002,
    consumers=consumers,
)

if __name__ == "__main__":
    main(SPEC)

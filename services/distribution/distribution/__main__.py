from __future__ import annotations

from pathlib import Path

from distribution.app import build_app
from distribution.consumers import consumers
from distribution.settings import DistributionSettings
from servicekit.cli import ServiceSpec, main

SPEC = ServiceSpec(
    name="distribution",
    settings=DistributionSettings,
    app=lambda s: build_app(s),  # type: ignore[arg-type]
    migrations=Path(__file__).resolve().parent.parent / "migrations",
    default_port=8004,
    consumers=consumers,
)

if __name__ == "__main__":
    main(SPEC)

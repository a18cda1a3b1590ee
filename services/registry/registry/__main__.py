from __future__ import annotations

from pathlib import Path

from registry.app import build_app
from registry.consumers import consumers
from registry.settings import RegistrySettings
from servicekit.cli import ServiceSpec, main

SPEC = ServiceSpec(
    name="registry",
    settings=RegistrySettings,
    app=lambda s: build_app(s),  # type: ignore[arg-type]
    migrations=Path(__file__).resolve().parent.parent / "migrations",
    default_port=8001,
    consumers=consumers,
)

if __name__ == "__main__":
    main(SPEC)

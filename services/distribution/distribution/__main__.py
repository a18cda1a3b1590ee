from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from distribution.app import build_app
from distribution.consumers import consumers
from distribution.settings import DistributionSettings
from servicekit.cli import ServiceSpec, main
from servicekit.settings import ServiceSettings


def _app(settings: ServiceSettings) -> FastAPI:
    assert isinstance(settings, DistributionSettings)
    app: FastAPI = build_app(settings)
    return app


SPEC = ServiceSpec(
    name="distribution",
    settings=DistributionSettings,
    app=_app,
    migrations=Path(__file__).resolve().parent.parent / "migrations",
    default_port=8004,
    consumers=consumers,
)

if __name__ == "__main__":
    main(SPEC)

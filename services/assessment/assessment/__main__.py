from __future__ import annotations

from pathlib import Path

from assessment.app import build_app
from assessment.consumers import consumers
from assessment.jobs.service import daily_jobs
from assessment.settings import AssessmentSettings
from servicekit.cli import ServiceSpec, main

SPEC = ServiceSpec(
    name="assessment",
    settings=AssessmentSettings,
    app=lambda s: build_app(s),  # type: ignore[arg-type]
    migrations=Path(__file__).resolve().parent.parent / "migrations",
    default_port=8003,
    consumers=consumers,
    background=[daily_jobs],  # type: ignore[list-item]
)

if __name__ == "__main__":
    main(SPEC)

"""The golden case files (``libs/taxcore/golden``): data a tax specialist can read and extend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def golden_cases(pattern: str, rule: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each case of the files matching ``pattern`` (each of rule ``rule``), with its test id."""
    for file in sorted(GOLDEN.glob(pattern)):
        doc = yaml.safe_load(file.read_text(encoding="utf-8"))
        assert doc["rule"] == rule, file
        for case in doc["cases"]:
            yield f"{file.stem}: {case['name']}", case

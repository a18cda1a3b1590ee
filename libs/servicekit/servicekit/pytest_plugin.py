"""Pytest fixtures shared by every suite: one real broker per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from servicekit.testing import BrokerProcess


@pytest.fixture(scope="session")
def broker() -> Iterator[BrokerProcess]:
    """A real Tansu broker (Kafka protocol over TCP) for the whole session."""
    process = BrokerProcess()
    process.start()
    yield process
    process.stop()

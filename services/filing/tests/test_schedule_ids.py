"""UUIDs as text without ``uuid.UUID`` objects (``filing.ids``): the very strings of
``str(uuid.uuid4())`` of the same bytes and of ``str(uuid.uuid5(...))``."""

from __future__ import annotations

import uuid

import pytest

from filing import ids
from filing.lodging_periods import _FILINGS, filing_id
from taxcore.periods import Period


class TestRandomIds:
    def test_the_same_text_as_uuid_of_the_same_bytes(self, monkeypatch: pytest.MonkeyPatch) -> None:
        pool = bytes(range(48))  # three ids' worth of known bytes
        calls: list[int] = []

        def urandom(n: int) -> bytes:
            calls.append(n)
            return pool[:n]

        monkeypatch.setattr(ids.os, "urandom", urandom)
        drawn = list(ids.random_ids(3))
        assert calls == [48]  # one call for the chunk
        assert drawn == [str(uuid.UUID(bytes=pool[k : k + 16], version=4)) for k in (0, 16, 32)]
        assert drawn[0] == "00010203-0405-4607-8809-0a0b0c0d0e0f"

    def test_all_bits_set_and_clear(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(ids.os, "urandom", lambda n: b"\xff" * 16 + b"\x00" * 16)
        assert list(ids.random_ids(2)) == [
            "ffffffff-ffff-4fff-bfff-ffffffffffff",
            "00000000-0000-4000-8000-000000000000",
        ]

    def test_random_version_4_and_distinct(self) -> None:
        drawn = list(ids.random_ids(2_000))
        assert len(set(drawn)) == 2_000
        for text in drawn:
            parsed = uuid.UUID(text)
            assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)

    def test_none(self) -> None:
        assert list(ids.random_ids(0)) == []


class TestNameId:
    @pytest.mark.parametrize("name", ["", "a", "lodging-1|2026-10|facilitator|fac-1", "ñandú|€" * 40])
    def test_uuid5(self, name: str) -> None:
        assert ids.name_id(_FILINGS, name) == str(uuid.uuid5(_FILINGS, name))

    def test_filing_id_unchanged(self) -> None:
        # pinned: every stored declaration's filing_id was made by uuid.uuid5 with this name
        assert filing_id("lodging-1", Period.parse("2026-10"), "facilitator", "fac-1") == str(
            uuid.uuid5(_FILINGS, "lodging-1|2026-10|facilitator|fac-1")
        )

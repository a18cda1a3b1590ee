"""Cursors: a list ordered by a whole number (a ``seq``, an id) refuses any other."""

from __future__ import annotations

import pytest

from servicekit.errors import ValidationFailed
from servicekit.pagination import decode_int_cursor, encode_cursor


class TestDecodeIntCursor:
    def test_the_first_page_has_none(self) -> None:
        assert decode_int_cursor(None) is None
        assert decode_int_cursor("") is None

    def test_the_number_a_page_ended_on(self) -> None:
        assert decode_int_cursor(encode_cursor([1234])) == 1234

    @pytest.mark.parametrize("value", ["x1", "-5", "1.5", "²", " 7"])
    def test_a_cursor_of_anything_else_is_422_on_the_cursor(self, value: str) -> None:
        with pytest.raises(ValidationFailed) as e:
            decode_int_cursor(encode_cursor([value]))
        detail = "not a cursor returned by this list"
        assert e.value.errors == [{"pointer": "#/query/cursor", "detail": detail}]

    def test_two_keys_are_not_one(self) -> None:
        with pytest.raises(ValidationFailed):
            decode_int_cursor(encode_cursor([1, 2]))

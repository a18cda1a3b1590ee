"""The one money type of the APIs and events (issue 10 item 2)."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

from taxcore.money import (
    CENT,
    MONEY_PATTERN,
    SIGNED_MONEY_PATTERN,
    Money,
    MoneyError,
    PositiveMoney,
    SignedMoney,
    fmt,
    parse_money,
    round_cents,
)

UNSIGNED = re.compile(r"\d{1,16}(\.\d{1,2})?", re.ASCII)
SIGNED = re.compile(r"-?\d{1,16}(\.\d{1,2})?", re.ASCII)
MONEY = TypeAdapter(Money)
SIGNED_MONEY = TypeAdapter(SignedMoney)
TWO_DECIMALS = re.compile(r"-?\d{1,16}\.\d{2}")

#: strings near the pattern: digits, signs, points, exponents, blanks, other scripts' digits
near = st.text(alphabet="0123456789-+.eE _\t\n١٢", max_size=24)
amount_like = st.from_regex(r"\A-?\d{1,17}(\.\d{1,3})?\Z")


def accepts(adapter: TypeAdapter[Decimal], text: str) -> bool:
    try:
        adapter.validate_python(text)
    except ValidationError:
        return False
    return True


def negative_zero(text: str) -> bool:
    return text.startswith("-") and Decimal(text) == 0


class TestStringsAgainstThePattern:
    @given(st.one_of(near, amount_like, st.text(max_size=24)))
    def test_unsigned_accepts_exactly_the_pattern(self, text: str) -> None:
        assert accepts(MONEY, text) == bool(UNSIGNED.fullmatch(text))

    @given(st.one_of(near, amount_like, st.text(max_size=24)))
    def test_signed_accepts_exactly_the_pattern_but_negative_zero(self, text: str) -> None:
        expected = bool(SIGNED.fullmatch(text)) and not negative_zero(text)
        assert accepts(SIGNED_MONEY, text) == expected

    @given(st.one_of(amount_like, near))
    def test_accepted_amounts_serialize_with_two_decimals_and_round_trip(self, text: str) -> None:
        if not accepts(SIGNED_MONEY, text):
            return
        value = SIGNED_MONEY.validate_python(text)
        out = SIGNED_MONEY.dump_python(value, mode="json")
        assert TWO_DECIMALS.fullmatch(out)
        assert Decimal(out) == Decimal(text)
        assert SIGNED_MONEY.validate_json(SIGNED_MONEY.dump_json(value)) == value

    @given(st.one_of(near, amount_like, st.text(max_size=24)))
    def test_validators_give_what_parse_money_gives(self, text: str) -> None:
        """The validators take the wire's strings without calling ``parse_money``: the very
        value (digits, exponent, sign) it returns, or its message."""
        for adapter, signed in ((MONEY, False), (SIGNED_MONEY, True)):
            try:
                expected = parse_money(text, signed=signed)
            except MoneyError as exc:
                with pytest.raises(ValidationError, match=re.escape(exc.message)):
                    adapter.validate_python(text)
            else:
                assert adapter.validate_python(text).as_tuple() == expected.as_tuple()

    def test_published_patterns_are_the_ones_enforced(self) -> None:
        assert MONEY_PATTERN == r"^\d{1,16}(\.\d{1,2})?$"
        assert SIGNED_MONEY_PATTERN == r"^-?\d{1,16}(\.\d{1,2})?$"
        assert MONEY.json_schema()["pattern"] == MONEY_PATTERN
        assert SIGNED_MONEY.json_schema()["pattern"] == SIGNED_MONEY_PATTERN


class TestWhatTheReviewFound:
    @pytest.mark.parametrize(
        "text", ["1e1", " 10.00 ", "+10.00", "-0.00", "1e-2", "-10.00", "10.001", "", "."]
    )
    def test_loose_strings_are_refused(self, text: str) -> None:
        assert not accepts(MONEY, text)

    @pytest.mark.parametrize("text", ["-0", "-0.00", "-0.0", "-00"])
    def test_signed_refuses_negative_zero(self, text: str) -> None:
        with pytest.raises(ValidationError, match="zero has no sign"):
            SIGNED_MONEY.validate_python(text)

    @pytest.mark.parametrize(
        ("text", "out"), [("10", "10.00"), ("10.5", "10.50"), ("0", "0.00"), ("007", "7.00")]
    )
    def test_serialized_with_two_decimals(self, text: str, out: str) -> None:
        assert MONEY.dump_json(MONEY.validate_json(f'"{text}"')) == f'"{out}"'.encode()

    def test_signed_keeps_its_sign(self) -> None:
        assert SIGNED_MONEY.dump_python(SIGNED_MONEY.validate_python("-12.5"), mode="json") == "-12.50"

    @pytest.mark.parametrize("number", ["10", "10.5", "1e1", "true"])
    def test_json_numbers_are_refused(self, number: str) -> None:
        with pytest.raises(ValidationError, match="not JSON numbers"):
            MONEY.validate_json(number)

    def test_sixteen_digits_fit_seventeen_do_not(self) -> None:
        assert MONEY.validate_python("9" * 16 + ".99") == Decimal("9999999999999999.99")
        assert not accepts(MONEY, "1" + "0" * 16)


class TestDecimalsFromCode:
    def test_a_computed_decimal_in_cents_is_taken(self) -> None:
        assert MONEY.dump_python(Decimal("12.5"), mode="json") == "12.50"
        assert MONEY.validate_python(Decimal("12.50")) == Decimal("12.50")

    @pytest.mark.parametrize(
        "value", [Decimal("12.345"), Decimal("NaN"), Decimal("Infinity"), Decimal("1E+17")]
    )
    def test_fractions_of_a_cent_and_non_finite_are_refused(self, value: Decimal) -> None:
        with pytest.raises(MoneyError):
            parse_money(value, signed=True)

    def test_negative_zero_from_code_becomes_zero(self) -> None:
        assert str(SIGNED_MONEY.validate_python(Decimal("-0.00"))) == "0.00"
        assert fmt(Decimal("-0.001")) == "0.00"

    def test_unsigned_refuses_a_negative_decimal(self) -> None:
        with pytest.raises(MoneyError, match="must not be negative"):
            parse_money(Decimal("-1.00"))


class TestPositiveMoney:
    class Bond(BaseModel):
        amount: PositiveMoney

    def test_zero_is_refused(self) -> None:
        with pytest.raises(ValidationError, match="more than zero"):
            self.Bond.model_validate({"amount": "0.00"})

    def test_positive_is_kept(self) -> None:
        assert self.Bond.model_validate({"amount": "25000"}).model_dump(mode="json") == {"amount": "25000.00"}


class TestRounding:
    """``round_cents`` and ``fmt`` round with their own half-up context: the same amounts as
    ``Decimal.quantize(CENT, rounding=ROUND_HALF_UP)`` in the default context."""

    @given(
        st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**16), max_value=10**16, places=4)
    )
    def test_as_quantize_half_up(self, value: Decimal) -> None:
        expected = value.quantize(CENT, rounding=ROUND_HALF_UP)
        assert round_cents(value) == expected
        assert str(round_cents(value)) == str(expected)
        assert fmt(value) == str(expected if expected else Decimal("0.00"))

    @pytest.mark.parametrize(
        ("value", "rounded", "text"),
        [
            ("0.005", "0.01", "0.01"),
            ("-0.005", "-0.01", "-0.01"),
            ("1.234999", "1.23", "1.23"),
            ("2.675", "2.68", "2.68"),
            ("-0.004", "-0.00", "0.00"),
            ("0", "0.00", "0.00"),
            ("1E+3", "1000.00", "1000.00"),
            ("9999999999999999.995", "10000000000000000.00", "10000000000000000.00"),
        ],
    )
    def test_cases(self, value: str, rounded: str, text: str) -> None:
        assert str(round_cents(Decimal(value))) == rounded
        assert fmt(Decimal(value)) == text

"""Money: ``Decimal`` amounts in a currency, rounded half-up to the cent.

The platform never uses ``float`` for money. Amounts are rounded explicitly,
half-up to the cent, at the point where the statute's amount exists (a
declaration total, a penalty, a fund share) and nowhere else, so intermediate
products (a rate times a base) keep full precision until then.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import AfterValidator, PlainSerializer, PlainValidator, WithJsonSchema

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
CURRENCY = "USD"  # both PR and VI levy the tax in U.S. dollars


class MoneyError(ValueError):
    """An amount that is not a valid money value (names the field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def to_decimal(value: Decimal | int | str, *, field: str = "amount") -> Decimal:
    """Parse a money input exactly. Floats are refused: they cannot hold cents exactly."""
    if isinstance(value, float):  # pragma: no cover - defensive, typed callers never pass it
        raise MoneyError(field, "floats are not accepted for money; send a string like '12.50'")
    try:
        result = value if isinstance(value, Decimal) else Decimal(value)
    except (InvalidOperation, ValueError) as exc:
        raise MoneyError(field, f"not a number: {value!r}") from exc
    if not result.is_finite():
        raise MoneyError(field, "must be a finite number")
    return result


#: the default context's precision and traps, rounding half-up: ``Context.quantize`` is one
#: C call, where ``Decimal.quantize(..., rounding=)`` costs twice as much (its keyword); a
#: schedule row rounds and formats some 30 amounts
_HALF_UP = Context(rounding=ROUND_HALF_UP)
_quantize_half_up = _HALF_UP.quantize


def round_cents(value: Decimal) -> Decimal:
    """Round half-up to the cent (the documented rounding rule of the platform)."""
    return _quantize_half_up(value, CENT)


def money(value: Decimal | int | str, *, field: str = "amount") -> Decimal:
    """Parse and round an amount to the cent."""
    return round_cents(to_decimal(value, field=field))


def fmt(value: Decimal) -> str:
    """JSON representation of an amount: a string with two decimals ("1234.50"), never "-0.00"."""
    rounded = _quantize_half_up(value, CENT)
    return str(rounded) if rounded else "0.00"


# --- The money type of every API and event ------------------------------------------------
#
# On the wire an amount is a JSON *string* of plain digits: at most 16 before the point
# (NUMERIC(18,2) holds 16) and at most 2 after it. No exponent ("1e1"), no blanks, no "+",
# no JSON numbers (a float cannot hold cents exactly; an integer is refused too, so one rule
# covers every amount). A sign exists only where the amount may be negative (an adjustment,
# a balance, a difference): ``SignedMoney``; there "-0" / "-0.00" is refused (zero has no
# sign). Everything else is ``Money``, never negative. Both always serialize with two
# decimals. Python code may also pass a ``Decimal`` (a computed amount): it must be finite,
# in whole cents and of at most 16 integer digits, and a negative zero becomes 0.00.

MONEY_PATTERN = r"^\d{1,16}(\.\d{1,2})?$"
SIGNED_MONEY_PATTERN = r"^-?\d{1,16}(\.\d{1,2})?$"
_MONEY = re.compile(MONEY_PATTERN, re.ASCII)
_SIGNED = re.compile(SIGNED_MONEY_PATTERN, re.ASCII)
MAX_AMOUNT = Decimal("9999999999999999.99")


def parse_money(value: object, *, signed: bool = False, field: str = "amount") -> Decimal:
    """An amount from the wire (a string matching the pattern) or from code (a ``Decimal``).

    Returns the amount quantized to the cent; raises :class:`MoneyError` otherwise.
    """
    if isinstance(value, str):
        if not (_SIGNED if signed else _MONEY).fullmatch(value):
            shape = "an optional '-' and " if signed else ""
            raise MoneyError(
                field,
                f"an amount is a string of {shape}digits with at most 2 decimals, like '1234.50' "
                f"(at most 16 digits before the point{'' if signed else ', not negative'}); "
                f"got {value[:40]!r}",
            )
        amount = Decimal(value)
        if signed and value.startswith("-") and amount == 0:
            raise MoneyError(field, "zero has no sign: send '0.00', not a negative zero")
        return amount.quantize(CENT)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise MoneyError(field, "must be a finite amount")
        if abs(value) > MAX_AMOUNT or value != value.quantize(CENT):
            raise MoneyError(field, "an amount in whole cents of at most 16 digits before the point")
        if value < 0 and not signed:
            raise MoneyError(field, "must not be negative")
        return value.quantize(CENT) if value else ZERO
    if isinstance(value, bool | int | float):
        raise MoneyError(field, "send amounts as strings like '12.50', not JSON numbers")
    raise MoneyError(field, f"an amount is a string like '12.50', not {type(value).__name__}")


_match_unsigned = _MONEY.fullmatch
_match_signed = _SIGNED.fullmatch


def _unsigned(value: Any) -> Decimal:
    # the wire's common case here, as ``parse_money`` takes it (a string of the pattern,
    # quantized to the cent: at most 18 digits, exact in the context's 28), without its call
    # and keyword; everything else (a Decimal, an error's message) by ``parse_money`` itself
    if type(value) is str and _match_unsigned(value):
        return _quantize_half_up(Decimal(value), CENT)
    try:
        return parse_money(value)
    except MoneyError as exc:
        raise ValueError(exc.message) from None


def _signed(value: Any) -> Decimal:
    if type(value) is str and value[:1] != "-" and _match_signed(value):  # a sign: the zero's check
        return _quantize_half_up(Decimal(value), CENT)
    try:
        return parse_money(value, signed=True)
    except MoneyError as exc:
        raise ValueError(exc.message) from None


Money = Annotated[
    Decimal,
    PlainValidator(_unsigned),
    PlainSerializer(fmt, return_type=str),
    WithJsonSchema({"type": "string", "pattern": MONEY_PATTERN, "examples": ["1234.50"]}),
]
"""A non-negative amount: ``"1234.50"`` in JSON, a ``Decimal`` in Python."""

SignedMoney = Annotated[
    Decimal,
    PlainValidator(_signed),
    PlainSerializer(fmt, return_type=str),
    WithJsonSchema({"type": "string", "pattern": SIGNED_MONEY_PATTERN, "examples": ["-12.50", "1234.50"]}),
]
"""An amount that may be negative (adjustments, balances, differences): ``"-12.50"``."""


def _positive(value: Decimal) -> Decimal:
    if value <= 0:
        raise ValueError("must be more than zero")
    return value


PositiveMoney = Annotated[Money, AfterValidator(_positive)]
"""A :data:`Money` amount above zero (a bond, a draw, a refund)."""

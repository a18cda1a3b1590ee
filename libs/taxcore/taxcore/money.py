"""Money: ``Decimal`` amounts in a currency, rounded half-up to the cent.

The platform never uses ``float`` for money. Amounts are rounded explicitly,
half-up to the cent, at the point where the statute's amount exists (a
declaration total, a penalty, a fund share) and nowhere else, so intermediate
products (a rate times a base) keep full precision until then.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

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


def round_cents(value: Decimal) -> Decimal:
    """Round half-up to the cent (the documented rounding rule of the platform)."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def money(value: Decimal | int | str, *, field: str = "amount") -> Decimal:
    """Parse and round an amount to the cent."""
    return round_cents(to_decimal(value, field=field))


def fmt(value: Decimal) -> str:
    """JSON representation of an amount: a string with two decimals ("1234.50")."""
    return str(round_cents(value))

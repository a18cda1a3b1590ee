"""What a person types into the forms, read the way the services will accept it."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from web.i18n import N_

AMOUNT_HINT = N_("Enter an amount in dollars and cents, like 1234.50.")


def dollars(raw: str) -> Decimal | None:
    """A positive amount in dollars and cents (``1,234.50``, ``$12``), or None."""
    try:
        value = Decimal(raw.strip().replace(",", "").removeprefix("$"))
    except InvalidOperation:
        return None
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or exponent < -2 or not Decimal(0) < value < Decimal("1e14"):
        return None
    return value

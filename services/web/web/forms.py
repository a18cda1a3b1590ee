"""What a person types into the forms, read the way the services will accept it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from web.backend import ApiError
from web.core import redirect
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


async def act(
    request: Request,
    call: Callable[[], Awaitable[Any]],
    page: Callable[[dict[str, str], int], Awaitable[Response]],
    done: str | Callable[[Any], str],
    fields: dict[str, str] | None = None,
) -> Response:
    """Post a form's action (``call``) and go to ``done`` (or the address ``done`` makes of
    the service's answer); when the service refuses it (403, 409, 422), show the ``page``
    again with the service's reasons on their fields (the form's names for the body fields
    the service names, by ``fields``, where they differ)."""
    try:
        answer = await call()
    except ApiError as exc:
        if exc.status not in (403, 409, 422):
            raise
        named = {(fields or {}).get(k, k): v for k, v in exc.field_errors().items()}
        return await page({**named, "_form": exc.detail}, exc.status)
    return redirect(done if isinstance(done, str) else done(answer), request)

"""Tax account numbers (PR §26: every lodging obtains a number from the agency).

The statute leaves the format to regulation. Roomtax's documented format is
``<JUR>-<serial>-<check>``: the jurisdiction code, a seven-digit serial assigned
in registration order per jurisdiction, and a Luhn (mod 10) check digit over
the serial, e.g. ``PR-0000001-8``. The check digit catches one mistyped digit
and most transpositions when a filer keys the number by hand.
"""

from __future__ import annotations

import re

ACCOUNT_RE = re.compile(r"^(?P<jur>[A-Z]{2})-(?P<serial>\d{7})-(?P<check>\d)$")


def luhn_digit(digits: str) -> int:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return (10 - total % 10) % 10


def format_account(jurisdiction: str, serial: int) -> str:
    body = f"{serial:07d}"
    return f"{jurisdiction}-{body}-{luhn_digit(body)}"


def is_valid_account(value: str) -> bool:
    m = ACCOUNT_RE.match(value)
    return bool(m) and luhn_digit(m["serial"]) == int(m["check"])  # type: ignore[index]

"""Webhook signatures, Stripe-style: ``Roomtax-Signature: t=<unix time>,v1=<hex HMAC>``.

``v1`` is HMAC-SHA256 keyed by the subscription's secret over ``f"{t}.{body}"`` (the raw
request body, bytes as sent). A receiver recomputes it with its secret, compares in
constant time, and refuses a timestamp more than :data:`TOLERANCE_SECONDS` from its own
clock (a replayed old request). During a secret rotation the header carries a ``v1``
for the new secret and one for the previous secret: any match is valid.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Sequence

HEADER = "Roomtax-Signature"
TOLERANCE_SECONDS = 300
SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A signing secret: 32 random bytes, URL-safe, with a recognisable prefix."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def sign(secrets_: Sequence[str], body: bytes, *, timestamp: int | None = None) -> str:
    """The header value for ``body`` signed by every secret in ``secrets_`` (new first)."""
    t = int(time.time()) if timestamp is None else timestamp
    return ",".join([f"t={t}", *(f"v1={signature(s, t, body)}" for s in secrets_)])


class SignatureError(ValueError):
    """The header is missing, malformed, too old, or no signature matches."""


def verify(
    header: str, body: bytes, secret: str, *, tolerance: int = TOLERANCE_SECONDS, now: float | None = None
) -> int:
    """Check a ``Roomtax-Signature`` header; returns its timestamp or raises SignatureError."""
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    stamps = [v for k, v in parts if k.strip() == "t"]
    candidates = [v.strip() for k, v in parts if k.strip() == "v1"]
    if len(stamps) != 1 or not stamps[0].strip().isdigit() or not candidates:
        raise SignatureError("malformed signature header")
    t = int(stamps[0])
    if abs((time.time() if now is None else now) - t) > tolerance:
        raise SignatureError("timestamp outside the tolerance")
    expected = signature(secret, t, body)
    if not any(hmac.compare_digest(expected, c) for c in candidates):
        raise SignatureError("no signature matches")
    return t

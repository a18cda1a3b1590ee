"""Passwords are hashed with Argon2id (argon2-cffi, RFC 9106 low-memory profile)."""

from __future__ import annotations

import functools
import hashlib
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

_hasher = PasswordHasher()  # argon2id, t=3, m=64 MiB, p=4: the library's RFC 9106 defaults


@functools.cache
def _dummy() -> str:
    """Verified when the e-mail is unknown, so that answer takes as long as a wrong
    password; made on first use, not at import (it costs what a sign-in costs)."""
    return _hasher.hash(secrets.token_urlsafe(16))


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password: str, stored: str | None) -> bool:
    try:
        return _hasher.verify(stored or _dummy(), password) and stored is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    """True when the hash was made with weaker parameters than today's."""
    return _hasher.check_needs_rehash(stored)


def new_refresh_secret() -> str:
    return secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """Refresh secrets are random 256-bit values: a plain SHA-256 is enough to store them."""
    return hashlib.sha256(secret.encode()).hexdigest()

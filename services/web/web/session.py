"""The browser's session: an encrypted, signed cookie (Fernet: AES-128-CBC + HMAC-SHA256).

The cookie holds the session id, and once a person signs in, their access token and
the registry session's refresh token: it never leaves the server readable (httpOnly,
encrypted), so the web app needs no database and scales by replicas. The session id
is new at every sign-in (no fixation) and the CSRF token is derived from it, so a token
seen before sign-in is worthless after.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from cryptography.fernet import Fernet, InvalidToken


@dataclass
class Person:
    user_id: str
    name: str
    email: str
    role: str
    operator_id: str | None
    facilitator_id: str | None

    @property
    def is_agency(self) -> bool:
        return self.role in ("agency-admin", "agency-officer", "agency-auditor", "dashboard")


@dataclass
class Session:
    sid: str = field(default_factory=lambda: secrets.token_hex(16))
    person: Person | None = None
    access_token: str | None = None
    access_expires: float = 0.0
    refresh_token: str | None = None
    checked_at: float = 0.0
    #: an OpenID Connect sign-in under way (web.oidc): its state, nonce, PKCE verifier, next page
    oidc: dict[str, str] | None = None

    def signed_in(self, person: Person, *, access: str, expires_in: int, refresh: str) -> Session:
        """A brand-new session (new id) for a person who just signed in."""
        now = time.time()
        return Session(
            person=person,
            access_token=access,
            access_expires=now + expires_in,
            refresh_token=refresh,
            checked_at=now,
        )


class SessionCodec:
    def __init__(self, secret: str, *, max_age: int) -> None:
        key = hashlib.sha256(b"roomtax-web-session:" + secret.encode()).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(key))
        self._csrf_key = hashlib.sha256(b"roomtax-web-csrf:" + secret.encode()).digest()
        self.max_age = max_age

    def dumps(self, session: Session) -> str:
        return self._fernet.encrypt(json.dumps(asdict(session)).encode()).decode()

    def loads(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        try:
            raw: dict[str, Any] = json.loads(self._fernet.decrypt(cookie.encode(), ttl=self.max_age))
        except (InvalidToken, ValueError):
            return None
        person = raw.pop("person", None)
        try:
            return Session(**raw, person=Person(**person) if person else None)
        except TypeError:
            return None

    def csrf_token(self, session: Session) -> str:
        return hmac.new(self._csrf_key, session.sid.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, session: Session, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(self.csrf_token(session), token or "")

"""Webhook signing secrets sealed at rest.

A subscription's signing secret must be readable by notify (it signs every delivery with
it), so it cannot be hashed like a password; it is encrypted instead, with Fernet from
``cryptography`` (AES-128-CBC and HMAC-SHA256, a timestamped token). A copy of the
database alone (a backup, a read replica, a leaked dump) then forges no webhook: the keys
live in the deployment's secret store (``NOTIFY_WEBHOOK_SECRET_KEYS``), not in the
database.

The setting holds one or more keys, newest first, separated by commas: the newest seals,
any opens. Rotating the key is adding a new one in front, restarting, and dropping the
old one once :func:`notify.webhooks.service.reseal_secrets` (run at every worker start)
has sealed every stored secret again with the newest. A secret written before sealing
existed (it starts with ``whsec_``) still opens, and the same run seals it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from notify.webhooks.signing import SECRET_PREFIX

#: the development key: public on purpose (a fresh clone runs with no set-up); the
#: settings refuse it in production
DEV_WEBHOOK_SECRET_KEY = "D1J--RAVSsGNkH7hp2TXqKFcjD8jU8UjbwBv_pX1uO8="


class SecretBox:
    """Seals and opens signing secrets with the configured keys (newest first)."""

    def __init__(self, keys: Sequence[str]) -> None:
        if not keys:
            raise ValueError("at least one key is needed")
        self._newest = Fernet(keys[0])
        self._all = MultiFernet([Fernet(k) for k in keys])

    @classmethod
    def from_setting(cls, value: str) -> SecretBox:
        """``"newest,older,…"`` (whitespace around a key is ignored)."""
        return cls([k.strip() for k in value.split(",") if k.strip()])

    def seal(self, secret: str) -> str:
        return self._newest.encrypt(secret.encode()).decode()

    def open(self, stored: str) -> str:
        """The secret itself (``InvalidToken`` if no configured key sealed it)."""
        if stored.startswith(SECRET_PREFIX):  # stored before secrets were sealed
            return stored
        return self._all.decrypt(stored.encode()).decode()

    def resealed(self, stored: str) -> str | None:
        """``stored`` sealed with the newest key, or None when it already is."""
        if stored.startswith(SECRET_PREFIX):
            return self.seal(stored)
        try:
            self._newest.decrypt(stored.encode())
        except InvalidToken:
            return self._all.rotate(stored.encode()).decode()
        return None


def check_keys(value: str) -> None:
    """ValueError naming the first key that is not a Fernet key (32 url-safe base64 bytes)."""
    keys = [k.strip() for k in value.split(",") if k.strip()]
    if not keys:
        raise ValueError("NOTIFY_WEBHOOK_SECRET_KEYS holds no key")
    for i, key in enumerate(keys):
        try:
            Fernet(key)
        except ValueError as exc:
            raise ValueError(f"NOTIFY_WEBHOOK_SECRET_KEYS key {i + 1} is not a Fernet key: {exc}") from None


@lru_cache(maxsize=8)
def box_for(keys: str) -> SecretBox:
    """The box for a settings value (built once per process and value)."""
    return SecretBox.from_setting(keys)

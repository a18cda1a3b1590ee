"""Signing secrets sealed at rest: only the keys open them; rotation and old rows seal again."""

from __future__ import annotations

import httpx
import pytest
from cryptography.fernet import Fernet, InvalidToken
from notify_factories import DB, scalar, webhook
from sqlalchemy import text

from notify.settings import NotifySettings
from notify.webhooks import signing
from notify.webhooks.sealing import DEV_WEBHOOK_SECRET_KEY, SecretBox
from notify.webhooks.service import reseal_secrets
from servicekit.testing import auth

OP = auth("operator", operator_id="op-seal")
FILED = "roomtax.filing.declaration.filed.v1"
OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()


class TestSecretBox:
    def test_seals_with_the_newest_key_and_opens_with_any(self) -> None:
        sealed_old = SecretBox([OLD]).seal("whsec_a")
        both = SecretBox([NEW, OLD])
        assert both.open(sealed_old) == "whsec_a"
        assert SecretBox([NEW]).open(both.seal("whsec_b")) == "whsec_b"
        with pytest.raises(InvalidToken):
            SecretBox([NEW]).open(sealed_old)

    def test_resealed_only_what_is_not_under_the_newest_key(self) -> None:
        both = SecretBox([NEW, OLD])
        assert both.resealed(both.seal("whsec_c")) is None
        moved = both.resealed(SecretBox([OLD]).seal("whsec_c"))
        assert moved is not None
        assert SecretBox([NEW]).open(moved) == "whsec_c"
        legacy = both.resealed("whsec_plain")
        assert legacy is not None
        assert SecretBox([NEW]).open(legacy) == "whsec_plain"
        assert both.open("whsec_plain") == "whsec_plain"  # stored before sealing

    def test_settings_check_every_key(self) -> None:
        assert NotifySettings(webhook_secret_keys=f"{NEW}, {OLD}").webhook_secret_keys == f"{NEW}, {OLD}"
        with pytest.raises(ValueError, match="key 2 is not a Fernet key"):
            NotifySettings(webhook_secret_keys=f"{NEW},nope")
        # the development key in production: test_targets.py::TestProductionSettings


class TestAtRest:
    async def test_the_database_holds_no_secret(self, client: httpx.AsyncClient, db: DB) -> None:
        hook = await webhook(client, OP, "http://127.0.0.1:9/sealed", FILED)
        stored = await scalar(db, "SELECT secret FROM subscriptions WHERE id = :i", i=hook["id"])
        assert not stored.startswith(signing.SECRET_PREFIX)
        assert hook["secret"] not in stored
        assert SecretBox([DEV_WEBHOOK_SECRET_KEY]).open(stored) == hook["secret"]
        # deliveries sign with the opened secret: test_delivery.py verifies their signatures

    async def test_a_row_from_before_sealing_and_a_retired_key_are_sealed_again(
        self, client: httpx.AsyncClient, db: DB, notify_settings: NotifySettings
    ) -> None:
        legacy = await webhook(client, OP, "http://127.0.0.1:9/legacy", FILED)
        retired = await webhook(client, OP, "http://127.0.0.1:9/retired", FILED)
        async with db() as session, session.begin():
            await session.execute(
                text("UPDATE subscriptions SET secret = :s WHERE id = :i"),
                {"s": legacy["secret"], "i": legacy["id"]},
            )
        keys = f"{NEW},{DEV_WEBHOOK_SECRET_KEY}"
        rotated = notify_settings.model_copy(update={"webhook_secret_keys": keys})
        stored_columns = await scalar(db, "SELECT count(secret) + count(previous_secret) FROM subscriptions")
        async with db() as session, session.begin():
            changed = await reseal_secrets(session, settings=rotated)
        assert changed == stored_columns  # every one was under the dev key or in the clear
        newest = SecretBox([NEW])
        for made in (legacy, retired):
            stored = await scalar(db, "SELECT secret FROM subscriptions WHERE id = :i", i=made["id"])
            assert newest.open(stored) == made["secret"]
        async with db() as session, session.begin():
            assert await reseal_secrets(session, settings=rotated) == 0
            restore = {"webhook_secret_keys": f"{DEV_WEBHOOK_SECRET_KEY},{NEW}"}
            back = notify_settings.model_copy(update=restore)
            assert await reseal_secrets(session, settings=back) == stored_columns  # for the other tests

"""SSRF: a webhook never reaches loopback, private, link-local or reserved addresses."""

from __future__ import annotations

import pytest
from notify_factories import production_settings

from notify.webhooks.sealing import DEV_WEBHOOK_SECRET_KEY
from notify.webhooks.targets import TargetRefused, check_target


class TestCheckTarget:
    @pytest.mark.parametrize(
        ("url", "address"),
        [
            ("https://127.0.0.1/x", "127.0.0.1"),
            ("https://10.1.2.3/x", "10.1.2.3"),
            ("https://172.16.0.1/x", "172.16.0.1"),
            ("https://192.168.1.1/x", "192.168.1.1"),
            ("https://169.254.169.254/latest/meta-data", "169.254.169.254"),
            ("https://100.64.0.1/x", "100.64.0.1"),
            ("https://0.0.0.0/x", "0.0.0.0"),
            ("https://[::1]/x", "::1"),
            ("https://[fd00::1]/x", "fd00::1"),
            ("https://[::ffff:127.0.0.1]/x", "::ffff:127.0.0.1"),
            ("https://224.0.0.1/x", "224.0.0.1"),
        ],
    )
    async def test_private_literals_refused(self, url: str, address: str) -> None:
        with pytest.raises(TargetRefused, match=f"private or reserved address \\({address}\\)"):
            await check_target(url, require_https=True, allow_private=False)

    async def test_a_name_resolving_to_loopback_is_refused(self) -> None:
        with pytest.raises(TargetRefused, match="private or reserved address"):
            await check_target("https://localhost:8443/x", require_https=True, allow_private=False)

    async def test_public_literal_accepted(self) -> None:
        await check_target("https://93.184.216.34/hooks", require_https=True, allow_private=False)

    async def test_private_allowed_by_the_setting(self) -> None:
        await check_target("http://127.0.0.1:9/hooks", require_https=False, allow_private=True)

    @pytest.mark.parametrize(
        ("url", "why"),
        [
            ("http://93.184.216.34/x", "must use https"),
            ("ftp://93.184.216.34/x", "must be an http or https URL"),
            ("https:///x", "has no host"),
            ("https://user:pw@93.184.216.34/x", "must not carry credentials"),
            ("https://93.184.216.34:99999/x", "not a valid URL"),
            ("https://93.184.216.34/x#frag", "must not carry a fragment"),
        ],
    )
    async def test_shape(self, url: str, why: str) -> None:
        with pytest.raises(TargetRefused, match=why):
            await check_target(url, require_https=True, allow_private=True)


class TestProductionSettings:
    def test_https_forced_in_production(self) -> None:
        settings = production_settings(webhook_require_https=False)
        assert settings.webhook_require_https is True

    def test_private_targets_refused_in_production(self) -> None:
        with pytest.raises(ValueError, match="ALLOW_PRIVATE_TARGETS is refused in production"):
            production_settings(webhook_allow_private_targets=True)

    def test_the_development_sealing_key_is_refused_in_production(self) -> None:
        with pytest.raises(ValueError, match="NOTIFY_WEBHOOK_SECRET_KEYS must be set outside development"):
            production_settings(webhook_secret_keys=DEV_WEBHOOK_SECRET_KEY)

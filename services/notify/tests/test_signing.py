"""The webhook signature (Stripe-style), against vectors computed with openssl:
``printf '%s' '1764590400.{"id":"e1"}' | openssl dgst -sha256 -hmac whsec_test``."""

from __future__ import annotations

import pytest

from notify.webhooks import signing

BODY = b'{"id":"e1"}'
T = 1764590400
NEW = "798bf882617da30fa0b641dbb737ed10b8a11c69bd892501a160b10ec464a5be"
OLD = "742de4972a0ac552c1ecce9f6811b4ca53e6c8345e5a23a23e2faac784a00399"


class TestSign:
    def test_header_matches_openssl(self) -> None:
        assert signing.sign(["whsec_test"], BODY, timestamp=T) == f"t={T},v1={NEW}"

    def test_rotation_signs_with_both_secrets_new_first(self) -> None:
        assert signing.sign(["whsec_test", "whsec_old"], BODY, timestamp=T) == f"t={T},v1={NEW},v1={OLD}"

    def test_new_secret_is_prefixed_and_random(self) -> None:
        a, b = signing.new_secret(), signing.new_secret()
        assert a.startswith("whsec_")
        assert len(a) == 6 + 43
        assert a != b


class TestVerify:
    def test_valid_within_tolerance(self) -> None:
        assert signing.verify(f"t={T},v1={NEW}", BODY, "whsec_test", now=T + 300) == T

    def test_either_secret_of_a_rotation_verifies(self) -> None:
        header = f"t={T},v1={NEW},v1={OLD}"
        assert signing.verify(header, BODY, "whsec_old", now=T) == T

    def test_too_old(self) -> None:
        with pytest.raises(signing.SignatureError, match="tolerance"):
            signing.verify(f"t={T},v1={NEW}", BODY, "whsec_test", now=T + 301)

    def test_tampered_body(self) -> None:
        with pytest.raises(signing.SignatureError, match="no signature matches"):
            signing.verify(f"t={T},v1={NEW}", b'{"id":"e2"}', "whsec_test", now=T)

    def test_timestamp_is_signed(self) -> None:
        with pytest.raises(signing.SignatureError, match="no signature matches"):
            signing.verify(f"t={T + 1},v1={NEW}", BODY, "whsec_test", now=T)

    @pytest.mark.parametrize(
        "header", ["", f"v1={NEW}", f"t=abc,v1={NEW}", f"t={T}", f"t={T},t={T},v1={NEW}"]
    )
    def test_malformed(self, header: str) -> None:
        with pytest.raises(signing.SignatureError, match="malformed"):
            signing.verify(header, BODY, "whsec_test", now=T)

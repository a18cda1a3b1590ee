"""The verify-a-signature snippet of docs/webhooks.md works against real signatures."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from notify.webhooks import signing

DOC = Path(__file__).resolve().parents[3] / "docs" / "webhooks.md"


def python_snippet() -> Any:
    found = re.search(r"Python:\n\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert found is not None
    namespace: dict[str, Any] = {}
    exec(found.group(1), namespace)  # noqa: S102 - our own documentation
    return namespace["verify"]


class TestPythonSnippet:
    def test_accepts_both_secrets_of_a_rotation(self) -> None:
        verify = python_snippet()
        header = signing.sign(["whsec_new", "whsec_old"], b'{"id":"e1"}')
        assert verify(header, b'{"id":"e1"}', "whsec_new") is True
        assert verify(header, b'{"id":"e1"}', "whsec_old") is True

    def test_refuses_a_tampered_body_another_secret_and_an_old_timestamp(self) -> None:
        verify = python_snippet()
        header = signing.sign(["whsec_new"], b'{"id":"e1"}')
        assert verify(header, b'{"id":"e2"}', "whsec_new") is False
        assert verify(header, b'{"id":"e1"}', "whsec_other") is False
        old = signing.sign(["whsec_new"], b'{"id":"e1"}', timestamp=int(time.time()) - 301)
        assert verify(old, b'{"id":"e1"}', "whsec_new") is False

"""problem+json in the caller's language: ``Accept-Language: es`` gets Spanish text.

The services write their ``detail`` messages in English with values inside them
("at most 10.00 of credit is refundable on 2026-12-01"). The Spanish catalog
(``locale/es/LC_MESSAGES/problems.po``, gettext through Babel, read when the module
loads) holds each message as a *pattern* whose ``{name}`` placeholders stand for the
values; a detail is matched against the patterns and rebuilt from the Spanish one with
the same values. A value that is itself a catalogued message (the ``{message}`` of
``{field}: {message}``) is translated too. What the catalog lacks stays English: the
``type`` and the JSON pointers, which programs read, never change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from babel import negotiate_locale
from babel.messages.pofile import read_po

CATALOG = Path(__file__).resolve().parent / "locale" / "es" / "LC_MESSAGES" / "problems.po"
LANGUAGES = ("en", "es")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
#: the placeholders whose value is text to translate too; the rest (ids, amounts, fields) stay
TRANSLATED_VALUES = ("message", "what")


def language(accept_language: str | None) -> str:
    """The caller's language among ours (``en`` unless it asks for Spanish)."""
    wanted = [p.split(";")[0].strip().replace("-", "_") for p in (accept_language or "").split(",")]
    found = negotiate_locale([w for w in wanted if w], ["en", "es", "en_US", "es_PR", "es_ES"])
    return "es" if found and found.startswith("es") else "en"


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    spanish: str


def _compile(msgid: str, msgstr: str) -> Pattern:
    parts = _PLACEHOLDER.split(msgid)
    regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts))
    return Pattern(re.compile(f"^{regex}$", re.DOTALL), msgstr)


class PatternCatalog:
    """A gettext catalog of English sentence patterns and their Spanish, applied to text
    that carries values: ``at most {amount} of credit…`` translates ``at most 10.00 of
    credit…`` keeping ``10.00``. ``translated`` names the placeholders whose value is
    itself text to look up (a component's name, a field's message)."""

    def __init__(self, path: Path, translated: tuple[str, ...] = ()) -> None:
        self.path = path
        self.translated = translated

    @cached_property
    def patterns(self) -> tuple[Pattern, ...]:
        """The catalog's patterns, the most specific (longest fixed text) first."""
        with self.path.open("rb") as f:
            catalog = read_po(f, locale="es")
        found = [_compile(str(m.id), str(m.string)) for m in catalog if m.id and m.string]
        fixed = {p.regex.pattern: len(_PLACEHOLDER.sub("", p.regex.pattern)) for p in found}
        return tuple(sorted(found, key=lambda p: -fixed[p.regex.pattern]))

    def spanish(self, text: str, depth: int = 0) -> str:
        """``text`` in Spanish when the catalog has its pattern, else as it is."""
        if depth > 3:
            return text
        for p in self.patterns:
            m = p.regex.match(text)
            if m is not None:
                values = {
                    k: self.spanish(v, depth + 1) if k in self.translated else v
                    for k, v in m.groupdict().items()
                }
                return p.spanish.format(**values)
        return text


PROBLEMS = PatternCatalog(CATALOG, translated=TRANSLATED_VALUES)


def spanish(text: str) -> str:
    """A problem's text in Spanish when the catalog has its pattern, else as it is."""
    return PROBLEMS.spanish(text)


def localize(body: dict[str, Any], lang: str) -> dict[str, Any]:
    """A problem body with its human text (title, detail, each error's detail) in ``lang``."""
    if lang != "es":
        return body
    out = dict(body)
    for key in ("title", "detail"):
        if isinstance(out.get(key), str):
            out[key] = spanish(out[key])
    if isinstance(out.get("errors"), list):
        out["errors"] = [
            {**e, "detail": spanish(str(e.get("detail", "")))} if isinstance(e, dict) else e
            for e in out["errors"]
        ]
    return out

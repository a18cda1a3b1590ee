"""Every string a person reads is in the Spanish catalog; amounts and dates per locale."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from web.i18n import Lang, choose

PACKAGE = Path(__file__).resolve().parents[1]


def marked_messages() -> set[str]:
    found = extract_from_dir(
        str(PACKAGE),
        method_map=[("web/**.py", "python"), ("web/templates/**.html", "jinja2")],
        keywords={"_": None, "N_": None},
    )
    return {msg if isinstance(msg, str) else msg[0] for _file, _line, msg, _comments, _ctx in found}


class TestCatalogs:
    def test_every_marked_message_has_a_spanish_translation(self) -> None:
        with (PACKAGE / "web/locale/es/LC_MESSAGES/messages.po").open("rb") as f:
            catalog = read_po(f)
        translated = {m.id: m.string for m in catalog if m.id}
        messages = marked_messages()
        assert len(messages) > 100
        missing = sorted(m for m in messages if not translated.get(m))
        assert missing == []

    def test_the_english_catalog_lists_the_same_messages(self) -> None:
        with (PACKAGE / "web/locale/en/LC_MESSAGES/messages.po").open("rb") as f:
            ids = {m.id for m in read_po(f) if m.id}
        assert marked_messages() <= ids

    def test_a_translation_keeps_its_placeholders(self) -> None:
        es = Lang("es")
        assert es.gettext("Statement as of %(day)s", day="1") == "Estado de cuenta al 1"
        assert es.gettext("Sign in") == "Iniciar sesión"
        assert Lang("en").gettext("Sign in") == "Sign in"


class TestFormats:
    def test_amounts(self) -> None:
        assert Lang("en").money(Decimal("12345.67")) == "$12,345.67"
        assert Lang("es").money("12345.67") == "$12,345.67"  # es-PR writes dollars as in the US
        assert Lang("en").money("-5.00") == "-$5.00"

    def test_dates_and_months(self) -> None:
        assert Lang("en").date(date(2026, 3, 10)) == "Mar 10, 2026"
        assert Lang("es").date("2026-03-10", "long") == "10 de marzo de 2026"
        assert (Lang("en").month("2026-03"), Lang("es").month("2026-03")) == ("March 2026", "marzo 2026")

    def test_rates(self) -> None:
        assert (Lang("en").percent("0.09"), Lang("es").percent("0.125")) == ("9%", "12.5%")


class TestChoice:
    def test_cookie_then_accept_language_then_english(self) -> None:
        assert choose("es", "en-US") == "es"
        assert choose(None, "es-PR,es;q=0.9,en;q=0.5") == "es"
        assert choose("fr", "fr-FR") == "en"
        assert choose(None, None) == "en"

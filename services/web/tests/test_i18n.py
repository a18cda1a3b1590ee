"""Every string a person reads is in the Spanish catalog; amounts and dates per locale."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from taxcore.parameters import default_tree
from taxcore.rules.balance import AccountHistory, PaymentIn, compute_balance
from web.i18n import Lang, choose, time_zone

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
        # the medium day names its month: CLDR's es_PR medium (12/01/2026) reads as 12 January
        # to a Spanish reader outside Puerto Rico and as 1 December inside it
        assert (Lang("es").date("2026-12-01"), Lang("en").date("2026-12-01")) == ("1 dic 2026", "Dec 1, 2026")
        assert Lang("es").date("2026-09-07") == "7 sep 2026"
        moment = "2026-12-01T18:05:00Z"  # the services send UTC
        zone = "America/Puerto_Rico"
        assert (Lang("es").datetime(moment, zone), Lang("en").datetime(moment, zone)) == (
            "1 dic 2026, 2:05:00\u202fp.\u202fm. AST",  # CLDR's narrow no-break spaces
            "Dec 1, 2026, 2:05:00\u202fPM AST",
        )
        # in July too: Puerto Rico and the Virgin Islands keep no daylight saving time
        assert Lang("en").datetime("2026-07-01T03:30:00+00:00", zone) == "Jun 30, 2026, 11:30:00\u202fPM AST"
        assert Lang("en").datetime("2026-12-01T18:05:00") == "Dec 1, 2026, 6:05:00\u202fPM UTC"  # no zone
        # in a page: the moment in UTC for machines, on the jurisdiction's clock for people
        assert str(Lang("es").moment("2026-12-01T18:05:00.250000+00:00", zone)) == (
            '<time datetime="2026-12-01T18:05:00.250000Z">1 dic 2026, 2:05:00\u202fp.\u202fm. AST</time>'
        )
        assert str(Lang("en").gettext("Posted on %(day)s.", day=Lang("en").moment(moment, zone))) == (
            'Posted on <time datetime="2026-12-01T18:05:00Z">Dec 1, 2026, 2:05:00\u202fPM AST</time>.'
        )

    def test_each_jurisdictions_clock(self) -> None:
        law = default_tree()
        on = date(2026, 12, 1)
        assert [time_zone(law, j, on) for j in ("PR", "VI", None)] == ["America/Puerto_Rico"] * 3
        assert (Lang("en").month("2026-03"), Lang("es").month("2026-03")) == ("March 2026", "marzo 2026")

    def test_rates(self) -> None:
        assert (Lang("en").percent("0.09"), Lang("es").percent("0.125")) == ("9%", "12.5%")


class TestChoice:
    def test_cookie_then_accept_language_then_english(self) -> None:
        assert choose("es", "en-US") == "es"
        assert choose(None, "es-PR,es;q=0.9,en;q=0.5") == "es"
        assert choose("fr", "fr-FR") == "en"
        assert choose(None, None) == "en"


def _late_balance(jurisdiction: str) -> list[str]:
    """The trace of a period filed late and paid in part: the steps a statement shows."""
    history = AccountHistory(
        jurisdiction=jurisdiction,
        period="2025-01",
        due_date=None,
        tax=Decimal("1000.00"),
        impact_fee=Decimal("0"),
        declaration_filed_on=date(2025, 3, 20),
        books_kept=True,
        bond_cover=Decimal("0"),
        deficiency_assessed_on=None,
        payments=[PaymentIn(payment_id="p1", received_on=date(2025, 4, 15), amount=Decimal("400.00"))],
        adjustments=[],
    )
    return [s["description"] for s in compute_balance(history, as_of=date(2025, 6, 30)).trace]


class TestTraceInSpanish:
    @pytest.mark.parametrize("jurisdiction", ["PR", "VI"])
    def test_every_step_of_a_late_period_reads_in_spanish(self, jurisdiction: str) -> None:
        texts = _late_balance(jurisdiction)
        es = Lang("es")
        assert len(texts) > 10
        assert [t for t in texts if es.trace(t) == t] == []
        assert [Lang("en").trace(t) for t in texts] == texts

    def test_the_values_stay_and_the_words_change(self) -> None:
        es = Lang("es")
        texts = _late_balance("PR")
        assert (
            es.trace(texts[0]) == "PR, periodo 2025-01, vence el 2025-02-10; estado de cuenta al 2025-06-30"
        )
        assert "planilla con 38 días de atraso (radicada el 2025-03-20): min(500 x 38, 25000)" in [
            es.trace(t) for t in texts
        ]
        assert (
            es.trace("2025-04-15: 400.00 of payment p1 to tax") == "2025-04-15: 400.00 del pago p1 a impuesto"
        )
        assert es.trace(
            "interest on 600.00 for 76 of the 365 days of the year 2025: 600.00 x 0.10 x 76/365"
        ) == ("intereses sobre 600.00 por 76 de los 365 días del año 2025: 600.00 x 0.10 x 76/365")

    def test_a_declarations_steps(self) -> None:
        es = Lang("es")
        assert es.trace("Rate for a hotel with a casino") == "Tipo para un hotel con casino"
        assert es.trace("Line room_revenue is part of the taxable rate") == (
            "La línea room_revenue forma parte de la base tributable"
        )

"""English and Spanish: gettext catalogs through Babel, amounts and dates per locale.

The catalogs are the ``.po`` files under ``locale/``; they are compiled in memory when
the app starts (``babel.messages.mofile``), so a fresh clone needs no build step and no
compiled file can drift from its source. ``tests/test_i18n.py`` checks that every string
the templates and code mark is translated into Spanish.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

from babel import Locale, negotiate_locale
from babel.dates import format_date, format_datetime
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_currency, format_decimal, format_percent
from babel.support import Translations

from servicekit.problems_i18n import PatternCatalog

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "es")
#: Where formatting comes from: US English, and Puerto Rico's Spanish.
FORMAT_LOCALES = {"en": "en_US", "es": "es_PR"}
LANGUAGE_NAMES = {"en": "English", "es": "Español"}
COOKIE = "lang"


def N_(message: str) -> str:  # noqa: N802 - the gettext convention for "mark, translate later"
    """Marks a message for the catalog where it is defined; it is translated where shown."""
    return message


#: Words the services send that a page shows as they are (statuses), translated here.
API_WORDS = (N_("active"), N_("suspended"), N_("closed"), N_("received"), N_("reversed"))
#: The TADAT indicators' names (``GET /v1/indicators`` ``name``) as a person reads them.
INDICATOR_NAMES: dict[str, str] = {
    "on_time_filing_rate": N_("On-time filing rate"),
    "on_time_payment_rate_by_number": N_("On-time payment rate (by number)"),
    "on_time_payment_rate_by_value": N_("On-time payment rate (by value)"),
    "arrears_to_collections": N_("Arrears as a share of collections"),
    "arrears_older_than_12_months": N_("Arrears older than 12 months"),
    "audit_coverage": N_("Audit coverage"),
    "audit_yield": N_("Additional tax per closed audit"),
    "crosscheck_coverage": N_("Cross-check coverage"),
    "crosscheck_findings_rate": N_("Cross-checks with findings"),
    "disputes_opened": N_("Disputes opened"),
    "median_days_to_decision": N_("Median days to a decision"),
    "median_days_refund_request_to_payment": N_("Median days from refund request to payment"),
}
#: The services' codes for case work (statuses, steps, components, grounds) as a person reads them.
CODE_WORDS: dict[str, str] = {
    "filed": N_("filed"),
    "under_review": N_("under review"),
    "hearing_scheduled": N_("hearing scheduled"),
    "decision_proposed": N_("decision proposed"),
    "decided": N_("decided"),
    "appealed": N_("appealed"),
    "under_appeal": N_("under appeal"),
    "appeal_resolved": N_("appeal resolved"),
    "closed": N_("closed"),
    "requested": N_("requested"),
    "approved": N_("approved"),
    "denied": N_("denied"),
    "paid": N_("paid"),
    "pending": N_("pending"),
    "open": N_("open"),
    "accepted": N_("accepted"),
    "disputed": N_("disputed"),
    "lapsed": N_("lapsed"),
    "bond_draw_requested": N_("bond draw requested"),
    "rejected": N_("rejected"),
    "full": N_("abated in full"),
    "partial": N_("abated in part"),
    "tax": N_("tax"),
    "impact_fee": N_("impact fee"),
    "penalty": N_("penalty"),
    "interest": N_("interest"),
    "fine": N_("fine"),
    "reasonable_cause": N_("reasonable cause"),
    "agency_error": N_("agency error"),
}


def load_catalog(lang: str) -> Translations:
    with (LOCALE_DIR / lang / "LC_MESSAGES" / "messages.po").open("rb") as f:
        catalog = read_po(f, locale=lang)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return Translations(buffer)


CATALOGS: dict[str, Translations] = {lang: load_catalog(lang) for lang in LANGUAGES}
#: taxcore's trace texts (English, with their values) as Spanish patterns: taxcore stays pure
TRACE = PatternCatalog(
    LOCALE_DIR / "es" / "LC_MESSAGES" / "trace.po", translated=("component", "what", "filed", "unit", "mode")
)


def choose(cookie: str | None, accept_language: str | None) -> str:
    if cookie in LANGUAGES:
        return str(cookie)
    wanted = [part.split(";")[0].strip().replace("-", "_") for part in (accept_language or "").split(",")]
    found = negotiate_locale([w for w in wanted if w], list(LANGUAGES) + ["en_US", "es_PR", "es_ES"])
    return found.split("_")[0] if found and found.split("_")[0] in LANGUAGES else "en"


@dataclass(frozen=True)
class Lang:
    """Everything a page needs to speak one language."""

    code: str

    @property
    def locale(self) -> Locale:
        return Locale.parse(FORMAT_LOCALES[self.code])

    def gettext(self, message: str, **values: object) -> str:
        text = CATALOGS[self.code].gettext(message)
        return text % values if values else text

    def trace(self, text: str) -> str:
        """A trace step's text in this language (the values in it unchanged)."""
        return TRACE.spanish(text) if self.code == "es" else text

    def word(self, code: str) -> str:
        """A service's code (``under_review``) as words in this language."""
        return self.gettext(CODE_WORDS.get(code, code))

    def indicator(self, figure: dict[str, str | None]) -> str:
        """An indicator's value as its unit reads (50.00 percent as 50%, an amount in dollars)."""
        value = figure.get("value")
        if value is None:
            return ""
        if figure.get("unit") == "percent":
            return self.percent(Decimal(value) / 100)
        if figure.get("unit") == "amount":
            return self.money(value)
        return self.number(value)

    def indicator_name(self, name: str) -> str:
        return self.gettext(INDICATOR_NAMES.get(name, name))

    def money(self, value: str | Decimal | None, currency: str = "USD") -> str:
        if value is None or value == "":
            return ""
        try:
            amount = Decimal(value)
        except InvalidOperation:
            return str(value)
        return format_currency(amount, currency, locale=self.locale)

    def number(self, value: int | str | Decimal) -> str:
        return format_decimal(Decimal(value), locale=self.locale)

    def percent(self, value: str | Decimal) -> str:
        return format_percent(Decimal(value), locale=self.locale, format="#,##0.##%")

    def date(self, value: str | date | None, form: str = "medium") -> str:
        if not value:
            return ""
        d = date.fromisoformat(value[:10]) if isinstance(value, str) else value
        return format_date(d, form, locale=self.locale)

    def datetime(self, value: str | datetime | None) -> str:
        if not value:
            return ""
        d = datetime.fromisoformat(value) if isinstance(value, str) else value
        return format_datetime(d, "medium", locale=self.locale)

    def month(self, period: str) -> str:
        """``2026-03`` as ``March 2026`` / ``marzo de 2026``."""
        return format_date(date.fromisoformat(period + "-01"), "LLLL y", locale=self.locale)

    def helpers(self) -> dict[str, Callable[..., str]]:
        return {
            "_": self.gettext,
            "word": self.word,
            "trace": self.trace,
            "money": self.money,
            "number": self.number,
            "percent": self.percent,
            "indicator": self.indicator,
            "indicator_name": self.indicator_name,
            "fdate": self.date,
            "fdatetime": self.datetime,
            "fmonth": self.month,
        }

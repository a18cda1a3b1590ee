"""English and Spanish: gettext catalogs through Babel, amounts and dates per locale.

The catalogs are the ``.po`` files under ``locale/``; they are compiled in memory when
the app starts (``babel.messages.mofile``), so a fresh clone needs no build step and no
compiled file can drift from its source. ``tests/test_i18n.py`` checks that every string
the templates and code mark is translated into Spanish.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from babel import Locale, negotiate_locale
from babel.dates import format_date, format_skeleton, format_time, get_datetime_format
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_currency, format_decimal, format_percent
from babel.support import Translations
from markupsafe import Markup, escape

from servicekit.problems_i18n import PatternCatalog
from taxcore.parameters import ParameterTree

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "es")
#: Where formatting comes from: US English, and Puerto Rico's Spanish.
FORMAT_LOCALES = {"en": "en_US", "es": "es_PR"}
LANGUAGE_NAMES = {"en": "English", "es": "Español"}
COOKIE = "lang"
#: the medium day as a CLDR skeleton: the month by its abbreviated name in both languages
MEDIUM_DAY = "yMMMd"
#: ``datetime`` where ``Lang.datetime`` hides it
Instant = datetime
#: a jurisdiction's clock (taxcore ``agency.time_zone``, an IANA name)
TIME_ZONE = "agency.time_zone"
ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


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
#: Each indicator's definition by its ``name``, as assessment words it (``DEFINITIONS`` in
#: ``assessment.indicators.service``) with its ``terms`` as placeholders; dates in the terms are
#: shown per locale. ``test_browser.py`` compares the English with the API's ``definition``.
INDICATOR_DEFINITIONS: dict[str, str] = {
    "on_time_filing_rate": N_(
        "Declarations filed by the due date as a percentage of the declarations expected: every "
        "lodging-period of the window that must file (taxcore obligations.must_file: a month with an "
        "active day after registration) and whose due date is before as_of; a declaration counts when "
        "a filer that meets the lodging's obligation (obligations.declaration_filers) filed it on or "
        "before the due date (PR §28; VI §54(f))."
    ),
    "on_time_payment_rate_by_number": N_(
        "Payments made in full by the due date as a percentage of the payments due: of the "
        "lodging-periods of the window due before as_of with principal (tax and impact fee) assessed, "
        "as the ledger last computed it (declaration, else estimate; case-work decisions included), "
        "those whose principal was collected in full from payments received on or before the due date."
    ),
    "on_time_payment_rate_by_value": N_(
        "Value paid by the due date as a percentage of the value due: over the lodging-periods of the "
        "window due before as_of with principal (tax and impact fee) assessed, as the ledger last "
        "computed it (declaration, else estimate; case-work decisions included), the principal "
        "collected from payments received on or before each due date (at most what was due) over the "
        "principal due."
    ),
    "arrears_to_collections": N_(
        "Core tax arrears at the end of the window (%(end)s: the last day of 'to', or as_of if earlier) "
        "as a percentage of the year's collections: unpaid principal on that day of every period due "
        "before it (written-off periods left out), over everything collected (every component) from "
        "payments received in the 12 months ending that day (%(year_from)s to %(end)s)."
    ),
    "arrears_older_than_12_months": N_(
        "The share of those arrears more than 12 months old: unpaid principal of periods due before "
        "%(year_ago)s, over the arrears."
    ),
    "audit_coverage": N_(
        "Lodgings with an audit opened in the window (%(starts_on)s to %(ends_on)s) as a percentage of "
        "the lodgings registered by the window's last day (%(jurisdiction)s %(section)s)."
    ),
    "audit_yield": N_(
        "Additional tax assessed by the audits closed in the window (%(starts_on)s to %(ends_on)s): the "
        "sum of their notices of audit assessment (taxcore's corrected returns less the filed ones; an "
        "audit closed without a notice adds 0.00), over the number of audits closed."
    ),
    "crosscheck_coverage": N_(
        "Lodging-periods of the window for which an intermediary filed a remittance schedule and whose "
        "operator return was cross-checked against it, as a percentage of the lodging-periods with "
        "intermediary data (%(jurisdiction)s %(section)s)."
    ),
    "crosscheck_findings_rate": N_(
        "Of those cross-checked lodging-periods, the percentage whose latest cross-check recorded a "
        "finding (a lead for risk scores and audits; it raises no tax by itself)."
    ),
    "disputes_opened": N_(
        "Disputes of deficiency notices (cases) opened in the window (PR §13-§15, §34; VI §54(d))."
    ),
    "median_days_to_decision": N_(
        "Median calendar days from a case's opening to its decision, over the cases decided in the window."
    ),
    "median_days_refund_request_to_payment": N_(
        "Median calendar days from a refund's request to its payment, over the refunds paid in the "
        "window (PR §42)."
    ),
}
#: why an indicator has no value (``reason_code``)
INDICATOR_REASONS: dict[str, str] = {
    "nothing_to_measure": N_("nothing to measure in the window (the denominator is zero)"),
    "no_audit_closed": N_("no audit was closed in the window"),
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
    "partially_accepted": N_("partially accepted"),
    "full": N_("abated in full"),
    "partial": N_("abated in part"),
    "tax": N_("tax"),
    "impact_fee": N_("impact fee"),
    "penalty": N_("penalty"),
    "interest": N_("interest"),
    "fine": N_("fine"),
    "reasonable_cause": N_("reasonable cause"),
    "agency_error": N_("agency error"),
    "declined": N_("declined"),
    "granted": N_("granted"),
    "completed": N_("completed"),
    "defaulted": N_("defaulted"),
    # a payment plan (``current``) and its installments (``due``, ``late``: past the due date,
    # in the grace; ``missed``: past the grace)
    "current": N_("current"),
    "due": N_("due"),
    "late": N_("late, in the grace period"),
    "missed": N_("missed"),
    "installment_paid": N_("installment paid"),
    "installment_reopened": N_("installment unpaid again (payment returned)"),
    "reopened": N_("not completed any more (payment returned)"),
    "records_requested": N_("records requested"),
    "finding": N_("finding recorded"),
    "notice": N_("notice issued"),
    "abate": N_("abatement"),
    "reduce": N_("reduction"),
    "cancel": N_("cancellation"),
    "write_off": N_("write-off"),
    "reviewed": N_("reviewed"),
    # lodging classes (taxcore ``lodging.classes``; VI ``rates.by_class``)
    "hotel": N_("hotel"),
    "condohotel": N_("condohotel"),
    "apartment_hotel": N_("apartment hotel"),
    "all_inclusive_hotel": N_("all-inclusive hotel"),
    "hostelry": N_("hostelry"),
    "guesthouse": N_("guesthouse"),
    "inn": N_("inn"),
    "motel": N_("motel"),
    "short_term_rental": N_("short-term rental"),
    "government_recreational_facility": N_("government recreational facility"),
    "apartment_condominium_residence": N_("apartment, condominium or residence"),
    "timeshare": N_("timeshare"),
}
#: An account timeline's entries (``kind``) as a person reads them; ``family.step`` kinds not
#: listed read as the family's sentence with the step's words (``CODE_WORDS``).
TIMELINE_KINDS: dict[str, str] = {
    "notice.issued": N_("Notice issued"),
    "payment.received": N_("Payment received"),
    "payment.reversed": N_("Payment returned"),
    "refund.requested": N_("Refund of credit requested"),
    "proposal.made": N_("Proposal made"),
    "abatement.requested": N_("Abatement requested"),
    "adjustment.reversed": N_("Write-off reversed"),
    "plan.requested": N_("Payment plan requested"),
    "plan.granted": N_("Payment plan granted"),
    "audit.opened": N_("Audit opened"),
    "crosscheck.cleared": N_("Cross-check without findings"),
    "crosscheck.finding": N_("Cross-check finding"),
}
TIMELINE_FAMILIES: dict[str, str] = {
    "case": N_("Case: %(step)s"),
    "refund": N_("Refund: %(step)s"),
    "proposal": N_("Proposal: %(step)s"),
    "abatement": N_("Abatement: %(step)s"),
    "adjustment": N_("Adjustment: %(step)s"),
    "plan": N_("Payment plan: %(step)s"),
    "audit": N_("Audit: %(step)s"),
}
#: taxcore's finding codes (``taxcore.rules.check.FINDING_CODES``) with the line and amounts
FINDINGS: dict[str, str] = {
    "arithmetic": N_("Arithmetic error on %(line)s: declared %(declared)s, the lines come to %(computed)s."),
    "inconsistent_entries": N_(
        "Inconsistent entries on %(line)s: declared %(declared)s, computed %(computed)s."
    ),
    "omission": N_("Omission on %(line)s: the evidence is missing, so %(declared)s is not allowed."),
    "deduction_beyond_limit": N_(
        "Deduction beyond the limit on %(line)s: %(declared)s claimed, %(computed)s allowed."
    ),
    "tax_understated": N_("Declared %(line)s %(declared)s; the declaration's lines come to %(computed)s."),
    "tax_overstated": N_("Declared %(line)s %(declared)s; the declaration's lines come to %(computed)s."),
}
#: the lines a finding names, other than the money lines (``web.lines.LABELS``)
FINDING_LINES: dict[str, str] = {
    "tax": N_("tax"),
    "impact_fee": N_("impact fee"),
    "taxable_base": N_("taxable base"),
    "total": N_("total"),
    "exempt": N_("exemptions"),
}
#: assessment's codes for a collection hold (``collection_hold_reason.code``)
HOLDS: dict[str, str] = {
    "under_appeal": N_("the decision is under appeal"),
    "not_decided": N_("the dispute is not decided"),
    "appeal_term": N_("the term to appeal runs until %(day)s"),
    "written_off": N_("written off from %(day)s"),
}

#: The distribution service's accounts (``fund:<code>``, ``pending:PR``…) as a person reads them
#: in Spanish; English shows the name the service gives (taxcore's parameter text).
FUND_NAMES: dict[str, str] = {
    "pr_bank_special_account": N_("Bank special account for the Convention Center District Authority"),
    "pr_company_administration": N_("Tourism Company general funds (administration of the tax)"),
    "pr_treasury_general_fund": N_("General Fund of the Department of the Treasury"),
    "pr_convention_bureau": N_("Tourism Company general funds for the Convention Center Bureau"),
    "pr_remainder": N_("Remainder after §31(B)(i)-(iii)"),
    "vi_tourism_advertising_revolving_fund": N_("Tourism Advertising Revolving Fund"),
    "vi_tarf_virgin_islands_advertising": N_("Tourism Advertising Revolving Fund: the Virgin Islands"),
    "vi_tarf_st_john_advertising": N_("Tourism Advertising Revolving Fund: St. John"),
    "vi_tarf_st_croix_advertising": N_("Tourism Advertising Revolving Fund: St. Croix"),
    "vi_tarf_marine_industry_advertising": N_("Tourism Advertising Revolving Fund: the marine industry"),
    "vi_agriculture_revolving_fund": N_("Agriculture Revolving Fund"),
    "vi_sports_tourism": N_("Development and promotion of sports tourism"),
    "vi_department_of_education": N_("Department of Education (inter-scholastic competitions)"),
    "vi_sports_parks_recreation": N_("Department of Sports, Parks and Recreation"),
    "vi_general_fund": N_("General Fund"),
}
ACCOUNT_KINDS: dict[str, str] = {
    "pending": N_("Collections pending distribution"),
    "other": N_("Penalties, interest and fines collected (not distributed by the statute)"),
    "suspense": N_("Suspense: collections with no statutory destination"),
}


def time_zone(law: ParameterTree, jurisdiction: str | None, on: date) -> str | None:
    """The IANA zone of ``jurisdiction``'s clock on ``on``; without a jurisdiction (a page about
    several), the zone every jurisdiction shares, if they do; None (UTC) otherwise."""
    codes = [jurisdiction] if jurisdiction else law.jurisdictions()
    zones = {str(law.value(j, TIME_ZONE, on)) if law.has(j, TIME_ZONE) else None for j in codes}
    return zones.pop() if len(zones) == 1 else None


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
        """The message in this language with ``values``; markup among the values (a ``<time>``)
        stays markup, and the rest is escaped."""
        text = CATALOGS[self.code].gettext(message)
        if any(isinstance(v, Markup) for v in values.values()):
            return Markup(escape(text)) % values
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

    def indicator_part(self, figure: dict[str, Any], part: str) -> str:
        """An indicator's ``numerator`` or ``denominator`` as its ``<part>_unit`` reads: money
        per locale (``$13,500.00``), a count as an integer (``1,234``); as it came without a unit."""
        value = figure.get(part)
        if value is None or value == "":
            return ""
        unit = figure.get(f"{part}_unit")
        if unit == "amount":
            return self.money(value)
        if unit == "count":
            return self.number(Decimal(value).to_integral_value())
        return str(value)

    def account_name(self, account: str, name: str) -> str:
        """A distribution account's name: the service's in English, by its code in Spanish."""
        kind, _, code = account.partition(":")
        message = FUND_NAMES.get(code) if kind == "fund" else ACCOUNT_KINDS.get(kind)
        return self.gettext(message) if message and self.code != "en" else name

    def timeline(self, entry: dict[str, Any]) -> str:
        """A timeline entry: the service's summary in English, by its ``kind`` in Spanish."""
        kind = str(entry.get("kind", ""))
        family, _, step = kind.partition(".")
        if self.code == "en" or (kind not in TIMELINE_KINDS and family not in TIMELINE_FAMILIES):
            return str(entry.get("summary", ""))
        if kind in TIMELINE_KINDS:
            text = self.gettext(TIMELINE_KINDS[kind])
        else:
            text = self.gettext(TIMELINE_FAMILIES[family], step=self.word(step))
        note = entry.get("note")  # what a person wrote stays as written
        return f"{text}: {note}" if note else text

    def finding(self, found: Any) -> str:
        """A declaration's finding (the API's, or taxcore's in a preview): taxcore's message in
        English, by its code in Spanish."""
        finding = found if isinstance(found, dict) else found.model_dump(mode="json")
        code = str(finding.get("code", ""))
        if self.code == "en" or code not in FINDINGS:
            return str(finding.get("message", ""))
        from web.lines import LABELS  # web.lines marks its labels with this module's N_

        line = str(finding.get("line", ""))
        base = line.split(".")[0].split("[")[0]
        label = FINDING_LINES.get(base) or LABELS.get(base)
        return self.gettext(
            FINDINGS[code],
            line=self.gettext(label) if label else line,
            declared=self.money(finding.get("declared")) or "—",
            computed=self.money(finding.get("computed")) or "—",
        )

    def hold(self, case: dict[str, Any]) -> str:
        """Why collection waits: the service's text in English, by its code in Spanish."""
        reason = case.get("collection_hold_reason") or {}
        code = reason.get("code")
        if self.code == "en" or code not in HOLDS:
            return str(case.get("collection_hold") or "")
        return (
            self.gettext(HOLDS[code], day=self.date(reason["on"], "long"))
            if reason.get("on")
            else self.gettext(HOLDS[code])
        )

    def indicator_name(self, name: str) -> str:
        return self.gettext(INDICATOR_NAMES.get(name, name))

    def indicator_definition(self, figure: dict[str, Any]) -> str:
        """What an indicator counts, by its ``name`` and ``terms`` (dates per locale); the API's
        English ``definition`` for an indicator this app does not know yet."""
        message = INDICATOR_DEFINITIONS.get(str(figure.get("name")))
        if message is None:
            return str(figure.get("definition") or "")
        terms = {
            k: self.date(v) if ISO_DAY.fullmatch(str(v)) else str(v)
            for k, v in (figure.get("terms") or {}).items()
        }
        return self.gettext(message, **terms)

    def indicator_reason(self, figure: dict[str, Any]) -> str:
        """Why an indicator has no value, by its ``reason_code``; else the API's ``reason``."""
        message = INDICATOR_REASONS.get(str(figure.get("reason_code")))
        return self.gettext(message) if message else str(figure.get("reason") or "")

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
        """A day as this language writes it; ``medium`` names the month (``Dec 1, 2026``,
        ``1 dic 2026``): CLDR's medium form for es_PR is ``12/01/2026``, which a reader of
        Spanish elsewhere takes for the 12th of January."""
        if not value:
            return ""
        d = date.fromisoformat(value[:10]) if isinstance(value, str) else value
        if form == "medium":
            return format_skeleton(MEDIUM_DAY, d, locale=self.locale)
        return format_date(d, form, locale=self.locale)

    def datetime(self, value: str | datetime | None, zone: str | None = None) -> str:
        """A moment on the clock of ``zone`` (an IANA name; UTC without one), named: the day as
        :meth:`date` writes it, the time (CLDR's medium forms), then the zone's abbreviation
        (``AST``: CLDR's Spanish names Puerto Rico's zone a summer time it does not keep).
        A moment without an offset is UTC (the services send UTC)."""
        if not value:
            return ""
        d = datetime.fromisoformat(value) if isinstance(value, str) else value
        local = (d if d.tzinfo else d.replace(tzinfo=UTC)).astimezone(ZoneInfo(zone or "UTC"))
        pattern = get_datetime_format("medium", locale=self.locale)
        day, time = (
            format_skeleton(MEDIUM_DAY, local, locale=self.locale),
            format_time(local, "medium", locale=self.locale),
        )
        return f"{str(pattern).replace('{1}', day).replace('{0}', time)} {local.tzname()}"

    def moment(self, value: str | Instant | None, zone: str | None = None) -> Markup:
        """:meth:`datetime` in a ``<time>`` whose ``datetime`` is the moment in UTC (ISO 8601)."""
        if not value:
            return Markup("")
        d = Instant.fromisoformat(value) if isinstance(value, str) else value
        utc = (d if d.tzinfo else d.replace(tzinfo=UTC)).astimezone(UTC)
        return Markup('<time datetime="{}">{}</time>').format(
            utc.isoformat().replace("+00:00", "Z"), self.datetime(utc, zone)
        )

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
            "indicator_part": self.indicator_part,
            "indicator_definition": self.indicator_definition,
            "indicator_reason": self.indicator_reason,
            "account_name": self.account_name,
            "timeline_text": self.timeline,
            "finding": self.finding,
            "hold": self.hold,
            "fdate": self.date,
            "fmonth": self.month,
        }

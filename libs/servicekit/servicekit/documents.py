"""Official documents: HTML/CSS templates (Jinja2) rendered to tagged PDF (WeasyPrint).

Every service prints its documents (receipts, notices, decision letters, statements of
account) through one :class:`Documents` renderer. The chassis owns what every document
shares, once: the page (US Letter, page numbers "1 / 2" in the document's language), the
agency's letterhead from the jurisdiction's parameters (``agency.name``,
``agency.letterhead``), the addressee block (taxpayer's name and mailing address), how and
where to pay (``agency.how_to_pay``), the verification QR code (segno) and the amounts and
dates formatted per locale (Babel). A service adds its templates (``<package>/templates/
documents/*.html``, each extending ``documents/base.html``) and its sentences in both
languages (:class:`Catalog`).

The PDF is PDF/UA-1 (WeasyPrint's tagged variant: structure tags, the document language
and its title in the metadata), so a screen reader can read it.

Language: English or Spanish. The lodging's preferred language (a registry field) wins;
without one, the jurisdiction's ``agency.default_language`` (PR: Spanish).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal, cast

import jinja2
import segno
from babel.dates import format_date, format_datetime
from babel.numbers import format_currency
from weasyprint import HTML

from taxcore.errors import TaxcoreError
from taxcore.parameters import ParameterTree

Language = Literal["en", "es"]
LANGUAGES: tuple[Language, ...] = ("en", "es")
#: Babel locales: Puerto Rico's Spanish and the United States' English (amounts in USD)
LOCALES: dict[Language, str] = {"en": "en_US", "es": "es_PR"}
_BY_NAME: dict[str, Language] = {"en": "en", "es": "es"}

_CODE_CHARS = re.compile(r"[^A-Z2-7]")


class MissingTranslation(LookupError):
    """A sentence of a document has no translation in the document's language."""


@dataclass(frozen=True)
class Catalog:
    """A document's sentences: the English text is the key, ``es`` its Spanish translation.

    A sentence may hold ``{name}`` fields, filled by :meth:`text`'s keyword arguments.
    Spanish without a translation is an error, never English in a Spanish letter.
    """

    es: Mapping[str, str]

    def text(self, language: Language, english: str, **fields: object) -> str:
        if language == "en":
            found = english
        else:
            try:
                found = self.es[english]
            except KeyError:
                raise MissingTranslation(f"no Spanish for {english!r}") from None
        return found.format(**fields) if fields else found

    def merged(self, other: Catalog) -> Catalog:
        return Catalog(es={**self.es, **other.es})


#: sentences of the chassis' own template (documents/base.html)
BASE_CATALOG = Catalog(
    es={
        "Page": "Página",
        "of": "de",
        "Tax account": "Cuenta contributiva",
        "How and where to pay": "Cómo y dónde pagar",
        "Verify this document": "Verifique este documento",
        "Verification code": "Código de verificación",
        "Scan the code or visit": "Escanee el código o visite",
        "Printed on": "Impreso el",
        "Telephone": "Teléfono",
    }
)


@dataclass(frozen=True)
class Letterhead:
    """The agency as printed at the top of every document (jurisdiction parameters)."""

    name: str
    address: tuple[str, ...]
    phone: str
    email: str
    website: str
    section: str
    how_to_pay: Mapping[str, str]
    payment_section: str


@dataclass(frozen=True)
class Addressee:
    """The taxpayer as the letter is addressed: name and mailing address lines."""

    name: str
    address: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verification:
    """Where a holder of the printed document checks that it is genuine."""

    code: str
    url: str


def letterhead(jurisdiction: str, on: date, *, tree: ParameterTree) -> Letterhead:
    """The agency's letterhead in force on ``on`` (``agency.name``, ``agency.letterhead``,
    ``agency.how_to_pay``: each cited, the contact lines provisional where the law is silent)."""
    head = cast(dict[str, Any], tree.value(jurisdiction, "agency.letterhead", on))
    pay = cast(dict[str, str], tree.value(jurisdiction, "agency.how_to_pay", on))
    return Letterhead(
        name=str(tree.value(jurisdiction, "agency.name", on)),
        address=tuple(str(line) for line in head["address"]),
        phone=str(head["phone"]),
        email=str(head["email"]),
        website=str(head["website"]),
        section=tree.get(jurisdiction, "agency.letterhead", on).section,
        how_to_pay=pay,
        payment_section=tree.get(jurisdiction, "agency.how_to_pay", on).section,
    )


def language_for(jurisdiction: str, preferred: str | None, on: date, *, tree: ParameterTree) -> Language:
    """The lodging's preferred language, else the jurisdiction's ``agency.default_language``."""
    if preferred is not None and preferred in _BY_NAME:
        return _BY_NAME[preferred]
    try:
        value = str(tree.value(jurisdiction, "agency.default_language", on))
    except TaxcoreError:
        return "en"
    return _BY_NAME.get(value, "en")


def verification_code(secret: str, subject: str) -> str:
    """``XXXX-XXXX-XXXX-XXXX``: base32 of 80 bits of HMAC-SHA256 of ``subject`` under ``secret``,
    so anyone holding the printed document can check it and nobody can forge another's."""
    digest = hmac.new(secret.encode(), subject.encode(), hashlib.sha256).digest()
    raw = base64.b32encode(digest).decode()[:16]
    return "-".join(raw[i : i + 4] for i in range(0, 16, 4))


def normalize_code(code: str) -> str:
    raw = _CODE_CHARS.sub("", code.upper())
    return "-".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def code_matches(secret: str, subject: str, code: str) -> bool:
    return hmac.compare_digest(verification_code(secret, subject), normalize_code(code))


def money(amount: Decimal, language: Language) -> str:
    """``$1,234.50`` / ``-$12.00`` in the language's locale (Babel; two decimals, USD)."""
    return str(format_currency(amount, "USD", locale=LOCALES[language]))


def long_date(day: date, language: Language) -> str:
    """``April 1, 2025`` / ``1 de abril de 2025``."""
    return str(format_date(day, format="long", locale=LOCALES[language]))


def qr_data_uri(url: str) -> str:
    """The verification URL as a QR code (segno, error correction M), an SVG data URI."""
    return str(segno.make(url, error="m").svg_data_uri(scale=4, border=1))


@dataclass
class Documents:
    """A service's renderer: its templates first, then the chassis' ``documents/base.html``."""

    package: str
    catalog: Catalog
    _env: jinja2.Environment = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.catalog = BASE_CATALOG.merged(self.catalog)
        self._env = jinja2.Environment(
            loader=jinja2.ChoiceLoader(
                [
                    jinja2.PackageLoader(self.package, "templates"),
                    jinja2.PackageLoader("servicekit", "templates"),
                ]
            ),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )

    def html(
        self,
        template: str,
        *,
        language: Language,
        title: str,
        letterhead: Letterhead,
        addressee: Addressee,
        verification: Verification | None,
        printed_on: date | datetime,
        **context: Any,
    ) -> str:
        """The document as HTML (what :meth:`pdf` prints; tests may read it too)."""

        def t(english: str, **fields: object) -> str:
            return self.catalog.text(language, english, **fields)

        printed = (
            str(format_datetime(printed_on, format="medium", locale=LOCALES[language]))
            if isinstance(printed_on, datetime)
            else long_date(printed_on, language)
        )
        return self._env.get_template(template).render(
            t=t,
            lang=language,
            title=title,
            letterhead=letterhead,
            how_to_pay=letterhead.how_to_pay[language],
            addressee=addressee,
            verification=verification,
            qr=qr_data_uri(verification.url) if verification else None,
            printed_on=printed,
            money=lambda amount: money(Decimal(amount), language),
            day=lambda d: long_date(d, language),
            **context,
        )

    def pdf(self, template: str, *, author: str, **kwargs: Any) -> bytes:
        """The document as a tagged PDF (PDF/UA-1): title, language and author in its metadata."""
        html = self.html(template, **kwargs)
        document = HTML(string=html).render()
        document.metadata.title = kwargs["title"]
        document.metadata.authors = [author]
        document.metadata.lang = kwargs["language"]
        return cast(bytes, document.write_pdf(pdf_variant="pdf/ua-1"))

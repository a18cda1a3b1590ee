"""The chassis' document pieces: language choice, letterhead, catalog, codes, locale formats."""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal

import pytest
from pypdf import PdfReader

from servicekit import documents as docs
from servicekit.testing import pdf_text
from taxcore.parameters import default_tree

ON = date(2025, 4, 1)
LAW = default_tree()


class TestLanguage:
    def test_the_lodgings_choice_wins_else_the_jurisdictions_default(self) -> None:
        assert docs.language_for("PR", None, ON, tree=LAW) == "es"  # agency.default_language
        assert docs.language_for("VI", None, ON, tree=LAW) == "en"
        assert docs.language_for("PR", "en", ON, tree=LAW) == "en"
        assert docs.language_for("VI", "es", ON, tree=LAW) == "es"
        assert docs.language_for("PR", "fr", ON, tree=LAW) == "es"  # not a document language: the default


class TestLetterhead:
    def test_each_jurisdictions_agency_with_its_citations(self) -> None:
        pr, vi = docs.letterhead("PR", ON, tree=LAW), docs.letterhead("VI", ON, tree=LAW)
        assert (pr.name, pr.address, pr.phone) == (
            "Puerto Rico Tourism Company",
            ("P.O. Box 9023960", "San Juan, PR 00902-3960"),
            "(787) 721-2400",
        )
        assert (pr.section, pr.payment_section) == ("§3(A)", "§28(A); §29")
        assert (vi.name, vi.address[1], vi.payment_section) == (
            "Virgin Islands Bureau of Internal Revenue",
            "St. Thomas, VI 00802",
            "§54(f)",
        )
        assert vi.how_to_pay["es"].startswith("Pague con la declaración")


class TestCatalog:
    def test_spanish_without_a_translation_is_an_error_not_english(self) -> None:
        catalog = docs.Catalog(es={"Balance {n}": "Balance {n} (es)"})
        assert catalog.text("en", "Balance {n}", n=1) == "Balance 1"
        assert catalog.text("es", "Balance {n}", n=1) == "Balance 1 (es)"
        with pytest.raises(docs.MissingTranslation):
            catalog.text("es", "Untranslated")


class TestFormats:
    def test_amounts_and_dates_per_locale(self) -> None:
        assert docs.money(Decimal("-1234.5"), "en") == "-$1,234.50"
        assert docs.money(Decimal("1234.5"), "es") == "$1,234.50"  # Puerto Rico writes a decimal point
        assert docs.long_date(ON, "en") == "April 1, 2025"
        assert docs.long_date(ON, "es") == "1 de abril de 2025"


class TestVerification:
    def test_a_code_matches_its_subject_only(self) -> None:
        code = docs.verification_code("secret", "decision:case-1")
        assert len(code) == 19
        assert code.count("-") == 3
        assert docs.code_matches("secret", "decision:case-1", code.lower().replace("-", " "))
        assert not docs.code_matches("secret", "decision:case-2", code)
        assert not docs.code_matches("other", "decision:case-1", code)


class TestRender:
    def test_the_base_page_is_a_tagged_pdf_in_its_language(self) -> None:
        renderer = docs.Documents("servicekit", docs.Catalog(es={}))
        pdf = renderer.pdf(
            "documents/base.html",
            author="Puerto Rico Tourism Company",
            language="es",
            title="Documento de prueba",
            letterhead=docs.letterhead("PR", ON, tree=LAW),
            addressee=docs.Addressee("Hotel Ejemplo", ("1 Calle del Mar", "Ponce 00716")),
            verification=docs.Verification("ABCD-EFGH-IJKL-MNOP", "https://verify.example/x"),
            printed_on=ON,
            tax_account="PR-0000001-0",
        )
        text = pdf_text(pdf)
        for expected in (
            "Puerto Rico Tourism Company P.O. Box 9023960",
            "Hotel Ejemplo 1 Calle del Mar Ponce 00716",
            "Impreso el 1 de abril de 2025",
            "Documento de prueba",
            "Cómo y dónde pagar",
            "Código de verificación: ABCD-EFGH-IJKL-MNOP",
            "Página 1 de 1",
        ):
            assert expected in text, expected
        root = PdfReader(io.BytesIO(pdf)).trailer["/Root"]
        assert "/StructTreeRoot" in root  # tagged (PDF/UA-1): a screen reader follows the structure
        assert bool(root["/MarkInfo"]["/Marked"]) is True
        assert root["/Lang"] == "es"

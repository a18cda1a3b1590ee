"""The agency and statute on receipts come from taxcore (``agency.name``, ``agency.statute``)."""

from __future__ import annotations

from datetime import date

from filing.payments.service import legal_basis
from filing.settings import FilingSettings
from taxcore.parameters import default_tree

ON = date(2026, 10, 1)
LAW = default_tree()


class TestAgencyOnReceipts:
    def test_default_from_taxcore_parameters(self) -> None:
        settings = FilingSettings(environment="test")
        assert settings.agency_name("PR", ON, law=LAW) == "Puerto Rico Tourism Company"
        assert settings.agency_name("VI", ON, law=LAW) == "Virgin Islands Bureau of Internal Revenue"
        assert settings.agency_name("ZZ", ON, law=LAW) == "ZZ room tax administrator"
        assert legal_basis("PR", ON, law=LAW) == "Act No. 272 of 2003, Section 28(C)"
        assert legal_basis("VI", ON, law=LAW) == "33 V.I.C. Section 54"
        assert legal_basis("ZZ", ON, law=LAW) == "room occupancy tax"

    def test_a_deployment_may_override_the_name(self) -> None:
        settings = FilingSettings(environment="test", agencies={"PR": "Compañía de Turismo de Puerto Rico"})
        assert settings.agency_name("PR", ON, law=LAW) == "Compañía de Turismo de Puerto Rico"
        assert settings.agency_name("VI", ON, law=LAW) == "Virgin Islands Bureau of Internal Revenue"

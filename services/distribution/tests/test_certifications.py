from __future__ import annotations

import httpx
from distribution_factories import ADMIN, AUDITOR, certify


class TestCertify:
    async def test_one_per_fiscal_year_and_corrections_are_versions(self, client: httpx.AsyncClient) -> None:
        first = await certify(client, 2027, "1200000.00")
        assert (first["version"], first["current"], first["amount"]) == (1, True, "1200000.00")
        body = {
            "fiscal_year": 2027,
            "amount": "1300000.00",
            "certified_on": "2026-06-20",
            "document_reference": "BGF-CERT-2027-A",
        }
        r = await client.post("/v1/certifications", json=body, headers=ADMIN)
        assert r.status_code == 409
        assert r.json()["errors"][0]["pointer"] == "#/body/supersedes"
        r = await client.post(
            "/v1/certifications",
            json={**body, "supersedes": first["id"], "reason": "amended schedule"},
            headers=ADMIN,
        )
        assert r.status_code == 201
        second = r.json()
        assert (second["version"], second["supersedes"], second["current"]) == (2, first["id"], True)
        listed = (
            await client.get("/v1/certifications", params={"fiscal_year": 2027}, headers=AUDITOR)
        ).json()
        assert [(c["version"], c["current"]) for c in listed["items"]] == [(1, False), (2, True)]
        r = await client.post("/v1/certifications", json={**body, "supersedes": first["id"]}, headers=ADMIN)
        assert r.status_code == 409

    async def test_first_year_months_remaining_is_validated(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/certifications",
            json={
                "fiscal_year": 2027,
                "amount": "1.00",
                "certified_on": "2026-06-20",
                "document_reference": "x",
                "first_year_months_remaining": 13,
            },
            headers=ADMIN,
        )
        assert r.status_code == 422
        assert r.json()["errors"][0]["pointer"] == "#/body/first_year_months_remaining"

    async def test_auditor_cannot_certify(self, client: httpx.AsyncClient) -> None:
        r = await client.post(
            "/v1/certifications",
            json={
                "fiscal_year": 2027,
                "amount": "1.00",
                "certified_on": "2026-06-20",
                "document_reference": "x",
            },
            headers=AUDITOR,
        )
        assert r.status_code == 403


class TestWhichJurisdiction:
    """Which jurisdictions take a certification is taxcore data (``distribution.certification_required``)."""

    async def test_defaults_to_the_one_that_takes_it_and_refuses_the_others(
        self, client: httpx.AsyncClient
    ) -> None:
        assert (await certify(client, 2027, "1.00"))["jurisdiction"] == "PR"
        assert (await certify(client, 2028, "1.00", jurisdiction="PR"))["jurisdiction"] == "PR"
        for jurisdiction in ("VI", "ZZ"):  # VI's distribution takes none; ZZ has no parameters
            r = await client.post(
                "/v1/certifications",
                json={
                    "jurisdiction": jurisdiction,
                    "fiscal_year": 2027,
                    "amount": "1.00",
                    "certified_on": "2026-06-20",
                    "document_reference": "x",
                },
                headers=ADMIN,
            )
            assert r.status_code == 422, jurisdiction
            assert [e["pointer"] for e in r.json()["errors"]] == ["#/body/jurisdiction"]

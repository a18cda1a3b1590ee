"""A third jurisdiction needs no registry code: taxcore parameters alone make ``XX`` registrable.

``XX`` is a copy of the VI parameter folder (its own 10% rate); the service is pointed at
that tree through ``TAXCORE_PARAMETERS`` (read by ``taxcore.parameters.default_tree``, which the
request schemas' ``JurisdictionCode`` consults) and the app's runtime built from it (what a
service started with that variable holds).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from registry_factories import ADMIN, make_lodging, make_operator, outbox_types
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from registry.accounts import is_valid_account
from servicekit.runtime import Runtime
from taxcore.parameters import PARAMETERS_ENV, reset_default_tree
from taxcore.testing import tree_with_jurisdiction

DB = async_sessionmaker[AsyncSession]


@pytest.fixture
def xx_parameters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service_app: FastAPI) -> Iterator[None]:
    root = tree_with_jurisdiction(
        tmp_path / "parameters",
        "XX",
        like="VI",
        edits={"rates/room_tax.yaml": ("value: 0.125", "value: 0.10")},
    )
    monkeypatch.setenv(PARAMETERS_ENV, str(root))
    reset_default_tree()
    monkeypatch.setattr(service_app.state, "runtime", Runtime.from_environment())
    yield
    monkeypatch.delenv(PARAMETERS_ENV)
    reset_default_tree()


def _body(operator_id: str, **overrides: object) -> dict[str, object]:
    return {
        "jurisdiction": "XX",
        "lodging_class": "hotel",
        "name": "Hotel Equis",
        "address": {"line1": "1 Main Street", "municipality": "Capital"},
        "room_count": 20,
        "operator_id": operator_id,
        "registered_on": "2026-01-01",
        **overrides,
    }


class TestThirdJurisdictionIsData:
    async def test_unknown_without_its_parameters(self, client: httpx.AsyncClient) -> None:
        op = await make_operator(client)
        r = await client.post("/v1/lodgings", json=_body(op["id"]), headers=ADMIN)
        assert r.status_code == 422
        assert r.headers["content-type"] == "application/problem+json"
        assert [e["pointer"] for e in r.json()["errors"]] == ["#/body/jurisdiction"]

    async def test_registers_an_xx_lodging(
        self, xx_parameters: None, client: httpx.AsyncClient, db: DB
    ) -> None:
        op = await make_operator(client)
        lodging = await make_lodging(
            client, operator_id=op["id"], jurisdiction="XX", lodging_class="timeshare", name="Equis Club"
        )
        assert lodging["jurisdiction"] == "XX"
        assert lodging["tax_account"] == "XX-0000001-8"
        assert is_valid_account(lodging["tax_account"])
        assert await outbox_types(db, lodging["tax_account"]) == ["roomtax.registry.lodging.registered.v1"]
        listed = await client.get("/v1/lodgings", params={"jurisdiction": "XX"}, headers=ADMIN)
        assert [item["id"] for item in listed.json()["items"]] == [lodging["id"]]
        compliance = (await client.get(f"/v1/lodgings/{lodging['id']}/compliance", headers=ADMIN)).json()
        assert (compliance["bond_required"], compliance["compliant"]) == (False, True)  # like VI

    async def test_its_parameters_decide_classes_casino_and_certificates(
        self, xx_parameters: None, client: httpx.AsyncClient
    ) -> None:
        op = await make_operator(client)
        for overrides, pointer in (
            ({"lodging_class": "motel"}, "#/body/lodging_class"),  # not one of XX's lodging.classes
            ({"casino": True}, "#/body/casino"),  # XX has no rates.casino
            ({"jurisdiction": "ZZ"}, "#/body/jurisdiction"),
        ):
            r = await client.post("/v1/lodgings", json=_body(op["id"], **overrides), headers=ADMIN)
            assert r.status_code == 422, overrides
            assert [e["pointer"] for e in r.json()["errors"]] == [pointer]
        lodging = await make_lodging(client, operator_id=op["id"], jurisdiction="XX")
        r = await client.post(
            f"/v1/lodgings/{lodging['id']}/certificates",
            json={
                "certificate_number": "XX-FILM-1",
                "production": "A film",
                "valid_from": "2026-02-01",
                "valid_to": "2026-03-01",
            },
            headers=ADMIN,
        )
        assert r.status_code == 422  # no XX exemption is evidenced by a certificate
        assert [e["pointer"] for e in r.json()["errors"]] == ["#/body/kind"]

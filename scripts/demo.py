"""Load the demo story through the public APIs, as a client would (idempotent).

Registry: a San Juan casino hotel, a Vieques short-term rental filed by an online
intermediary, a St. Thomas hotel and a St. John timeshare, with their operators,
the intermediary, bonds, an authorization and a film certificate. Later stages
(filings, payments, a bounced check, a distribution run) are added by the other
services' demo steps when those services are running.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = os.environ.get("ROOMTAX_REGISTRY_URL", "http://127.0.0.1:8001")
ADMIN_ID = os.environ.get("REGISTRY_BOOTSTRAP_ADMIN_CLIENT_ID", "agency-admin")
ADMIN_SECRET = os.environ.get("REGISTRY_BOOTSTRAP_ADMIN_SECRET", "dev-admin-secret")


def token(client: httpx.Client, cid: str, secret: str) -> str:
    r = client.post(
        f"{REGISTRY}/v1/oauth/token",
        data={"grant_type": "client_credentials", "client_id": cid, "client_secret": secret},
    )
    r.raise_for_status()
    return str(r.json()["access_token"])


def post(
    client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str], key: str
) -> dict[str, Any]:
    r = client.post(url, json=body, headers={**headers, "Idempotency-Key": key})
    if r.status_code >= 400:
        raise SystemExit(f"demo: POST {url} failed: {r.status_code} {r.text}")
    return r.json()  # type: ignore[no-any-return]


def main() -> int:
    with httpx.Client(timeout=30) as client:
        admin = {"Authorization": f"Bearer {token(client, ADMIN_ID, ADMIN_SECRET)}"}
        existing = client.get(f"{REGISTRY}/v1/lodgings", params={"limit": 500}, headers=admin).json()
        if any(x["name"] == "El San Juan Casino Hotel" for x in existing["items"]):
            print("[roomtax] demo already loaded")
            return 0
        ops = {
            name: post(
                client, f"{REGISTRY}/v1/operators", {"name": name, "email": email}, admin, f"demo-op-{i}"
            )
            for i, (name, email) in enumerate(
                [
                    ("Condado Hospitality Group", "tax@condado.example"),
                    ("Isla Nena Rentals", "hola@islanena.example"),
                    ("Charlotte Amalie Hotels", "accounts@cahotels.example"),
                    ("Cruz Bay Vacation Owners", "owners@cruzbay.example"),
                ]
            )
        }
        ota = post(
            client, f"{REGISTRY}/v1/facilitators", {"name": "Caribe Stays Online"}, admin, "demo-fac-0"
        )
        specs = [
            ("El San Juan Casino Hotel", "PR", "hotel", True, "San Juan", 388, "Condado Hospitality Group"),
            ("Casita Esperanza", "PR", "short_term_rental", False, "Vieques", 3, "Isla Nena Rentals"),
            ("Harbour View Hotel", "VI", "hotel", False, "St. Thomas", 120, "Charlotte Amalie Hotels"),
            ("Cruz Bay Vacation Club", "VI", "timeshare", False, "St. John", 64, "Cruz Bay Vacation Owners"),
        ]
        lodgings = {}
        for i, (name, jur, cls, casino, muni, rooms, op) in enumerate(specs):
            lodgings[name] = post(
                client,
                f"{REGISTRY}/v1/lodgings",
                {
                    "jurisdiction": jur,
                    "lodging_class": cls,
                    "casino": casino,
                    "name": name,
                    "address": {"line1": f"{100 + i} Calle Principal", "municipality": muni},
                    "room_count": rooms,
                    "operator_id": ops[op]["id"],
                    "registered_on": "2026-01-01",
                },
                admin,
                f"demo-lodging-{i}",
            )
        sj, vq = lodgings["El San Juan Casino Hotel"], lodgings["Casita Esperanza"]
        post(
            client,
            f"{REGISTRY}/v1/lodgings/{sj['id']}/bonds",
            {
                "kind": "surety",
                "amount": "250000.00",
                "issuer": "Seguros Triple Fianza",
                "effective_on": "2026-01-01",
                "expires_on": "2027-12-31",
            },
            admin,
            "demo-bond-0",
        )
        post(
            client,
            f"{REGISTRY}/v1/lodgings/{vq['id']}/bonds",
            {
                "kind": "cash_deposit",
                "amount": "2500.00",
                "issuer": "Isla Nena Rentals",
                "effective_on": "2026-01-01",
                "expires_on": "2026-12-31",
            },
            admin,
            "demo-bond-1",
        )
        post(
            client,
            f"{REGISTRY}/v1/lodgings/{vq['id']}/authorizations",
            {"facilitator_id": ota["id"], "starts_on": "2026-01-01"},
            admin,
            "demo-auth-0",
        )
        post(
            client,
            f"{REGISTRY}/v1/lodgings/{sj['id']}/certificates",
            {
                "certificate_number": "PRFILM-2026-0042",
                "production": "Isla del Encanto (feature film)",
                "valid_from": "2026-09-01",
                "valid_to": "2026-12-31",
            },
            admin,
            "demo-cert-0",
        )
        creds = {}
        for i, (name, role, bind) in enumerate(
            [
                (
                    "demo San Juan operator",
                    "operator",
                    {"operator_id": ops["Condado Hospitality Group"]["id"]},
                ),
                ("demo intermediary", "facilitator", {"facilitator_id": ota["id"]}),
                ("demo dashboard", "dashboard", {}),
            ]
        ):
            c = post(
                client,
                f"{REGISTRY}/v1/oauth-clients",
                {"name": name, "role": role, **bind},
                admin,
                f"demo-client-{i}",
            )
            creds[role] = {"client_id": c["client_id"], "client_secret": c["client_secret"]}
        (ROOT / ".run").mkdir(exist_ok=True)
        state = {"operators": ops, "facilitator": ota, "lodgings": lodgings, "clients": creds}
        (ROOT / ".run" / "demo.json").write_text(json.dumps(state, indent=2))
        print(f"[roomtax] demo registry loaded: {len(lodgings)} lodgings; credentials in .run/demo.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The ``roomtax`` CLI run as a process against the real platform (issue 16).

One platform (registry, filing, assessment, notify: real processes, real broker). A
facilitator authorized by two Puerto Rico short-term rentals logs in with the CLI, uploads a
schedule in chunks (one row for a lodging it may not file for), files a declaration from JSON
and reads a statement; files it cannot parse are refused naming the line, nothing sent. It
manages its webhooks against notify's real ``/v1/webhooks``: create (secret shown once),
list, delete; a private address or an unknown event type is refused naming the field.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from platform_harness import Api, Platform, eventually

PERIOD = "2026-10"
REGISTERED = "2026-01-01"


def roomtax(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROOMTAX_CONFIG": str(config), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "roomtax_cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
async def platform() -> AsyncIterator[Platform]:
    p = Platform(prefix="roomtax_e2e_cli")
    try:
        await p.start(("registry", "filing", "assessment", "notify"))
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
async def world(platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:6]
    admin = await Api.login(platform, "agency-admin", "dev-admin-secret")
    operator = await admin.post(
        "registry", "/v1/operators", {"name": f"Isla Nena {tag}", "email": f"op@{tag}.example"}, expect=201
    )
    ota = await admin.post(
        "registry", "/v1/facilitators", {"name": f"OTA {tag}", "email": f"ota@{tag}.example"}, expect=201
    )
    accounts = []
    for n in range(3):
        lodging = await admin.register_lodging(
            operator["id"],
            lodging_class="short_term_rental",
            casino=False,
            name=f"Villa {n} {tag}",
            line1="1 Calle del Mar",
            municipality="Vieques",
            room_count=4,
            registered_on=REGISTERED,
        )
        accounts.append(lodging["tax_account"])
    for account in accounts[:2]:  # the third never authorized the intermediary
        await admin.post(
            "registry",
            f"/v1/lodgings/{account}/authorizations",
            {"facilitator_id": ota["id"], "starts_on": REGISTERED},
            expect=201,
        )
    client = await admin.post(
        "registry",
        "/v1/oauth-clients",
        {"name": f"ota-cli-{tag}", "role": "facilitator", "facilitator_id": ota["id"]},
        expect=201,
    )

    async def projected() -> bool:
        got = [
            (await admin.call("GET", "filing", f"/v1/lodgings/{a}/periods/{PERIOD}")).status_code
            for a in accounts
        ]
        statement = await admin.call("GET", "assessment", f"/v1/accounts/{accounts[0]}/statement")
        return got == [200, 200, 200] and statement.status_code == 200

    await eventually(projected)
    op_client = await admin.post(
        "registry",
        "/v1/oauth-clients",
        {"name": f"op-cli-{tag}", "role": "operator", "operator_id": operator["id"]},
        expect=201,
    )
    folder = tmp_path_factory.mktemp("cli")
    configs = {}
    for name, who in (("facilitator", client), ("operator", op_client)):
        configs[name] = folder / f"{name}.json"
        login = roomtax(
            configs[name],
            "login",
            *("--client-id", who["client_id"], "--client-secret", who["client_secret"]),
            *("--registry", platform.url("registry"), "--filing", platform.url("filing")),
            *("--assessment", platform.url("assessment"), "--notify", platform.url("notify"), "--json"),
        )
        assert login.returncode == 0, login.stderr
        assert json.loads(login.stdout)["client_id"] == who["client_id"]
    return {
        "ota": ota,
        "operator_id": operator["id"],
        "client_id": client["client_id"],
        "accounts": accounts,
        "config": configs["facilitator"],
        "operator": configs["operator"],
        "admin": admin,
    }


def _schedule(path: Path, accounts: list[str]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["tax_account", "room_revenue", "resort_and_other_fees", "room_nights"])
        writer.writerow([accounts[0], "14400.00", "600.00", "48"])
        writer.writerow([accounts[2], "1000.00", "0.00", "3"])  # not authorized: rejected
        writer.writerow([accounts[1], "2000.00", "0.00", "6"])


async def test_schedule_upload_in_chunks_with_summary_and_rejected_rows(
    world: dict[str, Any], tmp_path: Path
) -> None:
    accounts = world["accounts"]
    schedule = tmp_path / "october.csv"
    _schedule(schedule, accounts)
    upload = ("schedule", "upload", str(schedule), "--period", PERIOD, "--chunk-rows", "2")
    done = roomtax(world["config"], *upload, "--json")
    assert done.returncode == 1, done.stderr  # some rows rejected
    summary = json.loads(done.stdout)
    assert (summary["rows"], summary["accepted"], summary["rejected"], summary["chunks"]) == (3, 2, 1, 2)
    assert len(summary["schedules"]) == 2
    assert [(r["line"], r["tax_account"]) for r in summary["rejected_rows"]] == [(3, accounts[2])]
    rejected = list(csv.reader((tmp_path / "october.rejected.csv").open()))
    assert rejected[0] == [
        "line",
        "tax_account",
        "room_revenue",
        "resort_and_other_fees",
        "room_nights",
        "errors",
    ]
    assert rejected[1][:5] == ["3", accounts[2], "1000.00", "0.00", "3"]
    assert len(rejected) == 2
    # §24(B) short-term rental 7%: (14400 + 600) x 7% = 1050.00, filed once
    filed = await world["admin"].get("filing", f"/v1/lodgings/{accounts[0]}/periods/{PERIOD}")
    assert "1050.00" in json.dumps(filed)
    # the same file again replays (Idempotency-Key per chunk): nothing filed twice
    again = roomtax(world["config"], *upload, "--json")
    assert json.loads(again.stdout)["schedules"] == summary["schedules"]
    # the human form: a progress bar per chunk and overall, and the summary table
    human = roomtax(world["config"], *upload)
    assert "chunk 1/2 (2 rows)" in human.stderr
    assert "chunk 2/2 (1 rows)" in human.stderr
    assert "all rows" in human.stderr
    assert f"line 3: {accounts[2]}:" in human.stdout


def test_a_csv_it_cannot_parse_is_refused_naming_the_line(world: dict[str, Any], tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("tax_account,room_revenue\nPR-0000001-0,100.00\nPR-0000002-0,100.00,oops\n")
    done = roomtax(world["config"], "schedule", "upload", str(bad), "--period", PERIOD, "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"] == f"{bad}: line 3: 3 fields, the header has 2"
    headless = tmp_path / "headless.csv"
    headless.write_text("account,revenue\n")
    done = roomtax(world["config"], "schedule", "upload", str(headless), "--period", PERIOD)
    assert done.returncode == 2
    assert "line 1: the header has no tax_account column" in done.stderr


def test_declarations_file_and_statement(world: dict[str, Any], tmp_path: Path) -> None:
    account = world["accounts"][1]
    declarations = tmp_path / "september.json"
    declarations.write_text(
        json.dumps([{"lodging": account, "period": "2026-09", "room_revenue": "1000.00", "declared": {}}])
    )
    done = roomtax(world["config"], "declarations", "file", str(declarations), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert (result["filed"], result["rejected"]) == (1, 0)
    assert result["results"][0]["tax"] == "70.00"  # 1000.00 x 7% (§24(B))
    broken = tmp_path / "broken.json"
    broken.write_text('[{"lodging": "x",\n  "period": }]')
    done = roomtax(world["config"], "declarations", "file", str(broken), "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"].startswith(f"{broken}: line 2: ")
    statement = roomtax(world["operator"], "statement", account, "--as-of", "2026-12-31", "--json")
    assert statement.returncode == 0, statement.stderr
    document = json.loads(statement.stdout)
    assert (document["tax_account"], document["as_of"]) == (account, "2026-12-31")
    other = roomtax(world["config"], "statement", account, "--json")
    assert other.returncode == 4  # not the facilitator's to read: a 404


def test_without_login_the_exit_code_says_so(tmp_path: Path) -> None:
    done = roomtax(tmp_path / "none.json", "statement", "PR-0000001-0")
    assert done.returncode == 3
    assert "not signed in: run `roomtax login`" in done.stderr


FILED = "roomtax.filing.declaration.filed.v1"
NOTICE = "roomtax.assessment.notice.issued.v1"
HOOK = "https://93.184.215.14/roomtax/events"  # a public literal address: nothing to resolve


def test_webhooks_create_list_delete_against_notify(world: dict[str, Any]) -> None:
    config, ota = world["config"], world["ota"]
    created = roomtax(
        config,
        "webhooks",
        "create",
        HOOK,
        "--event",
        NOTICE,
        "--event",
        FILED,
        "--description",
        "our PMS",
        "--json",
    )
    assert created.returncode == 0, created.stdout + created.stderr
    hook = json.loads(created.stdout)
    secret = hook.pop("secret")
    assert len(secret) >= 32
    assert hook == {
        "id": hook["id"],
        "url": HOOK,
        "event_types": [NOTICE, FILED],  # notify keeps them sorted
        "description": "our PMS",
        "status": "active",
        "disabled_reason": None,
        "disabled_at": None,
        "owner_kind": "facilitator",
        "owner_id": ota["id"],
        "created_at": hook["created_at"],
        "created_by": f"client:{world['client_id']}",
    }
    listed = roomtax(config, "webhooks", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"items": [hook]}  # the secret is never listed
    human = roomtax(config, "webhooks", "list")
    assert hook["id"] in human.stdout
    assert "our PMS" in human.stdout
    assert secret not in human.stdout
    # the operator (another party) neither sees nor deletes the facilitator's webhook
    theirs = roomtax(world["operator"], "webhooks", "list", "--json")
    assert json.loads(theirs.stdout) == {"items": []}
    foreign = roomtax(world["operator"], "webhooks", "delete", hook["id"], "--json")
    assert foreign.returncode == 4
    assert json.loads(foreign.stdout)["error"] == f"404 no webhook {hook['id']}"
    deleted = roomtax(config, "webhooks", "delete", hook["id"], "--json")
    assert (deleted.returncode, json.loads(deleted.stdout)) == (0, {"deleted": hook["id"]})
    assert json.loads(roomtax(config, "webhooks", "list", "--json").stdout) == {"items": []}
    again = roomtax(config, "webhooks", "delete", hook["id"])
    assert again.returncode == 4
    assert f"404 no webhook {hook['id']}" in again.stderr


def test_webhooks_bad_input_names_the_field_and_creates_nothing(world: dict[str, Any]) -> None:
    config = world["config"]
    private = roomtax(config, "webhooks", "create", "http://10.0.0.7/hook", "--event", FILED, "--json")
    assert private.returncode == 5, private.stdout + private.stderr
    refused = json.loads(private.stdout)
    assert refused["problem"]["errors"] == [
        {"pointer": "#/body/url", "detail": "resolves to a private or reserved address (10.0.0.7)"}
    ]
    unknown = roomtax(config, "webhooks", "create", HOOK, "--event", FILED, "--event", "roomtax.nope.v1")
    assert unknown.returncode == 5
    assert "#/body/event_types/1: unknown event type 'roomtax.nope.v1'" in unknown.stderr
    assert json.loads(roomtax(config, "webhooks", "list", "--json").stdout) == {"items": []}


async def test_receipts_download_every_payment_of_the_caller(world: dict[str, Any], tmp_path: Path) -> None:
    account = world["accounts"][2]
    paid = await world["admin"].post(
        "filing",
        "/v1/payments",
        {
            "tax_account": account,
            "amount": "70.00",
            "method": "check",
            "reference": f"CHK-{uuid.uuid4().hex[:6]}",
            "payer": {"kind": "operator", "id": world["operator_id"]},
        },
        expect=201,
    )
    done = roomtax(world["operator"], "receipts", "download", "--out-dir", str(tmp_path), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    target = tmp_path / f"receipt-{paid['id']}.pdf"
    assert json.loads(done.stdout) == {
        "receipts": [{"payment_id": paid["id"], "file": str(target), "bytes": target.stat().st_size}]
    }
    assert target.read_bytes().startswith(b"%PDF-")
    # the facilitator did not pay it: its list holds no receipt of the operator's
    theirs = roomtax(world["config"], "receipts", "download", "--out-dir", str(tmp_path / "ota"), "--json")
    assert json.loads(theirs.stdout) == {"receipts": []}

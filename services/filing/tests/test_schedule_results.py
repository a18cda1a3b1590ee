"""Exact results of a mixed remittance schedule: what the response says, what is stored and
which events are queued, row by row, for new, amended and rejected rows.

Each stored declaration and its outbox event are compared, column by column and key by key,
with what the one-return path builds for the same row (``declarations.compute.recompute``,
``declarations.service.new_version``, the outbox envelope): the schedule's bulk path must
write the very rows a declaration filed on its own would."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Any

import asyncpg
import httpx
import pytest
from filing_factories import DB, as_facilitator, authorize, certify, make_lodging, new_id
from sqlalchemy import text

from filing.declarations.compute import recompute
from filing.declarations.schemas import Filer
from filing.declarations.service import new_version
from filing.models import Lodging
from filing.projection import repository as projection
from filing.schedules import repository as schedules_repository
from filing.schedules import service as schedules_service
from filing.schedules.schemas import ScheduleRow
from servicekit.outbox import queue_params
from taxcore.parameters import default_tree
from taxcore.periods import Period, due_date

PERIOD = Period.parse("2026-10")


async def _stored(db: DB, schedule_id: str) -> list[dict[str, Any]]:
    async with db() as session:
        rows = await session.execute(
            text("SELECT * FROM declarations WHERE schedule_id = :s ORDER BY schedule_row"),
            {"s": schedule_id},
        )
        return [dict(r._mapping) for r in rows]


async def _events(db: DB, declaration_ids: list[str]) -> dict[str, dict[str, Any]]:
    async with db() as session:
        rows = await session.execute(
            text(
                "SELECT topic, key, event_type, payload FROM outbox "
                "WHERE payload->'data'->>'declaration_id' = ANY(:ids) ORDER BY id"
            ),
            {"ids": declaration_ids},
        )
        return {
            r[3]["data"]["declaration_id"]: {"topic": r[0], "key": r[1], "type": r[2], "payload": r[3]}
            for r in rows
        }


async def _expected(
    db: DB,
    stored: dict[str, Any],
    raw: dict[str, Any],
    *,
    facilitator: str,
    previous: tuple[str, int] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The declaration row and event payload the one-return path builds for ``raw``."""
    tree = default_tree()
    async with db() as session:
        lodging = await session.get(Lodging, stored["lodging_id"])
        assert lodging is not None
        certificates = await projection.certificates_valid_in(session, [lodging.lodging_id], PERIOD)
    row = ScheduleRow.model_validate(raw)
    rec = recompute(
        lodging=lodging,
        period=PERIOD,
        lines=row.lines(),
        declared=row.declared(),
        certificates=certificates.get(lodging.lodging_id, set()),
        parameters=tree,
        today=stored["filed_on"],
    )
    version = new_version(
        lodging=lodging,
        period=PERIOD,
        rec=rec,
        declared=row.declared(),
        filer=Filer(kind="facilitator", id=facilitator),
        previous=previous,
        filed_on=stored["filed_on"],
        due=due_date(lodging.jurisdiction, PERIOD, parameters=tree),
        submitted_by=stored["submitted_by"],
        schedule_id=stored["schedule_id"],
        schedule_row=stored["schedule_row"],
        declaration_id=stored["id"],
    )
    payload = json.loads(queue_params("filing", [version.event])["p"][0])
    return version.row, payload


def _row_as_stored(row: dict[str, Any]) -> dict[str, Any]:
    """A built row as PostgreSQL gives it back (JSON columns through JSON, money quantized)."""
    out = dict(row)
    for name in ("submitted", "input", "findings", "trace"):
        out[name] = _roundtrip(out[name])
    return out


def _roundtrip(value: Any) -> Any:
    return json.loads(json.dumps(value))


class TestMixedScheduleExactly:
    async def test_new_amended_and_rejected_rows_store_what_one_return_would(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        fac = new_id("fac")
        hotel = await make_lodging(db, name="Hotel")
        casino = await make_lodging(db, casino=True, name="Casino hotel")
        vi = await make_lodging(db, jurisdiction="VI", name="VI hotel")
        film = await make_lodging(db, name="Film crew hotel")
        later = await make_lodging(db, name="Authorized from November")
        stranger = await make_lodging(db, name="Never authorized")
        odd = await make_lodging(db, name="Claims an unknown exemption")
        vi_guesthouse = await make_lodging(
            db, jurisdiction="VI", lodging_class="apartment_condominium_residence", name="VI condo"
        )
        for lodging in (hotel, casino, vi, film, odd, vi_guesthouse):
            await authorize(db, lodging, fac)
        await authorize(db, later, fac, starts_on=date(2026, 11, 1))
        await certify(db, film, "PRTC-FILM-2026-001", date(2026, 9, 1), date(2026, 12, 31))
        rows: list[Any] = [
            {
                "tax_account": hotel.tax_account,
                "room_revenue": "1000.00",
                "resort_and_other_fees": "25.00",
                "room_nights": 5,
                "intermediary_retained": "150.00",
                "declared_tax": "92.25",
            },
            {
                "tax_account": casino.tax_account,
                "room_revenue": "2000.00",
                "room_nights": 8,
                "declared_taxable_base": "2000.00",
                "declared_tax": "180.00",  # 11% with a casino: flagged
                "declared_total": "180.00",
            },
            {
                "tax_account": vi.tax_account,
                "room_revenue": "800.00",
                "room_nights": 4,
                "intermediary_retained": "200.00",
                "timeshare_owner_unit_days": 2,
                "tax_itemized": False,
            },
            {
                "tax_account": film.tax_account,
                "room_revenue": "3000.00",
                "room_nights": 10,
                "exemption": "pr_film_production",
                "exempt_amount": "1000.00",
                "exemption_evidence": "PRTC-FILM-2026-001",
            },
            {"tax_account": later.tax_account, "room_revenue": "10.00"},
            {"tax_account": stranger.tax_account, "room_revenue": "10.00"},
            {"tax_account": hotel.tax_account, "room_revenue": "10.00"},
            {"tax_account": casino.tax_account, "room_revenue": "abc", "room_nights": -1},
            {
                "tax_account": odd.tax_account,
                "room_revenue": "100.00",
                "exemption": "x",
                "exempt_amount": "1.00",
            },
            {"room_revenue": "1.00"},
            {"tax_account": vi.tax_account, "room_revenue": "1.00", "surprise": 1},
            {
                "tax_account": vi_guesthouse.tax_account,
                "room_revenue": "800.00",
                "room_nights": 4,
                "intermediary_retained": "200.00",
                "tax_itemized": False,
                "declared_tax": "100.00",
            },
        ]
        r = await client.post(
            "/v1/remittance-schedules", json={"period": "2026-10", "rows": rows}, headers=as_facilitator(fac)
        )
        assert r.status_code == 201, r.text
        out = r.json()
        assert (out["status"], out["rows"], out["accepted"], out["rejected"]) == (
            "partially_accepted",
            12,
            4,
            8,
        )
        results = out["results"]
        assert [
            (x["row"], x["status"], x["version"], x["tax"], x["total_due"], x["flagged"]) for x in results
        ] == [
            (1, "accepted", 1, "92.25", "92.25", True),
            (2, "accepted", 1, "220.00", "220.00", True),
            (3, "rejected", None, None, None, None),
            (4, "accepted", 1, "180.00", "180.00", True),
            (5, "rejected", None, None, None, None),
            (6, "rejected", None, None, None, None),
            (7, "rejected", None, None, None, None),
            (8, "rejected", None, None, None, None),
            (9, "rejected", None, None, None, None),
            (10, "rejected", None, None, None, None),
            (11, "rejected", None, None, None, None),
            (12, "accepted", 1, "125.00", "125.00", True),
        ]
        errors = {x["row"]: [(e["field"], e["code"]) for e in x["errors"]] for x in results if x["errors"]}
        assert errors == {
            3: [("timeshare_owner_unit_days", "not_computable")],
            5: [("tax_account", "not_authorized_for_period")],
            6: [("tax_account", "not_authorized")],
            7: [("tax_account", "duplicate_lodging")],
            8: [("room_revenue", "value_error"), ("room_nights", "greater_than_equal")],
            9: [("exemption", "literal_error")],
            10: [("tax_account", "missing")],
            11: [("surprise", "extra_forbidden")],
        }
        assert results[6]["errors"][0]["reason"] == "the lodging is already on row 1 of this schedule"
        assert [x["tax_account"] for x in results[4:11]] == [
            later.tax_account,
            stranger.tax_account,
            hotel.tax_account,
            casino.tax_account,
            odd.tax_account,
            None,
            vi.tax_account,
        ]
        first = await self._check_stored(db, out, rows, fac, previous={})

        # the same accepted rows again, as CSV: every one amended (version 2 superseding 1)
        amended = [rows[i] for i in (0, 1, 3, 11)]
        header = sorted({k for x in amended for k in x})
        csv_rows = [{k: str(x.get(k, "")) for k in header} for x in amended]
        document = (
            ",".join(header) + "\n" + "\n".join(",".join(x[k] for k in header) for x in csv_rows) + "\n"
        )
        r = await client.post(
            "/v1/remittance-schedules",
            params={"period": "2026-10"},
            content=document.replace("False", "false"),
            headers={**as_facilitator(fac), "content-type": "text/csv"},
        )
        assert r.status_code == 201, r.text
        again = r.json()
        assert (again["source_format"], again["accepted"], again["rejected"]) == ("csv", 4, 0)
        assert [(x["version"], x["tax"]) for x in again["results"]] == [
            (2, "92.25"),
            (2, "220.00"),
            (2, "180.00"),
            (2, "125.00"),
        ]
        plain = [{k: v for k, v in x.items() if v != ""} for x in csv_rows]
        await self._check_stored(db, again, plain, fac, previous={d["lodging_id"]: d for d in first})

    async def _check_stored(
        self,
        db: DB,
        out: dict[str, Any],
        rows: list[Any],
        fac: str,
        *,
        previous: dict[str, dict[str, Any]],
    ) -> list[dict[str, Any]]:
        stored = await _stored(db, out["id"])
        accepted = [x for x in out["results"] if x["status"] == "accepted"]
        assert [(d["id"], d["schedule_row"], d["version"]) for d in stored] == [
            (x["declaration_id"], x["row"], x["version"]) for x in accepted
        ]
        events = await _events(db, [d["id"] for d in stored])
        assert len(events) == len(stored)
        for d in stored:
            before = previous.get(d["lodging_id"])
            expected_row, expected = await _expected(
                db,
                d,
                rows[d["schedule_row"] - 1],
                facilitator=fac,
                previous=None if before is None else (before["id"], before["version"]),
            )
            assert {k: v for k, v in d.items() if k not in ("seq", "created_at")} == _row_as_stored(
                expected_row
            )
            assert d["supersedes"] == (None if before is None else before["id"])
            assert isinstance(d["tax"], Decimal)
            event = events[d["id"]]
            assert (event["topic"], event["key"], event["type"]) == (
                "filing.declarations",
                d["tax_account"],
                "roomtax.filing.declaration.amended.v1" if before else "roomtax.filing.declaration.filed.v1",
            )
            payload = event["payload"]
            assert (payload["source"], payload["subject"], payload["type"]) == (
                "/roomtax/filing",
                d["tax_account"],
                event["type"],
            )
            unpredictable = ("id", "time")
            assert {k: v for k, v in payload.items() if k not in unpredictable} == {
                k: v for k, v in expected.items() if k not in unpredictable
            }
        return stored


class TestZeroLines:
    async def test_a_row_with_zero_lines_stores_exactly_these_json_columns(
        self, client: httpx.AsyncClient, db: DB
    ) -> None:
        """A zero line left out, sent as "0" and sent as "0.00": ``submitted`` writes every
        money line with two decimals; ``input`` (taxcore's ``DeclarationInput``) writes the
        Decimal as it is, so an omitted line (taxcore's default) is "0" and a sent one "0.00".
        Written out literally, as jsonb gives the columns back as text, and the event's copy
        (its input compared as a dict: the outbox's payload is jsonb too)."""
        fac = new_id("fac")
        hotel = await make_lodging(db, name="Zero lines")
        await authorize(db, hotel, fac)
        row = {
            "tax_account": hotel.tax_account,
            "room_revenue": "100.00",
            "paid_unused_rooms": "0",
            "room_penalties": "0.00",
            "room_nights": 1,
            "declared_tax": "9.00",
            "declared_total": "9.00",
        }
        r = await client.post(
            "/v1/remittance-schedules", json={"period": "2026-10", "rows": [row]}, headers=as_facilitator(fac)
        )
        assert r.status_code == 201, r.text
        (result,) = r.json()["results"]
        assert (result["status"], result["tax"], result["total_due"], result["flagged"]) == (
            "accepted",
            "9.00",
            "9.00",
            True,  # the taxable base left blank
        )
        async with db() as session:
            stored = (
                await session.execute(
                    text(
                        "SELECT CAST(submitted AS text), CAST(input AS text), CAST(findings AS text), "
                        "CAST(taxable_base AS text), CAST(declared_impact_fee AS text) "
                        "FROM declarations WHERE id = :id"
                    ),
                    {"id": result["declaration_id"]},
                )
            ).one()
        assert stored[0] == (
            '{"exempt": [], "books_kept": true, "comp_rooms": [], "room_nights": 1, '
            '"room_revenue": "100.00", "tax_itemized": true, "room_penalties": "0.00", '
            '"paid_unused_rooms": "0.00", "intermediary_retained": "0.00", '
            '"resort_and_other_fees": "0.00", "timeshare_owner_unit_days": 0, '
            '"all_inclusive_global_charges": "0.00", "surcharges_and_service_charges": "0.00"}'
        )
        assert stored[1] == (
            '{"casino": false, "exempt": [], "period": "2026-10", "books_kept": true, '
            '"comp_rooms": [], "room_nights": 1, "jurisdiction": "PR", "room_revenue": "100.00", '
            '"tax_itemized": true, "lodging_class": "hotel", "room_penalties": "0.00", '
            '"paid_unused_rooms": "0.00", "intermediary_retained": "0", "resort_and_other_fees": "0", '
            '"timeshare_owner_unit_days": 0, "all_inclusive_global_charges": "0", '
            '"surcharges_and_service_charges": "0"}'
        )
        assert stored[2] == (
            '[{"code": "omission", "line": "taxable_base", "message": "taxable base left blank", '
            '"section": "§2(18)(iii)", "computed": "100.00", "declared": null}]'
        )
        assert stored[3:] == ("100.00", None)
        events = await _events(db, [result["declaration_id"]])
        data = events[result["declaration_id"]]["payload"]["data"]
        assert data["input"] == json.loads(
            '{"jurisdiction": "PR", "lodging_class": "hotel", "casino": false, "period": "2026-10", '
            '"room_revenue": "100.00", "paid_unused_rooms": "0.00", "room_penalties": "0.00", '
            '"resort_and_other_fees": "0", "surcharges_and_service_charges": "0", '
            '"intermediary_retained": "0", "all_inclusive_global_charges": "0", "comp_rooms": [], '
            '"exempt": [], "room_nights": 1, "timeshare_owner_unit_days": 0, "tax_itemized": true, '
            '"books_kept": true}'
        )
        assert (data["taxable_base"], data["tax"], data["impact_fee"], data["declared_total"]) == (
            "100.00",
            "9.00",
            "0.00",
            "9.00",
        )
        assert data["findings"] == [
            {
                "code": "omission",
                "line": "taxable_base",
                "message": "taxable base left blank",
                "declared": None,
                "computed": "100.00",
                "section": "§2(18)(iii)",
            }
        ]


class TestChunkFailure:
    async def test_a_chunk_that_cannot_be_written_leaves_nothing_of_the_document(
        self, client: httpx.AsyncClient, db: DB, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Chunks of 2 rows, the third chunk's COPY refused as a concurrent version would be
        (while the fourth is being computed): a 409, and no declaration, event or schedule."""
        monkeypatch.setattr(schedules_service, "CHUNK_ROWS", 2)
        fac = new_id("fac")
        lodgings = [await make_lodging(db, name=f"F{i}") for i in range(7)]
        for lodging in lodgings:
            await authorize(db, lodging, fac)
        calls = []
        copy = schedules_repository.copy_declarations

        async def refuse_third(session: Any, records: Any) -> None:
            calls.append(len(records))
            if len(calls) == 3:
                raise asyncpg.UniqueViolationError("uq_declarations_filing_id_version")
            await copy(session, records)

        monkeypatch.setattr(schedules_repository, "copy_declarations", refuse_third)
        rows = [{"tax_account": x.tax_account, "room_revenue": "100.00"} for x in lodgings]
        r = await client.post(
            "/v1/remittance-schedules", json={"period": "2026-10", "rows": rows}, headers=as_facilitator(fac)
        )
        assert r.status_code == 409, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert calls == [2, 2, 2]
        accounts = [x.tax_account for x in lodgings]
        async with db() as session:
            counts = (
                await session.execute(
                    text(
                        "SELECT (SELECT count(*) FROM declarations WHERE tax_account = ANY(:a)), "
                        "(SELECT count(*) FROM outbox WHERE key = ANY(:a)), "
                        "(SELECT count(*) FROM remittance_schedules WHERE facilitator_id = :f)"
                    ),
                    {"a": accounts, "f": fac},
                )
            ).one()
        assert tuple(counts) == (0, 0, 0)

"""A remittance schedule stores, byte for byte, what filing each of its rows as one return
would: the same declaration rows and the same outbox events.

Seeded PR and USVI schedules (every lodging class, exemptions with and without a
certificate, declared figures right and wrong, timeshare unit-days, rows rejected for each
reason), filed twice (new declarations, then amendments of some of them), in chunks of a few
rows so that a chunk's lookups run while the one before it is computed
(:func:`filing.schedules.service.accept_schedule`). One facilitator files the schedules;
a twin facilitator, authorized by the same lodgings on the same days, files every row through
``POST /v1/declarations``. Each stored declaration (``to_jsonb`` of the row: PostgreSQL's
canonical text of every column) and each event (its topic, key, type and envelope) of the
schedule must equal its twin's once the identifiers that must differ are swapped: the
facilitator, the client, the declaration and filing ids, the event's id and time, and the
schedule's own columns. A rejected row must be refused by the one-return path too."""

from __future__ import annotations

import random
from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import pytest
from filing_factories import DB, as_facilitator, authorize, certify, make_lodging, new_id
from sqlalchemy import text

from filing.schedules import service as schedules_service
from taxcore.events import registry as ev

PERIOD = "2026-10"
SEED = 20261202

PR_CLASSES = (
    "hotel",
    "condohotel",
    "apartment_hotel",
    "hostelry",
    "guesthouse",
    "inn",
    "motel",
    "all_inclusive_hotel",
    "short_term_rental",
    "government_recreational_facility",
)
VI_CLASSES = ("hotel", "apartment_condominium_residence", "timeshare")
#: the schedule row's columns that are the one return's ``declared`` figures
DECLARED = {
    "declared_taxable_base": "taxable_base",
    "declared_tax": "tax",
    "declared_impact_fee": "impact_fee",
    "declared_total": "total",
}
#: the schedule's own columns: a one return has none
SCHEDULE_ONLY = ("seq", "created_at", "schedule_id", "schedule_row")


def _money(rng: random.Random, low: int, high: int) -> str:
    return f"{Decimal(rng.randint(low * 100, high * 100)) / 100:.2f}"


def _row(rng: random.Random, lodging: ev.LodgingRegistered, *, certified: str | None) -> dict[str, Any]:
    """A plausible row for ``lodging``: revenue, some fees, the intermediary's part, and
    declared figures that are sometimes the computed ones and sometimes not."""
    revenue = _money(rng, 100, 20_000)
    row: dict[str, Any] = {
        "tax_account": lodging.tax_account,
        "room_revenue": revenue,
        "room_nights": rng.randint(1, 200),
    }
    if rng.random() < 0.5:
        row["resort_and_other_fees"] = _money(rng, 0, 500)
    if rng.random() < 0.6:
        row["intermediary_retained"] = _money(rng, 0, 1_500)
    if lodging.jurisdiction == "VI":
        if lodging.lodging_class == "timeshare":
            row["timeshare_owner_unit_days"] = rng.randint(0, 30)
        row["tax_itemized"] = rng.random() < 0.7
    if certified is not None:
        row |= {"exemption": "pr_film_production", "exempt_amount": "100.00", "exemption_evidence": certified}
    if rng.random() < 0.5:
        row["declared_tax"] = _money(rng, 0, 2_000)
    if rng.random() < 0.3:
        row["declared_taxable_base"] = revenue
    if rng.random() < 0.3:
        row["declared_total"] = _money(rng, 0, 2_000)
    return row


def _one_return(row: dict[str, Any]) -> dict[str, Any]:
    """The ``POST /v1/declarations`` body of a schedule row."""
    body: dict[str, Any] = {"lodging": row["tax_account"], "period": PERIOD, "declared": {}}
    for name, value in row.items():
        if name in DECLARED:
            body["declared"][DECLARED[name]] = value
        elif name not in ("tax_account", "exemption", "exempt_amount", "exemption_evidence"):
            body[name] = value
    if "exemption" in row or "exempt_amount" in row:
        body["exempt"] = [
            {
                "exemption": row.get("exemption"),
                "amount": row.get("exempt_amount", "0"),
                "evidence": row.get("exemption_evidence"),
            }
        ]
    return body


async def _stored_text(db: DB, declaration_ids: list[str]) -> dict[str, str]:
    """Declaration id -> the stored row as PostgreSQL's canonical JSON text (jsonb: keys
    sorted, numerics as stored), the schedule's own columns left out."""
    async with db() as session:
        found = await session.execute(
            text(
                "SELECT d.id, (to_jsonb(d) - CAST(:drop AS text[]))::text "
                "FROM declarations d WHERE d.id = ANY(:ids)"
            ),
            {"ids": declaration_ids, "drop": list(SCHEDULE_ONLY)},
        )
        return {r[0]: r[1] for r in found}


async def _events_text(db: DB, declaration_ids: list[str]) -> dict[str, str]:
    """Declaration id -> its outbox row (topic, key, type, traceparent, the envelope without
    its id and time) as canonical JSON text."""
    async with db() as session:
        found = await session.execute(
            text(
                "SELECT o.payload->'data'->>'declaration_id', jsonb_build_object("
                "'topic', o.topic, 'key', o.key, 'event_type', o.event_type, 'traceparent', o.traceparent, "
                "'payload', o.payload - CAST(ARRAY['id', 'time'] AS text[]))::text FROM outbox o "
                "WHERE o.payload->'data'->>'declaration_id' = ANY(:ids)"
            ),
            {"ids": declaration_ids},
        )
        out: dict[str, str] = {}
        for declaration_id, body in found:
            assert declaration_id not in out, "one event per declaration"
            out[declaration_id] = body
        return out


def _swapped(value: str, swaps: dict[str, str]) -> str:
    for old, new in swaps.items():
        value = value.replace(old, new)
    return value


class TestScheduleEqualsOneReturns:
    @pytest.mark.parametrize("chunk_rows", [3, 2_000])
    async def test_seeded_pr_and_vi_schedules_with_amendments_and_rejections(
        self, client: httpx.AsyncClient, db: DB, monkeypatch: pytest.MonkeyPatch, chunk_rows: int
    ) -> None:
        monkeypatch.setattr(schedules_service, "CHUNK_ROWS", chunk_rows)
        rng = random.Random(SEED)
        scheduler, twin = new_id("fac"), new_id("fac")
        lodgings: list[ev.LodgingRegistered] = []
        for i, lodging_class in enumerate(PR_CLASSES):
            lodgings.append(await make_lodging(db, lodging_class=lodging_class, name=f"PR {lodging_class}"))
            if i % 4 == 0:
                lodgings.append(
                    await make_lodging(db, lodging_class=lodging_class, casino=True, name=f"PR casino {i}")
                )
        for lodging_class in VI_CLASSES:
            for n in range(2):
                lodgings.append(
                    await make_lodging(db, jurisdiction="VI", lodging_class=lodging_class, name=f"VI {n}")
                )
        film = await make_lodging(db, name="Film crew hotel")
        uncertified = await make_lodging(db, name="Claims a film crew without a certificate")
        later = await make_lodging(db, name="Authorized from November")
        stranger = await make_lodging(db, name="Never authorized")
        for fac in (scheduler, twin):
            for lodging in (*lodgings, film, uncertified):
                await authorize(db, lodging, fac)
            await authorize(db, later, fac, starts_on=date(2026, 11, 1))
        await certify(db, film, "PRTC-FILM-2026-007", date(2026, 9, 1), date(2026, 12, 31))

        rows: list[Any] = [_row(rng, lodging, certified=None) for lodging in lodgings]
        rows += [
            _row(rng, film, certified="PRTC-FILM-2026-007"),
            _row(rng, uncertified, certified="PRTC-FILM-2026-999"),
            _row(rng, later, certified=None),  # not authorized for the period
            _row(rng, stranger, certified=None),  # never authorized
            {**_row(rng, lodgings[0], certified=None)},  # the same lodging twice
            {"tax_account": lodgings[1].tax_account, "room_revenue": "-5.00"},  # not valid
            {"tax_account": lodgings[2].tax_account, "room_revenue": "10.00", "timeshare_owner_unit_days": 3},
        ]
        rng.shuffle(rows)
        first = await self._both_ways(client, db, rows, scheduler, twin, swaps={})
        assert first.accepted >= len(lodgings) + 1
        assert {"not_authorized", "not_authorized_for_period", "duplicate_lodging"} <= first.codes

        # amendments of every other lodging (and a new row for a lodging left out the first time)
        again: list[Any] = [_row(rng, lodging, certified=None) for lodging in lodgings[::2]]
        again.append(_row(rng, stranger, certified=None))
        rng.shuffle(again)
        second = await self._both_ways(client, db, again, scheduler, twin, swaps=first.swaps)
        assert 2 in second.versions

    async def _both_ways(
        self,
        client: httpx.AsyncClient,
        db: DB,
        rows: list[Any],
        scheduler: str,
        twin: str,
        *,
        swaps: dict[str, str],
    ) -> _Compared:
        """File ``rows`` as one schedule by ``scheduler`` and one by one by ``twin``; compare."""
        r = await client.post(
            "/v1/remittance-schedules",
            json={"period": PERIOD, "rows": [dict(x) for x in rows]},
            headers=as_facilitator(scheduler),
        )
        assert r.status_code == 201, r.text
        schedule = r.json()
        results = schedule["results"]
        assert [x["row"] for x in results] == list(range(1, len(rows) + 1))
        twin_headers = as_facilitator(twin)
        swaps = dict(swaps)
        pairs: list[tuple[str, str]] = []
        codes: set[str] = set()
        versions: set[int] = set()
        for raw, result in zip(rows, results, strict=True):
            codes |= {e["code"] for e in result["errors"]}
            if any(e["code"] == "duplicate_lodging" for e in result["errors"]):
                continue  # one return per lodging: a duplicate has no one-return counterpart
            one = await client.post("/v1/declarations", json=_one_return(raw), headers=twin_headers)
            if result["status"] == "rejected":
                assert one.status_code in (403, 404, 409, 422), (raw, result, one.text)
                continue
            assert one.status_code == 201, (raw, one.text)
            filed = one.json()
            assert (filed["version"], filed["computed"]["tax"], filed["computed"]["total_due"]) == (
                result["version"],
                result["tax"],
                result["total_due"],
            )
            versions.add(result["version"])
            pairs.append((result["declaration_id"], filed["id"]))
        assert pairs, "nothing accepted: the comparison would prove nothing"
        schedule_rows = await _stored_text(db, [s for s, _ in pairs])
        twin_rows = await _stored_text(db, [t for _, t in pairs])
        schedule_events = await _events_text(db, [s for s, _ in pairs])
        twin_events = await _events_text(db, [t for _, t in pairs])
        async with db() as session:
            filing_ids = dict(
                (
                    await session.execute(
                        text("SELECT id, filing_id FROM declarations WHERE id = ANY(:ids)"),
                        {"ids": [i for p in pairs for i in p]},
                    )
                ).all()
            )
        for s, t in pairs:
            swaps[s] = t
            swaps[filing_ids[s]] = filing_ids[t]
        swaps[scheduler] = twin  # the facilitator, and the client named after it (``submitted_by``)
        # the event names the schedule it came from (a one return's: none)
        events_swaps = {**swaps, f'"schedule_id": "{schedule["id"]}"': '"schedule_id": null'}
        for s, t in pairs:
            assert _swapped(schedule_rows[s], swaps) == twin_rows[t], (s, t)
            assert _swapped(schedule_events[s], events_swaps) == twin_events[t], (s, t)
        # the swaps do not make every pair alike: a row's figures are its own
        if len(pairs) > 1:
            (s0, _), (_, t1) = pairs[0], pairs[1]
            assert _swapped(schedule_rows[s0], swaps) != twin_rows[t1]
        return _Compared(len(pairs), codes, versions, swaps)


class _Compared:
    def __init__(self, accepted: int, codes: set[str], versions: set[int], swaps: dict[str, str]) -> None:
        self.accepted, self.codes, self.versions, self.swaps = accepted, codes, versions, swaps

"""Every query of the cross-checks: the lodging-period's latest versions, peers' ADRs, findings."""

from __future__ import annotations

import json
from bisect import bisect_left, insort
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from sqlalchemy import Select, and_, exists, func, select, text
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.ext.asyncio import AsyncSession

from assessment.accounts import repository as accounts
from assessment.crosschecks.models import CrosscheckFinding, CrosscheckRun
from assessment.models import Liability, LodgingView
from servicekit.consumer import once_per_batch
from servicekit.db import new_id
from taxcore.periods import Period
from taxcore.rules.crosscheck import Ascending, CrossFinding


@dataclass(frozen=True, slots=True)
class Filed:
    """A filing's version of a lodging-period, as the cross-checks read it."""

    declaration_id: str
    filing_id: str
    version: int
    filer_kind: str
    filed_on: date
    input: dict[str, Any]


@dataclass(slots=True)
class _Rates:
    """The peers of one group and lodging class as a batch's checks see them: the latest version of
    each filing (of that class) and its average daily rate (None: no room nights), the rates kept
    in ascending order.

    Built from the arrays fetched for the group and class (:meth:`fetched`), then kept current
    with the liabilities the batch adds (``merged``: how many of those past the state's mark were
    seen). A check reads the sorted rates less its own lodging's, not every peer's row again: with
    3,000 lodgings in a municipality that loop and the median's sort of the unsorted rates were
    most of the consumer's CPU per return at the event-lag bench's max rate (bench/README.md,
    session 13)."""

    latest: dict[str, tuple[int, Decimal | None]] = field(default_factory=dict)  # filing: version, ADR
    of_account: dict[str, list[str]] = field(default_factory=dict)  # tax account: its filings
    adrs: list[Decimal] = field(default_factory=list)  # of the latest versions, ascending
    merged: int = 0

    @classmethod
    def fetched(
        cls,
        accounts: Sequence[str],
        filings: Sequence[str],
        versions: Sequence[int],
        adrs: Sequence[Decimal | None],
    ) -> _Rates:
        """From ``_CHECK_STATE``'s arrays of a group and class: one entry per filing (the latest
        version of that class), decoded by asyncpg as arrays, not as a row each."""
        rates = cls(latest=dict(zip(filings, zip(versions, adrs, strict=True), strict=True)))
        if len(rates.latest) != len(filings):  # not one entry per filing: merged one by one
            rates = cls()
            for entry in zip(accounts, filings, versions, adrs, strict=True):
                rates.see(*entry)
            return rates
        of_account = rates.of_account
        for account, filing in zip(accounts, filings, strict=True):
            if account in of_account:
                of_account[account].append(filing)
            else:
                of_account[account] = [filing]
        rates.adrs = sorted(adr for adr in adrs if adr is not None)
        return rates

    def see(self, tax_account: str, filing: str, version: int, adr: Decimal | None) -> None:
        was = self.latest.get(filing)
        if was is None:
            self.of_account.setdefault(tax_account, []).append(filing)
        elif version <= was[0]:
            return
        elif was[1] is not None:
            del self.adrs[bisect_left(self.adrs, was[1])]
        self.latest[filing] = (version, adr)
        if adr is not None:
            insort(self.adrs, adr)

    def excluding(self, tax_account: str) -> Ascending:
        """The rates, ascending, less those of ``tax_account``'s filings."""
        out = Ascending(self.adrs)
        for filing in self.of_account.get(tax_account, ()):
            if (adr := self.latest[filing][1]) is not None:
                del out[bisect_left(out, adr)]
        return out


def _adr(inp: Mapping[str, Any]) -> Decimal | None:
    """The SQL's ``round(room_revenue / room_nights, 2)`` (where nights > 0) of a row not read
    back: both exact to the cent (revenue in cents over whole nights never falls within
    PostgreSQL's 16 digits of a half cent without being one), half away from zero."""
    nights, revenue = inp.get("room_nights"), inp.get("room_revenue")
    if nights is None or revenue is None:
        return None
    try:
        n, r = Decimal(str(nights)), Decimal(str(revenue))
    except InvalidOperation:
        return None
    if n <= 0:
        return None
    return (r / n).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


#: the columns of a finding row the cross-checks read back (``FINDING_FIELDS``) and their types
_FINDING_TYPES = {
    "rule": "text",
    "line": "text",
    "message": "text",
    "declared": "numeric",
    "reported": "numeric",
    "difference": "numeric",
    "section": "text",
    "parameters": "jsonb",
}

Pair = tuple[str, str]  # (tax account, period)
Group = tuple[str, str, str]  # (jurisdiction, municipality, period): whose lodgings are peers


@dataclass(slots=True)
class CheckState:
    """What the cross-checks of some lodging-periods read, fetched at once for them (a consumer
    batch's: :func:`prepare`; one lodging-period's: :func:`load`), kept current in memory by
    the runs they record (:func:`hold_run`) and by the liabilities added after the fetch
    (``accounts.added_liabilities`` past ``mark``)."""

    mark: int  # liabilities added in the transaction when fetched (those are in the database)
    filings: dict[Pair, dict[str, Filed]] = field(default_factory=dict)  # latest per filing
    runs: set[tuple[str, str]] = field(default_factory=set)  # (declaration, intermediaries key)
    #: each checked declaration's latest run: its ADR findings (carried over to its next runs)
    earlier: dict[str, list[CrossFinding]] = field(default_factory=dict)
    last_findings: dict[Pair, int] = field(default_factory=dict)  # the pair's latest run's findings
    peers: dict[Group, dict[str, _Rates]] = field(default_factory=dict)  # by group, then class
    #: groups whose peers were not fetched with the rest (no operator return of theirs in the
    #: batch: a schedule's rows need none), fetched on first use (:meth:`peer_adrs`)
    unfetched: set[Group] = field(default_factory=set)
    #: (jurisdiction, municipality) of the accounts of the liabilities added (None: no lodging)
    places: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    #: the liabilities added past ``mark`` by lodging-period, of the first ``indexed`` of them
    added: dict[Pair, list[Mapping[str, Any]]] = field(default_factory=dict)
    indexed: int = 0

    def latest_filings(self, session: AsyncSession, pair: Pair) -> list[Filed]:
        """The lodging-period's latest version of each filing."""
        latest = dict(self.filings.get(pair, {}))
        rows = accounts.added_liabilities(session)
        for row in rows[self.mark + self.indexed :]:  # each row indexed once: not a pass per check
            self.added.setdefault((row["tax_account"], row["period"]), []).append(row)
        self.indexed = len(rows) - self.mark
        for row in self.added.get(pair, ()):
            was = latest.get(row["filing_id"])
            if was is None or row["version"] > was.version:
                latest[row["filing_id"]] = Filed(
                    row["declaration_id"], row["filing_id"], row["version"], row["filer_kind"],
                    row["filed_on"], row["input"],
                )  # fmt: skip
        return list(latest.values())

    async def peer_adrs(
        self, session: AsyncSession, lodging: LodgingView, period: str, lodging_class: str
    ) -> Ascending:
        """Average daily rates of the other lodgings' operator returns (the latest version of
        each filing of that class) for the period, same class and municipality, ascending."""
        group = (lodging.jurisdiction, lodging.municipality, period)
        if group in self.unfetched:
            self.unfetched.discard(group)
            self.peers[group] = {c: rates for _, c, rates in (await _fetch(session, [], [group]))[1]}
        classes = self.peers.setdefault(group, {})
        rates = classes.get(lodging_class)
        if rates is None:  # no peer of the class fetched: only the batch's own returns
            rates = classes[lodging_class] = _Rates()
        added = accounts.added_liabilities(session)
        for row in added[self.mark + rates.merged :]:
            rates.merged += 1
            if (
                row["period"] != period
                or row["filer_kind"] != "operator"
                or row["lodging_class"] != lodging_class
            ):
                continue
            account = row["tax_account"]
            if account not in self.places:  # the batch's lodgings are in the session: no statement
                view = await session.get(LodgingView, account)
                self.places[account] = None if view is None else (view.jurisdiction, view.municipality)
            if self.places[account] == (lodging.jurisdiction, lodging.municipality):
                rates.see(account, row["filing_id"], row["version"], _adr(row["input"]))
        return rates.excluding(lodging.tax_account)


_STATE = "assessment.crosschecks.state"


def prepared(session: AsyncSession) -> CheckState | None:
    """The state the consumer's batch fetched for its lodging-periods (:func:`prepare`), if
    this transaction's."""
    held: tuple[object, CheckState] | None = session.info.get(_STATE)
    if held is None or held[0] is not session.sync_session.get_transaction():
        return None
    return held[1]


# What the cross-checks of some lodging-periods read, in one statement (one round trip), each
# row tagged by its part ``k`` (the three parts' columns side by side, NULL where not theirs):
# 0. the latest version of each filing of each lodging-period;
# 1. the lodging-periods' runs (the ADR findings of each, a row per finding), in write order;
# 2. the peers of the groups: from the municipality's lodgings to their operator returns of the
#    period by (tax account, period), so the cost follows the peers, not the period; a row per
#    group and class, its peers as arrays (decoded by asyncpg in C: thousands of peers in a
#    municipality are one row, not a row each).
_NO_PEERS = (
    "NULL::text[] AS p_accounts, NULL::text[] AS p_filings, NULL::integer[] AS p_versions, "
    "NULL::numeric[] AS p_adrs"
)
_CHECK_STATE = text(
    "SELECT 0 AS k, NULL::bigint AS n, tax_account, period, declaration_id, filing_id, version, "
    "filer_kind, filed_on, input, NULL::text AS lodging_class, "
    "NULL::text AS intermediaries_key, NULL::integer AS findings, "
    + ", ".join(f"NULL::{t} AS f_{c}" for c, t in _FINDING_TYPES.items())
    + f", 0::bigint AS o1, 0::bigint AS o2, {_NO_PEERS} FROM ("
    "SELECT DISTINCT ON (tax_account, period, filing_id) tax_account, period, declaration_id, filing_id, "
    "version, filer_kind, filed_on, input FROM liabilities WHERE (tax_account, period) IN "
    "(SELECT * FROM unnest(CAST(:a AS text[]), CAST(:p AS text[]))) "
    "ORDER BY tax_account, period, filing_id, version DESC) AS f "
    "UNION ALL SELECT 1, NULL, r.tax_account, r.period, r.declaration_id, NULL, NULL, NULL, NULL, NULL, "
    "NULL, r.intermediaries_key, r.findings, "
    + ", ".join(f"f.{c}" for c in _FINDING_TYPES)
    + ", r.seq, f.seq, NULL, NULL, NULL, NULL FROM crosscheck_runs r LEFT JOIN crosscheck_findings f "
    "ON f.run_id = r.id AND f.rule = 'adr_outlier' WHERE (r.tax_account, r.period) IN "
    "(SELECT * FROM unnest(CAST(:a AS text[]), CAST(:p AS text[]))) "
    "UNION ALL SELECT 2, g.n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, v.lodging_class, NULL, NULL, "
    + ", ".join("NULL" for _ in _FINDING_TYPES)
    + ", 0, 0, array_agg(v.tax_account), array_agg(v.filing_id), array_agg(v.version), "
    "array_agg(CASE WHEN (v.input->>'room_nights')::numeric > 0 THEN "
    "round((v.input->>'room_revenue')::numeric / (v.input->>'room_nights')::numeric, 2) END) "
    "FROM unnest(CAST(:j AS text[]), CAST(:m AS text[]), CAST(:gp AS text[])) "
    "WITH ORDINALITY AS g(j, m, p, n) "
    "JOIN lodgings l ON l.jurisdiction = g.j AND l.municipality = g.m "
    "CROSS JOIN LATERAL (SELECT DISTINCT ON (filing_id, lodging_class) tax_account, filing_id, version, "
    "lodging_class, input FROM liabilities WHERE tax_account = l.tax_account AND period = g.p "
    "AND filer_kind = 'operator' ORDER BY filing_id, lodging_class, version DESC) AS v "
    "GROUP BY g.n, v.lodging_class "
    "ORDER BY k, o1, o2"
)


async def _fetch(
    session: AsyncSession, wanted: Sequence[Pair], groups: Sequence[Group]
) -> tuple[list[Any], list[tuple[int, str, _Rates]]]:
    """``_CHECK_STATE``'s rows for ``wanted`` (parts 0 and 1, in order), and the peers of
    ``groups``: (the group's index in ``groups``, a lodging class, its peers)."""
    params = {
        "a": [x for x, _ in wanted],
        "p": [y for _, y in wanted],
        "j": [g[0] for g in groups],
        "m": [g[1] for g in groups],
        "gp": [g[2] for g in groups],
    }
    rows: list[Any] = []
    peers: list[tuple[int, str, _Rates]] = []
    for r in await session.execute(_CHECK_STATE, params):
        if r.k == 2:
            rates = _Rates.fetched(r.p_accounts, r.p_filings, r.p_versions, r.p_adrs)
            peers.append((r.n - 1, r.lodging_class, rates))
        else:
            rows.append(r)
    return rows, peers


async def load(
    session: AsyncSession,
    pairs: Iterable[Pair],
    lodgings: Mapping[str, LodgingView],
    *,
    peers_of: Collection[Pair] | None = None,
) -> CheckState:
    """What the cross-checks of ``pairs`` read (``lodgings``: their accounts' lodgings, for the
    peers), in one statement whatever their number (``_CHECK_STATE``): the latest version of
    each filing of each lodging-period, their runs (with the ADR findings of each), the peers'
    returns. ``peers_of``: only the groups of these pairs have their peers fetched now (a
    batch's operator returns), the others' on first use (:attr:`CheckState.unfetched`): a
    schedule's rows are not judged against peers, and a municipality's peers are a probe of
    each of its lodgings (50,000 in one municipality: most of a schedule's PostgreSQL time)."""
    await accounts.write_held(session)
    await write_held_runs(session)
    state = CheckState(mark=len(accounts.added_liabilities(session)))
    wanted = sorted(set(pairs))
    if not wanted:
        return state
    for pair in wanted:
        state.filings[pair] = {}

    def group_of(pair: Pair) -> Group | None:
        v = lodgings.get(pair[0])
        return None if v is None else (v.jurisdiction, v.municipality, pair[1])

    every = {g for pair in wanted if (g := group_of(pair)) is not None}
    chosen = every if peers_of is None else {g for pair in peers_of if (g := group_of(pair)) in every}
    groups = sorted(chosen)
    state.unfetched = every - chosen
    for group in groups:
        state.peers[group] = {}
    seen: set[tuple[str, str]] = set()
    rows, peers = await _fetch(session, wanted, groups)
    for n, lodging_class, rates in peers:
        state.peers[groups[n]][lodging_class] = rates
    for r in rows:
        if r.k == 0:
            state.filings[(r.tax_account, r.period)][r.filing_id] = Filed(
                r.declaration_id, r.filing_id, r.version, r.filer_kind, r.filed_on, r.input
            )
        else:
            run = (r.declaration_id, r.intermediaries_key)
            if run not in seen:  # the run's first row: it is the latest so far
                seen.add(run)
                state.earlier[r.declaration_id] = []
                state.last_findings[(r.tax_account, r.period)] = r.findings
            if r.f_rule is not None:
                finding = {c: getattr(r, f"f_{c}") for c in FINDING_FIELDS}
                state.earlier[r.declaration_id].append(CrossFinding.model_validate(finding))
    state.runs = seen
    return state


async def prepare(
    session: AsyncSession,
    pairs: Sequence[Pair],
    lodgings: Mapping[str, LodgingView],
    *,
    peers_of: Collection[Pair] | None = None,
) -> None:
    """A consumer batch's set-up: what the cross-checks of its lodging-periods read, fetched
    for all of them at once (:func:`load`; ``peers_of`` as there) and kept for the transaction
    (:func:`prepared`)."""
    state = await load(session, pairs, lodgings, peers_of=peers_of)
    session.info[_STATE] = (session.sync_session.get_transaction(), state)


#: what a finding row keeps of taxcore's finding
FINDING_FIELDS = tuple(_FINDING_TYPES)


def finding_fields(finding: object) -> dict[str, Any]:
    return {name: getattr(finding, name) for name in FINDING_FIELDS}


_RUN_COLUMNS = {
    "id": "text",
    "tax_account": "text",
    "jurisdiction": "text",
    "period": "text",
    "declaration_id": "text",
    "intermediary_declarations": "jsonb",
    "intermediaries_key": "text",
    "checked_on": "date",
    "findings": "integer",
}
_FINDING_COLUMNS = {
    "id": "text",
    "run_id": "text",
    "tax_account": "text",
    "period": "text",
    "declaration_id": "text",
    **_FINDING_TYPES,
}


def _unnest_select(columns: Mapping[str, str], prefix: str) -> str:
    """``(columns) SELECT ... FROM unnest(one array per column :<prefix><column>)`` in the arrays'
    order; JSON goes as text and is cast per row."""
    return (
        f"({', '.join(columns)}) SELECT "
        + ", ".join(f"CAST(u.{c} AS jsonb)" if t == "jsonb" else f"u.{c}" for c, t in columns.items())
        + " FROM unnest("
        + ", ".join(f"CAST(:{prefix}{c} AS {'text' if t == 'jsonb' else t}[])" for c, t in columns.items())
        + f") WITH ORDINALITY AS u({', '.join(columns)}, n) ORDER BY u.n"
    )


# the runs and their findings in one statement (the findings' foreign key is checked at its end)
_INSERT_RUNS = text(
    "WITH runs AS (INSERT INTO crosscheck_runs "
    + _unnest_select(_RUN_COLUMNS, "r_")
    + ") INSERT INTO crosscheck_findings "
    + _unnest_select(_FINDING_COLUMNS, "f_")
)


@dataclass(slots=True)
class _HeldRuns:
    runs: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    writes: int = 0


_HELD = "assessment.crosschecks.held"


def _cents(amount: Decimal) -> Decimal:
    """As NUMERIC(18,2) stores it (half away from zero)."""
    return amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def _held(session: AsyncSession) -> _HeldRuns:
    return accounts.transaction_state(session, _HELD, _HeldRuns)


async def hold_run(
    session: AsyncSession,
    state: CheckState,
    run: Mapping[str, Any],
    findings: Sequence[CrossFinding],
) -> str:
    """Record a run (``_RUN_COLUMNS`` but its id and count) and its findings: held until
    :func:`write_held_runs` (at the latest, the consumer batch's end; outside one, now), and
    ``state`` told. Returns the run's id."""
    run_id = new_id()
    held = _held(session)
    first = not held.runs
    held.runs.append({**run, "id": run_id, "findings": len(findings)})
    for f in findings:
        held.findings.append(
            {
                "id": new_id(),
                "run_id": run_id,
                "tax_account": run["tax_account"],
                "period": run["period"],
                "declaration_id": run["declaration_id"],
                **finding_fields(f),
            }
        )
    pair = (run["tax_account"], run["period"])
    state.runs.add((run["declaration_id"], run["intermediaries_key"]))
    # as read back: amounts NUMERIC(18,2), parameters JSONB (its keys by length, then bytes)
    state.earlier[run["declaration_id"]] = [
        CrossFinding.model_validate(
            {
                **finding_fields(f),
                **{k: _cents(getattr(f, k)) for k in ("declared", "reported", "difference")},
                "parameters": dict(sorted(f.parameters.items(), key=lambda kv: (len(kv[0].encode()), kv[0]))),
            }
        )
        for f in findings
        if f.rule == "adr_outlier"
    ]
    state.last_findings[pair] = len(findings)
    if first:
        wave = held.writes

        async def write() -> None:
            await write_held_runs(session)

        await once_per_batch(session, ("crosscheck runs", wave), write)
    return run_id


async def write_held_runs(session: AsyncSession) -> None:
    """Write the runs and findings :func:`hold_run` holds, in one statement. Every query of this
    module that reads them calls it first."""
    held = _held(session)
    if not held.runs:
        return
    runs, findings = held.runs, held.findings
    held.runs, held.findings = [], []
    held.writes += 1
    params: dict[str, list[Any]] = {}
    for prefix, columns, rows in (("r_", _RUN_COLUMNS, runs), ("f_", _FINDING_COLUMNS, findings)):
        for c, t in columns.items():
            values = [r[c] for r in rows]
            params[prefix + c] = [json.dumps(v) for v in values] if t == "jsonb" else values
    await session.execute(_INSERT_RUNS, params)


async def account_of_declaration(session: AsyncSession, declaration_id: str) -> str | None:
    stmt = select(Liability.tax_account).where(Liability.declaration_id == declaration_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def unchecked_periods(session: AsyncSession, tax_account: str) -> list[tuple[str, date]]:
    """The account's lodging-periods with an operator return that no run checked (it arrived
    before the lodging did), each with the filing date of its last return, oldest first."""
    await write_held_runs(session)
    unchecked = and_(
        Liability.filer_kind == "operator",
        ~exists().where(CrosscheckRun.declaration_id == Liability.declaration_id),
    )
    stmt = (
        select(Liability.period, func.max(Liability.filed_on))
        .where(Liability.tax_account == tax_account)
        .group_by(Liability.period)
        .having(func.bool_or(unchecked))
        .order_by(Liability.period)
    )
    return [(period, filed_on) for period, filed_on in (await session.execute(stmt)).all()]


async def account_runs(session: AsyncSession, tax_account: str) -> list[CrosscheckRun]:
    """Every run on the account's lodging-periods, in write order."""
    await write_held_runs(session)
    stmt = select(CrosscheckRun).where(CrosscheckRun.tax_account == tax_account).order_by(CrosscheckRun.seq)
    return list((await session.execute(stmt)).scalars().all())


async def findings_of_runs(session: AsyncSession, run_ids: list[str]) -> dict[str, list[CrosscheckFinding]]:
    await write_held_runs(session)
    out: dict[str, list[CrosscheckFinding]] = {r: [] for r in run_ids}
    stmt = (
        select(CrosscheckFinding).where(CrosscheckFinding.run_id.in_(run_ids)).order_by(CrosscheckFinding.seq)
    )
    for f in (await session.execute(stmt)).scalars().all():
        out[f.run_id].append(f)
    return out


def _latest_runs(*where: object) -> Select[str]:
    return (
        select(CrosscheckRun.id)
        .where(*where)  # type: ignore[arg-type]
        .ext(distinct_on(CrosscheckRun.tax_account, CrosscheckRun.period))
        .order_by(CrosscheckRun.tax_account, CrosscheckRun.period, CrosscheckRun.seq.desc())
    )


async def current_findings(
    session: AsyncSession,
    *,
    tax_account: str | None = None,
    period: str | None = None,
    jurisdiction: str | None = None,
    rule: str | None = None,
    limit: int = 500,
) -> list[CrosscheckFinding]:
    """The findings of each lodging-period's latest run."""
    await write_held_runs(session)
    where = []
    if tax_account is not None:
        where.append(CrosscheckRun.tax_account == tax_account)
    if period is not None:
        where.append(CrosscheckRun.period == period)
    if jurisdiction is not None:
        where.append(CrosscheckRun.jurisdiction == jurisdiction)
    stmt = select(CrosscheckFinding).where(CrosscheckFinding.run_id.in_(_latest_runs(*where)))
    if rule is not None:
        stmt = stmt.where(CrosscheckFinding.rule == rule)
    stmt = stmt.order_by(CrosscheckFinding.tax_account, CrosscheckFinding.period, CrosscheckFinding.seq)
    return list((await session.execute(stmt.limit(limit))).scalars().all())


async def latest_run_findings(session: AsyncSession, declaration_id: str) -> list[CrosscheckFinding] | None:
    """The findings of the latest run on one declaration version (None: never checked)."""
    await write_held_runs(session)
    stmt = (
        select(CrosscheckRun.id, CrosscheckFinding)
        .outerjoin(CrosscheckFinding, CrosscheckFinding.run_id == CrosscheckRun.id)
        .where(
            CrosscheckRun.id
            == select(CrosscheckRun.id)
            .where(CrosscheckRun.declaration_id == declaration_id)
            .order_by(CrosscheckRun.seq.desc())
            .limit(1)
            .scalar_subquery()
        )
        .order_by(CrosscheckFinding.seq)
    )
    rows = (await session.execute(stmt)).all()
    if not rows:
        return None
    return [f for _, f in rows if f is not None]


async def findings_on(session: AsyncSession, declaration_id: str) -> list[CrosscheckFinding]:
    """The findings recorded on one declaration version by its latest run."""
    return await latest_run_findings(session, declaration_id) or []


@dataclass(frozen=True, slots=True)
class CrosscheckCoverage:
    """TADAT P6-14: lodging-periods with intermediary data, and how many of them were checked."""

    with_intermediary_data: int
    checked: int
    with_findings: int


async def crosscheck_coverage(
    session: AsyncSession, *, jurisdiction: str, first: Period, last: Period
) -> CrosscheckCoverage:
    """For the indicators: lodging-periods in ``first``..``last`` where an intermediary filed, those a
    run compared with the operator's return, and those whose latest run has findings."""
    await write_held_runs(session)
    periods = [str(p) for p in _months(first, last)]
    with_data = (
        select(Liability.tax_account, Liability.period)
        .where(
            Liability.jurisdiction == jurisdiction,
            Liability.period.in_(periods),
            Liability.filer_kind == "facilitator",
        )
        .distinct()
        .subquery()
    )
    checked = (
        select(CrosscheckRun.tax_account, CrosscheckRun.period, CrosscheckRun.findings)
        .where(CrosscheckRun.jurisdiction == jurisdiction, CrosscheckRun.period.in_(periods))
        .where(func.jsonb_array_length(CrosscheckRun.intermediary_declarations) > 0)
        .ext(distinct_on(CrosscheckRun.tax_account, CrosscheckRun.period))
        .order_by(CrosscheckRun.tax_account, CrosscheckRun.period, CrosscheckRun.seq.desc())
        .subquery()
    )
    total = (await session.execute(select(func.count()).select_from(with_data))).scalar_one()
    stmt = select(func.count(), func.count().filter(checked.c.findings > 0)).select_from(
        with_data.join(
            checked,
            and_(checked.c.tax_account == with_data.c.tax_account, checked.c.period == with_data.c.period),
        )
    )
    done, flagged = (await session.execute(stmt)).one()
    return CrosscheckCoverage(
        with_intermediary_data=int(total), checked=int(done), with_findings=int(flagged)
    )


def _months(first: Period, last: Period) -> Sequence[Period]:
    out: list[Period] = []
    p = first
    while p <= last:
        out.append(p)
        p = p.next()
    return out

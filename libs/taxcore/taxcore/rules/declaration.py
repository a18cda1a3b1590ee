"""The monthly declaration: gross receipts, exemptions, taxable base, tax, impact fee.

PR (Act 272-2003): the Tax is the rate of §24(B) for the lodging's class times the
Room Occupancy Rate (§24(A)), which includes paid-but-unused rooms, room penalties
and any other charge or fee for a stay (§2(8)); casino comp rooms (§24(D)) and
bundled charges without a trustworthy breakdown (§24(C)) are valued at room-nights
times the greatest of the average daily rate, the room cost and the industry cost;
film crews with a Company certification (§24(F)) and timeshare sums (§24(G)) are
exempt.

VI (33 V.I.C. § 54): 12.5% of the gross room rate or rental, which includes energy
surcharges, maintenance fees, service charges and what agents and online
intermediaries keep (§54(b)(1)); stays of 90 days or more and owners occupying their
own timeshare are not "guests" (§54(a)(3)); owners pay the $25 per unit-day impact
fee instead (§54(b)(2)-(3)); without itemized tax the full charges are taxed (§54(c)).

Every rate, line list, exemption and fee is a parameter (``taxcore/parameters``);
the code only combines them. Rounding: the tax and the impact fee are rounded
half-up to the cent once, where the statute's amount exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from taxcore.errors import InvalidInput, ParameterError
from taxcore.jurisdictions import lodging_classes
from taxcore.money import CURRENCY, ZERO, fmt, round_cents
from taxcore.parameters import ParameterTree, default_tree
from taxcore.periods import Period
from taxcore.rules._common import Ref, as_decimal, check_amount, check_count, finite, param, trusted
from taxcore.trace import Step, Trace

__all__ = [
    "LINES",
    "CompValuation",
    "DeclarationInput",
    "DeclarationResult",
    "ExemptAmount",
    "compute_allowed",
    "compute_declaration",
    "declaration_amounts",
]

# Every money line a declaration may carry, in the order they are reported.
LINES: tuple[str, ...] = (
    "room_revenue",
    "paid_unused_rooms",
    "room_penalties",
    "resort_and_other_fees",
    "surcharges_and_service_charges",
    "intermediary_retained",
    "all_inclusive_global_charges",
)

ExemptionName = Literal["pr_film_production", "pr_timeshare", "vi_long_stay", "vi_timeshare_owner"]


def _no_float(value: Any) -> Any:
    if isinstance(value, float):
        raise ValueError("floats are not accepted for money; send a string like '12.50'")
    return value


class CompValuation(BaseModel):
    """Rooms the Company values itself (PR §24(C)-(D)).

    ``comp``: rooms given free to casino players or visitors (§24(D)).
    ``bundled``: room charges grouped with meals or services without a trustworthy
    breakdown (§24(C)); their package revenue is not also reported in ``room_revenue``.
    Valued at ``room_nights`` x the greatest of the three per-night values.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["comp", "bundled"]
    room_nights: int
    average_daily_rate: Decimal
    room_cost: Decimal
    industry_cost: Decimal

    _floats = field_validator("average_daily_rate", "room_cost", "industry_cost", mode="before")(_no_float)


class ExemptAmount(BaseModel):
    """An exempt amount included in the gross receipts, with its evidence."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exemption: ExemptionName
    amount: Decimal
    evidence: str | None = None

    _floats = field_validator("amount", mode="before")(_no_float)


class DeclarationInput(BaseModel):
    """What a lodging declares for one month (amounts in USD, in cents)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    jurisdiction: str
    lodging_class: str
    casino: bool = False
    period: str
    room_revenue: Decimal = Decimal(0)
    paid_unused_rooms: Decimal = Decimal(0)
    room_penalties: Decimal = Decimal(0)
    resort_and_other_fees: Decimal = Decimal(0)
    surcharges_and_service_charges: Decimal = Decimal(0)
    intermediary_retained: Decimal = Decimal(0)
    all_inclusive_global_charges: Decimal = Decimal(0)
    comp_rooms: list[CompValuation] = []
    exempt: list[ExemptAmount] = []
    room_nights: int = 0
    timeshare_owner_unit_days: int = 0
    tax_itemized: bool = True
    books_kept: bool = True

    _floats = field_validator(*LINES, mode="before")(_no_float)


class DeclarationResult(BaseModel):
    """The amounts a declaration comes to, and the trace that explains them."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    gross_receipts: Decimal
    exempt_total: Decimal
    taxable_base: Decimal
    rate: Decimal
    tax: Decimal
    impact_fee: Decimal
    total_due: Decimal
    currency: str = CURRENCY
    trace: Trace

    def explain(self) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = self.trace.to_list()
        return steps

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """JSON-ready amounts (strings with two decimals), optionally with the trace."""
        out: dict[str, Any] = {
            name: fmt(getattr(self, name))
            for name in ("gross_receipts", "exempt_total", "taxable_base", "tax", "impact_fee", "total_due")
        }
        out["rate"] = str(self.rate)
        out["currency"] = self.currency
        if explain:
            out["trace"] = self.explain()
        return out


# --------------------------------------------------------------------------- context


@dataclass(frozen=True, slots=True)
class _Context:
    """Every parameter a declaration of one jurisdiction and month needs (memoized)."""

    jurisdiction: str
    on: date
    classes: frozenset[str]
    lines: tuple[str, ...]
    lines_ref: Ref
    excluded: tuple[str, ...]
    excluded_ref: Ref
    by_class: dict[str, str]
    by_class_ref: Ref
    rates: dict[str, Ref]
    casino: Ref | None
    casino_prevails: Ref | None
    threshold: Ref | None
    low_rate: Ref | None
    global_classes: Ref | None
    comp_kinds: Ref | None
    bundled_excluded: Ref | None
    impact_fee: Ref | None
    impact_classes: Ref | None
    non_itemized: Ref | None
    exemptions: dict[str, Ref]
    #: (class, casino) -> its :class:`_Plan`, derived on first use (:func:`_plan`)
    plans: dict[tuple[str, bool], _Plan] = field(default_factory=dict)


#: how :func:`receipt_lines` treats a reported line: added, traced but not added, refused
_TAXED, _EXCLUDED, _REFUSED = "taxed", "excluded", "refused"


@dataclass(frozen=True, slots=True)
class _Plan:
    """What every declaration of one class (and casino licence) in one context derives the
    same way, whatever its amounts: derived once per class and context, the way the context
    reads the parameters once, so a 10,000-row schedule derives it once.

    ``lines``: each line of :data:`LINES`, in order, with how :func:`receipt_lines` treats it
    when reported and the description (or refusal) it traces; ``rate``: the class rate and
    its trace step when the average daily rate does not decide it (:func:`select_rate`'s
    answer, computed by it), else None. A ``Step`` is immutable and is shared by the traces."""

    lines: tuple[tuple[str, str, str], ...]
    rate: tuple[Decimal, Step] | None


def _line_treatment(ctx: _Context, name: str, lodging_class: str) -> tuple[str, str]:
    if name in ctx.lines:
        if (
            name == "all_inclusive_global_charges"
            and ctx.global_classes is not None
            and lodging_class not in (ctx.global_classes.value or ())
        ):
            return _REFUSED, f"only {', '.join(ctx.global_classes.value)} report global charges"
        return _TAXED, f"Line {name} is part of the taxable rate"
    if name in ctx.excluded:
        return _EXCLUDED, f"Line {name} is reported but not taxed"
    return _REFUSED, f"not a line of a {ctx.jurisdiction} declaration; must be 0"


def _plan(ctx: _Context, lodging_class: str, casino: bool) -> _Plan:
    plan = ctx.plans.get((lodging_class, casino))
    if plan is not None:
        return plan
    rate: tuple[Decimal, Step] | None = None
    try:
        if not _class_rate(ctx, lodging_class, casino)[3]:  # the amounts do not change the rate
            scratch = Trace()
            rate = (select_rate(ctx, lodging_class, casino, ZERO, 0, scratch), scratch.steps[-1])
    except ParameterError:  # raised by select_rate itself, where it always was: after the lines
        rate = None
    lines = tuple((name, *_line_treatment(ctx, name, lodging_class)) for name in LINES)
    plan = _Plan(lines=lines, rate=rate)
    ctx.plans[(lodging_class, casino)] = plan
    return plan


def _optional(tree: ParameterTree, jur: str, path: str, on: date) -> Ref | None:
    return param(tree, jur, path, on) if tree.has(jur, path) else None


def _str_list(ref: Ref) -> tuple[str, ...]:
    if not isinstance(ref.value, list) or not all(isinstance(x, str) for x in ref.value):
        raise ParameterError(ref.path, "must be a list of names")
    return tuple(ref.value)


def _context(tree: ParameterTree, jurisdiction: str, on: date) -> _Context:
    key = ("declaration", jurisdiction, on)
    ctx: _Context | None = tree.memo.get(key)
    if ctx is not None:
        return ctx
    classes = lodging_classes(jurisdiction, on, parameters=tree)
    lines_ref = param(tree, jurisdiction, "base.lines", on)
    excluded_ref = param(tree, jurisdiction, "base.excluded_lines", on)
    by_class_ref = param(tree, jurisdiction, "rates.by_class", on)
    if not isinstance(by_class_ref.value, dict):
        raise ParameterError("rates.by_class", "must map each class to a rate name")
    by_class = {str(k): str(v) for k, v in by_class_ref.value.items()}
    rates = {name: param(tree, jurisdiction, f"rates.{name}", on) for name in set(by_class.values())}
    for path_name in _str_list(lines_ref) + _str_list(excluded_ref):
        if path_name not in LINES:
            raise ParameterError("base.lines", f"{jurisdiction}: unknown line {path_name!r}")
    exemptions = {
        p.removeprefix("exemptions."): param(tree, jurisdiction, p, on)
        for p in tree.paths(jurisdiction)
        if p.startswith("exemptions.")
    }
    ctx = _Context(
        jurisdiction=jurisdiction,
        on=on,
        classes=classes,
        lines=_str_list(lines_ref),
        lines_ref=lines_ref,
        excluded=_str_list(excluded_ref),
        excluded_ref=excluded_ref,
        by_class=by_class,
        by_class_ref=by_class_ref,
        rates=rates,
        casino=_optional(tree, jurisdiction, "rates.casino", on),
        casino_prevails=_optional(tree, jurisdiction, "rates.casino_prevails", on),
        threshold=_optional(tree, jurisdiction, "rates.daily_rate_threshold", on),
        low_rate=_optional(tree, jurisdiction, "rates.at_or_below_daily_rate_threshold", on),
        global_classes=_optional(tree, jurisdiction, "base.global_charge_classes", on),
        comp_kinds=_optional(tree, jurisdiction, "base.comp_valuation_kinds", on),
        bundled_excluded=_optional(tree, jurisdiction, "base.bundled_excluded_classes", on),
        impact_fee=_optional(tree, jurisdiction, "impact_fee.per_unit_day", on),
        impact_classes=_optional(tree, jurisdiction, "impact_fee.classes", on),
        non_itemized=_optional(tree, jurisdiction, "base.non_itemized_full_charges", on),
        exemptions=exemptions,
    )
    tree.memo[key] = ctx
    return ctx


# --------------------------------------------------------------------------- computation


@dataclass(frozen=True, slots=True)
class Disallowed:
    """A claim the check disallows instead of refusing the declaration (lenient mode)."""

    code: str
    line: str
    message: str
    declared: Decimal | None
    allowed: Decimal | None
    section: str


def _classes_of(ref: Ref) -> tuple[str, ...] | None:
    """``classes`` of an exemption: ``all`` -> None (any class)."""
    spec = ref.value
    if not isinstance(spec, dict):
        raise ParameterError(ref.path, "must be a mapping with evidence_required and classes")
    classes = spec.get("classes", "all")
    if classes == "all":
        return None
    if not isinstance(classes, list):
        raise ParameterError(ref.path, "classes must be 'all' or a list")
    return tuple(str(c) for c in classes)


@lru_cache(maxsize=4096)
def _parse_period(text: str) -> Period:
    return Period.parse(text)


def resolve_period(inp_period: str, today: date | None) -> Period:
    period = _parse_period(inp_period)
    # ``period > Period.of(today)``: the month's (year, month) after today's, compared without
    # building today's period and calling the dataclass's ordering (read for every return)
    if today is not None and (period.year, period.month) > (today.year, today.month):
        raise InvalidInput("period", f"{period} is in the future (today is {today.isoformat()})")
    return period


def select_rate(
    ctx: _Context,
    lodging_class: str,
    casino: bool,
    room_revenue: Decimal,
    room_nights: int,
    trace: Trace,
    *,
    lenient: bool = False,
) -> Decimal:
    """The §24(B) / §54(b)(1) rate for the lodging's class (adds the rate step)."""
    ref, cited, casino_applies, measured = _class_rate(ctx, lodging_class, casino)
    if measured:
        assert ctx.threshold is not None
        assert ctx.low_rate is not None
        threshold = Decimal(ctx.threshold.value[lodging_class])
        if room_nights == 0 and room_revenue > 0:
            if not lenient:
                raise InvalidInput(
                    "room_nights",
                    f"a {lodging_class} is taxed by its average daily rate (room revenue / "
                    "room nights), so room_nights must be given with room revenue",
                )
            above = True  # cannot be measured: the class rate is kept
            adr: Decimal | None = None
        else:
            above = room_revenue > threshold * room_nights
            adr = (room_revenue / room_nights).quantize(Decimal("0.0001")) if room_nights else None
        trace.add(
            "average_daily_rate",
            ctx.threshold.section,
            f"Average daily rate {'exceeds' if above else 'does not exceed'} the "
            f"{lodging_class} threshold of {threshold}"
            if adr is not None or not above
            else f"Average daily rate cannot be measured; the {lodging_class} rate applies",
            adr,
            inputs={"room_revenue": room_revenue, "room_nights": room_nights},
            parameters=ctx.threshold.cite,
        )
        if not above:
            ref = ctx.low_rate
    rate: Decimal = as_decimal(ref)
    cited.update(ref.cite)
    trace.add(
        "rate",
        ref.section,
        f"Rate for a {lodging_class}{' with a casino' if casino_applies else ''}",
        rate,
        inputs={"lodging_class": lodging_class, "casino": casino},
        parameters=cited,
    )
    return rate


def class_rate(ctx: _Context, inp: DeclarationInput, trace: Trace, *, lenient: bool) -> Decimal:
    """The declaration's rate (:func:`select_rate`), its step taken from the class's plan
    where the average daily rate does not decide it: the same rate and the same step."""
    cls, casino = inp.lodging_class, inp.casino
    fixed = _plan(ctx, cls, casino).rate
    if fixed is None:
        return select_rate(ctx, cls, casino, inp.room_revenue, inp.room_nights, trace, lenient=lenient)
    trace.steps.append(fixed[1])
    return fixed[0]


def _class_rate(ctx: _Context, lodging_class: str, casino: bool) -> tuple[Ref, dict[str, Any], bool, bool]:
    """The rate parameter of the class (the casino rate where it applies), what it cites so
    far, whether the casino rate applies, and whether the average daily rate decides
    between it and the low rate (PR §24(B), §2(32))."""
    name = ctx.by_class.get(lodging_class)
    if name is None:
        raise ParameterError("rates.by_class", f"{ctx.jurisdiction}: no rate for {lodging_class}")
    ref = ctx.rates[name]
    cited: dict[str, Any] = {ctx.by_class_ref.path: name}
    casino_applies = False
    if casino and ctx.casino is not None:
        prevails = ctx.casino_prevails is not None and ctx.casino_prevails.value is True
        if prevails or name == "general":
            casino_applies = True
            ref = ctx.casino
            if ctx.casino_prevails is not None:
                cited.update(ctx.casino_prevails.cite)
    threshold_map = ctx.threshold.value if ctx.threshold is not None else None
    measured = (
        not casino_applies
        and isinstance(threshold_map, dict)
        and lodging_class in threshold_map
        and ctx.threshold is not None
        and ctx.low_rate is not None
    )
    return ref, cited, casino_applies, measured


def declaration_amounts(
    inp: DeclarationInput,
    tree: ParameterTree,
    today: date | None,
    *,
    lenient: bool,
) -> tuple[DeclarationResult, list[Disallowed]]:
    """The declaration's amounts, step by step as the statute builds them: gross receipts,
    exemptions, taxable base, tax, impact fee, total due.

    The one engine behind :func:`compute_declaration` (``lenient=False``: a claim the statute
    does not allow is refused) and :func:`compute_allowed` /
    :func:`taxcore.rules.check.review_declaration` (``lenient=True``: it is disallowed and
    reported). Call those; this is their shared machinery.
    """
    period, ctx = _declaration_context(inp, tree, today)
    disallowed: list[Disallowed] = []
    trace = Trace()
    gross = gross_receipts(inp, ctx, trace)
    tax_not_itemized(inp, ctx, trace)
    exempt_total = exemptions(inp, ctx, gross, trace, disallowed, lenient=lenient)
    taxable = taxable_base(ctx, gross, exempt_total, trace)
    rate = class_rate(ctx, inp, trace, lenient=lenient)
    rate_section = trace.steps[-1].citation
    tax = room_tax(taxable, rate, rate_section, trace)
    fee = impact_fee(inp, ctx, trace)
    total = total_due(ctx, tax, fee, rate_section, trace)
    values = {
        "gross_receipts": gross,
        "exempt_total": exempt_total,
        "taxable_base": taxable,
        "rate": rate,
        "tax": tax,
        "impact_fee": fee,
        "total_due": total,
        "currency": CURRENCY,
        "trace": trace,
    }
    # what validating them checks (finite amounts: a NaN rate parameter is refused), checked
    # here; on any doubt ``DeclarationResult(**values)`` raises its ValidationError as before
    if (
        finite(gross)
        and finite(exempt_total)
        and finite(taxable)
        and finite(rate)
        and finite(tax)
        and finite(fee)
        and finite(total)
    ):
        return trusted(DeclarationResult, values), disallowed
    return DeclarationResult(**values), disallowed


def _declaration_context(
    inp: DeclarationInput, tree: ParameterTree, today: date | None
) -> tuple[Period, _Context]:
    """The period declared and the parameters in force on its first day; refuses an unknown
    jurisdiction or class, a period after ``today`` and a negative count."""
    jur = inp.jurisdiction
    if not tree.has_jurisdiction(jur):
        raise InvalidInput(
            "jurisdiction",
            f"unknown jurisdiction {jur!r}; known: {', '.join(tree.jurisdictions())}",
        )
    period = resolve_period(inp.period, today)
    ctx = _context(tree, jur, period.first_day)
    cls = inp.lodging_class
    if cls not in ctx.classes:
        raise InvalidInput(
            "lodging_class",
            f"unknown lodging class {cls!r} for {jur}; known: {', '.join(sorted(ctx.classes))}",
        )
    check_count(inp.room_nights, "room_nights")
    check_count(inp.timeshare_owner_unit_days, "timeshare_owner_unit_days")
    return period, ctx


def gross_receipts(inp: DeclarationInput, ctx: _Context, trace: Trace) -> Decimal:
    """Gross receipts (PR §2(8), §24(A); VI §54(b)(1)): the taxable lines
    (:func:`receipt_lines`) plus the valued comp and bundled rooms (:func:`valued_rooms`)."""
    gross = receipt_lines(inp, ctx, trace) + valued_rooms(inp, ctx, trace)
    trace.add(
        "gross_receipts",
        ctx.lines_ref.section,
        "Gross receipts: the taxable lines plus valued rooms",
        gross,
        inputs={"sum_of": ["gross_receipts.line", "gross_receipts.comp_valuation"]},
    )
    return gross


def receipt_lines(inp: DeclarationInput, ctx: _Context, trace: Trace) -> Decimal:
    """The lines the statute taxes (PR §2(8): room charges, paid-but-unused rooms, room
    penalties, resort and other fees; VI §54(b)(1): surcharges, service charges and what
    intermediaries keep); a reported line the statute does not tax is traced, not added; the
    all-inclusive global charge only for the classes that report one (PR §24(B))."""
    total = ZERO
    values = inp.__dict__  # the lines' values, read without a getattr call each
    for name, treatment, text in _plan(ctx, inp.lodging_class, inp.casino).lines:
        value = values[name]
        if not value:  # a zero, however written, is a valid amount not reported (NaN is true)
            continue
        amount = check_amount(value, name)
        if not amount:
            continue
        if treatment == _TAXED:
            total += amount
            trace.record(
                "gross_receipts.line",
                ctx.lines_ref.section,
                text,
                amount,
                {"line": name},
                ctx.lines_ref.cite,
            )
        elif treatment == _EXCLUDED:
            trace.record(
                "gross_receipts.excluded",
                ctx.excluded_ref.section,
                text,
                None,
                {"line": name, "amount": amount},
                ctx.excluded_ref.cite,
            )
        else:
            raise InvalidInput(name, text)
    return total


def valued_rooms(inp: DeclarationInput, ctx: _Context, trace: Trace) -> Decimal:
    """Casino comp rooms (PR §24(D)) and bundled charges without a trustworthy breakdown
    (PR §24(C)): room-nights times the greatest of the average daily rate, the room cost and
    the industry cost, each rounded half-up to the cent."""
    total = ZERO
    cls = inp.lodging_class
    for i, comp in enumerate(inp.comp_rooms):
        where = f"comp_rooms[{i}]"
        kinds = ctx.comp_kinds.value if ctx.comp_kinds is not None else None
        if not isinstance(kinds, dict) or comp.kind not in kinds or ctx.comp_kinds is None:
            raise InvalidInput(f"{where}.kind", f"{comp.kind} valuation does not exist in {ctx.jurisdiction}")
        if (
            comp.kind == "bundled"
            and ctx.bundled_excluded is not None
            and cls in (ctx.bundled_excluded.value or ())
        ):
            raise InvalidInput(f"{where}.kind", f"a {cls} is taxed on its global charge (§24(C))")
        check_count(comp.room_nights, f"{where}.room_nights")
        for f in ("average_daily_rate", "room_cost", "industry_cost"):
            v: Decimal = getattr(comp, f)
            if not v.is_finite() or v < 0:
                raise InvalidInput(f"{where}.{f}", f"must be a non-negative amount, got {v}")
        greatest = max(comp.average_daily_rate, comp.room_cost, comp.industry_cost)
        valuation = round_cents(greatest * comp.room_nights)
        total += valuation
        trace.add(
            "gross_receipts.comp_valuation",
            str(kinds[comp.kind]),
            f"{comp.kind} rooms valued at room-nights x the greatest of average daily rate, "
            "room cost and industry cost",
            valuation,
            inputs={
                "room_nights": comp.room_nights,
                "greatest_value": greatest,
                "average_daily_rate": comp.average_daily_rate,
                "room_cost": comp.room_cost,
                "industry_cost": comp.industry_cost,
                "product_of": ["room_nights", "greatest_value"],
            },
            parameters=ctx.comp_kinds.cite,
        )
    return total


def tax_not_itemized(inp: DeclarationInput, ctx: _Context, trace: Trace) -> None:
    """VI §54(c): tax not itemized on the guest bill, the full charges are the base (traced;
    the lines already hold the full charges)."""
    if inp.tax_itemized is False and ctx.non_itemized is not None and ctx.non_itemized.value:
        trace.add(
            "tax_not_itemized",
            ctx.non_itemized.section,
            "Tax not itemized on the guest bill: the full charges are the base",
            None,
            inputs={"tax_itemized": False},
            parameters=ctx.non_itemized.cite,
        )


def exemptions(
    inp: DeclarationInput,
    ctx: _Context,
    gross: Decimal,
    trace: Trace,
    disallowed: list[Disallowed],
    *,
    lenient: bool,
) -> Decimal:
    """The exempt amounts (PR §24(F) film crews with a Company certification, §24(G)
    timeshare sums; VI §54(a)(3) stays of 90 days or more and owners on their own interest),
    never more than the gross receipts. ``lenient``: a claim the statute does not allow (a
    class that cannot claim it, missing evidence, beyond the gross receipts) is disallowed
    and appended to ``disallowed`` instead of raising ``InvalidInput``."""
    exempt_total = ZERO
    cls = inp.lodging_class
    for i, ex in enumerate(inp.exempt):
        where = f"exempt[{i}]"
        ref = ctx.exemptions.get(ex.exemption)
        if ref is None:
            raise InvalidInput(
                f"{where}.exemption",
                f"{ex.exemption} is not an exemption of {ctx.jurisdiction}; available: "
                f"{', '.join(sorted(ctx.exemptions)) or 'none'}",
            )
        amount = check_amount(ex.amount, f"{where}.amount")
        spec = ref.value
        classes = _classes_of(ref)
        if classes is not None and cls not in classes:
            message = f"{ex.exemption} is not available to a {cls} (only {', '.join(classes)})"
            if not lenient:
                raise InvalidInput(f"{where}.exemption", message)
            disallowed.append(Disallowed("deduction_beyond_limit", where, message, amount, ZERO, ref.section))
            trace.add("exemption.disallowed", ref.section, message, None, inputs={"amount": amount})
            continue
        if spec.get("evidence_required") and not (ex.evidence and ex.evidence.strip()):
            message = f"{ex.exemption} requires its evidence (certificate number)"
            if not lenient:
                raise InvalidInput(f"{where}.evidence", message)
            disallowed.append(Disallowed("omission", f"{where}.evidence", message, amount, ZERO, ref.section))
            trace.add("exemption.disallowed", ref.section, message, None, inputs={"amount": amount})
            continue
        if not amount:
            continue
        exempt_total += amount
        trace.add(
            "exemption",
            ref.section,
            f"Exempt: {ex.exemption}",
            -amount,
            inputs={"exemption": ex.exemption, "evidence": ex.evidence},
            parameters={ref.path: spec},
        )
    if exempt_total > gross:
        lines_section = ctx.lines_ref.section
        claimed, excess = exempt_total, exempt_total - gross
        message = f"exemptions {claimed} exceed the gross receipts {gross}"
        if not lenient:
            raise InvalidInput("exempt", message)
        disallowed.append(
            Disallowed("deduction_beyond_limit", "exempt", message, claimed, gross, lines_section)
        )
        exempt_total = gross
        trace.add(
            "exemption",
            lines_section,
            "Exemptions beyond the gross receipts are disallowed",
            excess,
            inputs={"claimed": claimed},
        )
    return exempt_total


def taxable_base(ctx: _Context, gross: Decimal, exempt_total: Decimal, trace: Trace) -> Decimal:
    """The taxable base (PR §24(A); VI §54(b)(1)): gross receipts less exemptions."""
    taxable = gross - exempt_total
    trace.add(
        "taxable_base",
        ctx.lines_ref.section,
        "Taxable base: gross receipts less exemptions",
        taxable,
        inputs={"sum_of": ["gross_receipts", "exemption"]},
    )
    return taxable


def room_tax(taxable: Decimal, rate: Decimal, rate_section: str, trace: Trace) -> Decimal:
    """The tax (PR §24(B); VI §54(b)(1)): the taxable base times the rate
    (:func:`select_rate`, cited by ``rate_section``), rounded half-up to the cent once."""
    tax = round_cents(taxable * rate)
    trace.add(
        "tax",
        rate_section,
        "Tax: taxable base x rate, rounded half-up to the cent",
        tax,
        inputs={"product_of": ["taxable_base", "rate"]},
    )
    return tax


def impact_fee(inp: DeclarationInput, ctx: _Context, trace: Trace) -> Decimal:
    """VI §54(b)(2)-(3): the Environmental/Infrastructure Impact Fee, owner unit-days times the
    fee per unit-day, for the classes it applies to; refused where the jurisdiction has none."""
    units = inp.timeshare_owner_unit_days
    if not units:
        return ZERO
    cls = inp.lodging_class
    if ctx.impact_fee is None:
        raise InvalidInput("timeshare_owner_unit_days", f"{ctx.jurisdiction} has no per-unit-day impact fee")
    allowed = ctx.impact_classes.value if ctx.impact_classes is not None else None
    if isinstance(allowed, list) and cls not in allowed:
        raise InvalidInput(
            "timeshare_owner_unit_days",
            f"the impact fee applies to {', '.join(allowed)}, not to a {cls}",
        )
    fee = as_decimal(ctx.impact_fee)
    amount = round_cents(fee * units)
    trace.add(
        "impact_fee",
        ctx.impact_fee.section,
        "Environmental/Infrastructure Impact Fee: owner unit-days x fee per unit-day",
        amount,
        inputs={
            "timeshare_owner_unit_days": units,
            "per_unit_day": fee,
            "product_of": ["timeshare_owner_unit_days", "per_unit_day"],
        },
        parameters=ctx.impact_fee.cite,
    )
    return amount


def total_due(ctx: _Context, tax: Decimal, fee: Decimal, rate_section: str, trace: Trace) -> Decimal:
    """What the declaration owes (PR §28; VI §54(f)): the tax plus the impact fee."""
    total = tax + fee
    trace.add(
        "total_due",
        rate_section if ctx.impact_fee is None else f"{rate_section}; {ctx.impact_fee.section}",
        "Total due: tax plus impact fee",
        total,
        inputs={"sum_of": ["tax", "impact_fee"]},
    )
    return total


def compute_declaration(
    inp: DeclarationInput,
    *,
    parameters: ParameterTree | None = None,
    today: date | None = None,
) -> DeclarationResult:
    """Compute a monthly declaration (PR §24, §2(8); VI §54(b)-(c)) as the filer files it.

    Call this to accept a declaration (filing). For the figures the agency assesses a
    declaration on, call :func:`compute_allowed`; for those and the errors found, call
    :func:`taxcore.rules.check.review_declaration`.

    Raises ``InvalidInput`` naming the field for input the statute cannot apply to
    (negative amounts, unknown class, an exemption of another jurisdiction or class,
    a film exemption without its certificate, exemptions above the gross receipts, a
    period after ``today``) and ``ParameterError`` for a date outside the parameters.
    """
    result, _ = declaration_amounts(inp, parameters or default_tree(), today, lenient=False)
    return result


def compute_allowed(
    inp: DeclarationInput,
    *,
    parameters: ParameterTree | None = None,
    today: date | None = None,
) -> DeclarationResult:
    """The amounts the statute allows for a declaration as filed (PR §32; VI §54).

    Like :func:`compute_declaration`, except that a claim the statute does not allow
    (a film exemption without its certificate, exemptions above the gross receipts,
    an exemption the class cannot claim) is disallowed, with a trace step, instead of
    refusing the declaration: these are the figures a return with findings is
    assessed on. Input the statute cannot apply to at all still raises.

    Call this for the allowed figures alone (assessment's liabilities, audits, cross-checks);
    :func:`taxcore.rules.check.review_declaration` gives the same figures with the findings.
    """
    result, _ = declaration_amounts(inp, parameters or default_tree(), today, lenient=True)
    return result

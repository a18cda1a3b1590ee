"""Helpers shared by the declaration, check and estimate rules.

Trace convention (checked by :func:`verify_trace`): a step that totals others lists
the rules it adds in ``inputs["sum_of"]`` (the results of every earlier step with
one of those rule names, since the previous step of the same rule, add up to its
result); a step that multiplies lists them in ``inputs["product_of"]`` and is the
product rounded half-up to the cent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, TypeVar

from pydantic import BaseModel

from taxcore.errors import InvalidInput, ParameterError
from taxcore.money import CENT, round_cents
from taxcore.parameters import ParameterTree, ParameterValue
from taxcore.trace import Trace

__all__ = ["Ref", "as_decimal", "check_amount", "check_count", "finite", "param", "trusted", "verify_trace"]


@dataclass(frozen=True, slots=True)
class Ref:
    """A parameter value read for a rule, kept to cite it in the trace."""

    path: str
    value: Any
    section: str
    provisional: bool
    cite: dict[str, Any]  # {path: value}, as the trace's ``parameters`` show it


def param(tree: ParameterTree, jurisdiction: str, path: str, on: date) -> Ref:
    pv: ParameterValue = tree.get(jurisdiction, path, on)
    return Ref(pv.path, pv.value, pv.section, pv.provisional, {pv.path: pv.value})


def as_decimal(ref: Ref) -> Decimal:
    v = ref.value
    if isinstance(v, bool) or not isinstance(v, Decimal | int):
        raise ParameterError(ref.path, f"must be a number, got {v!r}")
    return Decimal(v)


def check_amount(value: Decimal, field: str) -> Decimal:
    """A declared money amount: finite, not negative, in whole cents."""
    if not value.is_finite():
        raise InvalidInput(field, "must be a finite amount")
    if value < 0:
        raise InvalidInput(field, f"must not be negative, got {value}")
    cents = value.quantize(CENT)
    if value != cents:
        raise InvalidInput(field, f"must be in whole cents, got {value}")
    return cents


_M = TypeVar("_M", bound=BaseModel)
_set_attribute = object.__setattr__


def finite(value: object) -> bool:
    """``value`` is a ``Decimal`` (exactly) and finite: what validating a ``Decimal`` field
    checks of a ``Decimal`` (it refuses NaN and infinities)."""
    return type(value) is Decimal and value.is_finite()


def trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """``cls(**values)`` without validating ``values`` again: EVERY field of ``cls``, in its
    order, each already what validating it gives (the caller checks what validation would:
    :func:`finite` amounts, exact types; on any doubt it calls ``cls(**values)``, whose error
    stays the one raised). For taxcore's small result models, built for every return (~1 us
    each validated). Only for models without private attributes or ``model_post_init``."""
    instance = cls.__new__(cls)
    _set_attribute(instance, "__dict__", values)
    _set_attribute(instance, "__pydantic_fields_set__", set(values))
    _set_attribute(instance, "__pydantic_extra__", None)
    _set_attribute(instance, "__pydantic_private__", None)
    return instance


def check_count(value: int, field: str) -> int:
    if value < 0:
        raise InvalidInput(field, f"must not be negative, got {value}")
    return value


def verify_trace(trace: Trace) -> list[str]:
    """Return the list of trace steps that do not add (or multiply) up; empty when sound."""
    problems: list[str] = []
    for i, step in enumerate(trace.steps):
        sum_of = step.inputs.get("sum_of")
        product_of = step.inputs.get("product_of")
        if sum_of is not None:
            start = 0
            for j in range(i - 1, -1, -1):
                if trace.steps[j].rule == step.rule:
                    start = j + 1
                    break
            total = sum(
                (
                    Decimal(s.result)
                    for s in trace.steps[start:i]
                    if s.rule in sum_of and isinstance(s.result, Decimal | int)
                ),
                Decimal(0),
            )
            if not isinstance(step.result, Decimal | int) or total != step.result:
                problems.append(f"step {i} {step.rule}: {step.result} != sum {total}")
        if product_of is not None:
            factors: list[Decimal] = []
            for name in product_of:
                if name in step.inputs:
                    factors.append(Decimal(step.inputs[name]))
                    continue
                found = [
                    s.result
                    for s in trace.steps[:i]
                    if s.rule == name and isinstance(s.result, Decimal | int)
                ]
                if not found:
                    problems.append(f"step {i} {step.rule}: no factor {name}")
                    break
                factors.append(Decimal(found[-1]))
            else:
                product = Decimal(1)
                for f in factors:
                    product *= f
                if round_cents(product) != step.result:
                    problems.append(f"step {i} {step.rule}: {step.result} != {round_cents(product)}")
    return problems

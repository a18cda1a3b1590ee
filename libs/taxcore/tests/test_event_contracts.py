"""Events are typed by their contract: each contract class carries its own type and topic."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import BaseModel

from taxcore.events import CONTRACTS, EventData, contract, contract_of, is_contract, load_all
from taxcore.events.filing import DeclarationAmended, DeclarationFiled, Finding


def _subclasses(cls: type[EventData]) -> set[type[EventData]]:
    found: set[type[EventData]] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def _models_in(annotation: Any) -> set[type[BaseModel]]:
    """Every pydantic model an annotation names (through list[...], X | None, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {annotation}
    return {m for arg in typing.get_args(annotation) for m in _models_in(arg)}


def _shipped() -> set[type[EventData]]:
    load_all()
    return {c for c in _subclasses(EventData) if c.__module__.startswith("taxcore.events")}


class TestContractClasses:
    def test_each_contract_class_carries_its_own_type_and_topic(self) -> None:
        load_all()
        for event_type, (topic, model) in CONTRACTS.items():
            assert (vars(model)["event_type"], vars(model)["topic"]) == (event_type, topic)
            assert contract_of(event_type) is model

    def test_no_two_contracts_share_a_type(self) -> None:
        load_all()
        models = [model for _, model in CONTRACTS.values()]
        assert len(set(models)) == len(models) == len(CONTRACTS)

    def test_a_subclass_of_a_contract_registers_its_own_type(self) -> None:
        """``class X(DeclarationFiled)`` without ``@contract`` would be sent as a declaration."""
        inherited = [c.__qualname__ for c in _shipped() if hasattr(c, "event_type") and not is_contract(c)]
        assert inherited == []

    def test_every_payload_class_is_a_contract_a_part_of_one_or_a_base_of_one(self) -> None:
        """A payload model with no type would be unusable: emit refuses it."""
        contracts = {model for _, model in CONTRACTS.values()}
        parts = {
            m
            for model in contracts
            for field in model.model_fields.values()
            for m in _models_in(field.annotation)
        }
        bases = {base for model in contracts for base in model.__mro__[1:]}
        assert sorted(c.__qualname__ for c in _shipped() - contracts - parts - bases) == []

    def test_a_part_has_no_type(self) -> None:
        assert not hasattr(Finding, "event_type")
        assert not is_contract(Finding)

    def test_an_amendment_is_its_own_contract(self) -> None:
        assert DeclarationFiled.event_type == "roomtax.filing.declaration.filed.v1"
        assert DeclarationAmended.event_type == "roomtax.filing.declaration.amended.v1"
        assert DeclarationAmended.topic == DeclarationFiled.topic == "filing.declarations"

    def test_registering_a_second_class_for_a_type_is_refused(self) -> None:
        class Impostor(EventData):
            declaration_id: str

        with pytest.raises(ValueError, match="already the type of DeclarationFiled"):
            contract("roomtax.filing.declaration.filed.v1", "filing.declarations")(Impostor)
        assert contract_of("roomtax.filing.declaration.filed.v1") is DeclarationFiled
        assert not hasattr(Impostor, "event_type")

"""Typed errors raised by taxcore. Each names the offending field."""

from __future__ import annotations


class TaxcoreError(ValueError):
    """Base of every taxcore error; ``field`` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class InvalidInput(TaxcoreError):
    """An input that the statute cannot apply to (negative count, unknown class...)."""


class ParameterError(TaxcoreError):
    """A parameter file that is malformed, or a parameter asked for outside its range."""

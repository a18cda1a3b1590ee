"""Effective-dated, cited law parameters read from YAML.

The folder tree is the namespace: ``PR/rates/casino.yaml`` is the parameter
``rates.casino`` of jurisdiction ``PR``. A file looks like (OpenFisca style)::

    description: Room occupancy tax rate for lodgings with casinos.
    unit: rate                       # optional
    metadata:
      reference:
        section: "§24(B)"
        title: Puerto Rico Room Occupancy Rate Tax Act (Act 272-2003)
      open_ended: true               # or: last_valid: 2030-12-31 (exactly one of them)
    values:
      2003-09-01:
        value: 0.11
        provisional: false           # optional, default false
        note: why, when provisional  # optional (required when provisional)
        reference:                   # optional override of metadata.reference
          section: "§24(B)"

Rules of the format (the loader rejects anything else, naming file and line):

* Numbers become ``Decimal`` from the YAML *text* (``0.11`` -> ``Decimal("0.11")``),
  integers included (``25`` -> ``Decimal("25")``); never through ``float``.
  Use :func:`decimal_value` / :func:`int_value` for a typed read.
* ``value: null`` repeals the parameter from that date.
* Effective dates are ``YYYY-MM-DD``; dates inside values are returned as ISO strings.
* Strict range: a date before the first value, on or after a repeal, or after
  ``metadata.last_valid`` raises :class:`~taxcore.errors.ParameterError`. Every file
  must say either ``last_valid`` or ``open_ended: true``: an open-ended parameter
  is one whose statute has no sunset, so it stays in force until a later value.
* Duplicate keys, unknown fields and malformed dates are errors.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, TypeAlias

import yaml
from yaml.nodes import MappingNode, ScalarNode

from taxcore.errors import InvalidInput, ParameterError

__all__ = [
    "Parameter",
    "ParameterTree",
    "ParameterValue",
    "decimal_value",
    "default_tree",
    "get",
    "int_value",
    "jurisdictions",
    "load_tree",
    "reset_default_tree",
    "value",
]

Value: TypeAlias = Decimal | int | str | bool | list[Any] | dict[str, Any] | None

PACKAGE_ROOT = Path(__file__).parent
#: Environment variable naming another parameter root for :func:`default_tree` (a directory
#: with one ``<JUR>/`` folder per jurisdiction, like this package's). Unset: the packaged tree.
PARAMETERS_ENV = "TAXCORE_PARAMETERS"
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_JURISDICTION_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SEGMENT_RE = re.compile(r"^[a-z][a-z0-9_]*$")

_TOP_FIELDS = frozenset({"description", "unit", "metadata", "values", "documentation"})
_REQUIRED_TOP = ("description", "metadata", "values")
_METADATA_FIELDS = frozenset({"reference", "last_valid", "open_ended"})
_REFERENCE_FIELDS = frozenset({"section", "title", "href"})
_ENTRY_FIELDS = frozenset({"value", "reference", "provisional", "note"})


@dataclass(frozen=True)
class ParameterValue:
    """One parameter value in force on a date, with its citation."""

    path: str
    value: Value
    effective: date
    section: str
    title: str
    provisional: bool
    note: str | None


@dataclass(frozen=True)
class _Entry:
    effective: date
    value: Value
    section: str
    title: str
    provisional: bool
    note: str | None


@dataclass(frozen=True)
class Parameter:
    """A parameter file: its effective-dated values and its validity window."""

    jurisdiction: str
    path: str
    description: str
    unit: str | None
    source: str
    entries: tuple[_Entry, ...]
    last_valid: date | None  # None means open-ended

    def at(self, on: date) -> ParameterValue:
        """The value in force on ``on``; strict: no extrapolation outside the range."""
        dates = [e.effective for e in self.entries]
        i = bisect.bisect_right(dates, on) - 1
        where = f"{self.jurisdiction} {self.path}"
        if i < 0:
            raise ParameterError(
                self.path,
                f"{where} has no value on {on.isoformat()}: first value is effective "
                f"{self.entries[0].effective.isoformat()}",
            )
        if self.last_valid is not None and on > self.last_valid:
            raise ParameterError(
                self.path,
                f"{where} has no value on {on.isoformat()}: last valid date is {self.last_valid.isoformat()}",
            )
        entry = self.entries[i]
        if entry.value is None:
            raise ParameterError(
                self.path,
                f"{where} has no value on {on.isoformat()}: repealed from {entry.effective.isoformat()}",
            )
        return ParameterValue(
            path=self.path,
            value=entry.value,
            effective=entry.effective,
            section=entry.section,
            title=entry.title,
            provisional=entry.provisional,
            note=entry.note,
        )


class ParameterTree:
    """All parameters of all jurisdictions under one root directory.

    Lookups are cached per ``(jurisdiction, path, date)``: rules ask for the same
    few parameters for every declaration of a period.
    """

    def __init__(self, parameters: dict[tuple[str, str], Parameter], root: Path) -> None:
        self._parameters = parameters
        self.root = root
        self._jurisdictions = sorted({j for j, _ in parameters})
        self._jurisdiction_set = frozenset(self._jurisdictions)
        self._cache: dict[tuple[str, str, date], ParameterValue] = {}
        # derived data that rules compute from parameters (per tree, so temp trees in
        # tests never see the packaged tree's values)
        self.memo: dict[Any, Any] = {}

    def jurisdictions(self) -> list[str]:
        return list(self._jurisdictions)

    def has_jurisdiction(self, jurisdiction: str) -> bool:
        return jurisdiction in self._jurisdiction_set

    def paths(self, jurisdiction: str) -> list[str]:
        self._check_jurisdiction(jurisdiction)
        return sorted(p for j, p in self._parameters if j == jurisdiction)

    def has(self, jurisdiction: str, path: str) -> bool:
        return (jurisdiction, path) in self._parameters

    def parameter(self, jurisdiction: str, path: str) -> Parameter:
        try:
            return self._parameters[(jurisdiction, path)]
        except KeyError:
            self._check_jurisdiction(jurisdiction)
            raise ParameterError(path, f"no parameter {path!r} for {jurisdiction}") from None

    def get(self, jurisdiction: str, path: str, on: date) -> ParameterValue:
        key = (jurisdiction, path, on)
        try:
            return self._cache[key]
        except KeyError:
            pass
        result = self.parameter(jurisdiction, path).at(on)
        if len(self._cache) > 100_000:  # bound memory for long-running services
            self._cache.clear()
        self._cache[key] = result
        return result

    def value(self, jurisdiction: str, path: str, on: date) -> Value:
        return self.get(jurisdiction, path, on).value

    def _check_jurisdiction(self, jurisdiction: str) -> None:
        if jurisdiction not in self._jurisdictions:
            raise InvalidInput(
                "jurisdiction",
                f"unknown jurisdiction {jurisdiction!r}; known: {', '.join(self._jurisdictions)}",
            )


# --------------------------------------------------------------------------- YAML loading


class _Map(dict[Any, Any]):
    """A mapping that remembers the line of each key (1-based) and its own line."""

    line: int
    lines: dict[Any, int]


class _Loader(yaml.SafeLoader):
    source = "<string>"


def _fail(loader: _Loader, node: yaml.Node, message: str) -> ParameterError:
    return ParameterError(
        _path_of(loader.source), f"{loader.source} line {node.start_mark.line + 1}: {message}"
    )


def _path_of(source: str) -> str:
    parts = Path(source).with_suffix("").parts
    return ".".join(parts[1:]) if len(parts) > 1 else source


def _construct_mapping(loader: _Loader, node: yaml.Node) -> _Map:
    assert isinstance(node, MappingNode)
    loader.flatten_mapping(node)
    result = _Map()
    result.line = node.start_mark.line + 1
    result.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise _fail(loader, key_node, "a mapping key must be a scalar") from None
        if key in result:
            raise _fail(
                loader,
                key_node,
                f"duplicate key {_key_text(key)!r} (first at line {result.lines[key]})",
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.lines[key] = key_node.start_mark.line + 1
    return result


def _key_text(key: Any) -> str:
    return key.isoformat() if isinstance(key, date) else str(key)


def _construct_number(loader: _Loader, node: yaml.Node) -> Decimal:
    assert isinstance(node, ScalarNode)
    text = str(node.value).replace("_", "")
    try:
        number = Decimal(text)
    except InvalidOperation:
        try:  # hex/octal/sexagesimal ints: let YAML parse them, exactly, as int
            number = Decimal(loader.construct_yaml_int(node))
        except Exception:  # noqa: BLE001 - any failure is a malformed number
            raise _fail(loader, node, f"malformed number {node.value!r}") from None
    if not number.is_finite():
        raise _fail(loader, node, f"number must be finite, got {node.value!r}")
    return number


def _construct_timestamp(loader: _Loader, node: yaml.Node) -> date:
    assert isinstance(node, ScalarNode)
    text = str(node.value)
    if not _DATE_RE.match(text):
        raise _fail(loader, node, f"malformed date {text!r}: expected YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise _fail(loader, node, f"malformed date {text!r}: {exc}") from None


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_number)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_number)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)


def _err(source: str, line: int, message: str) -> ParameterError:
    return ParameterError(_path_of(source), f"{source} line {line}: {message}")


def _check_fields(source: str, mapping: _Map, allowed: frozenset[str], what: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise _err(
                source,
                mapping.lines[key],
                f"unknown field {_key_text(key)!r} in {what}; allowed: {', '.join(sorted(allowed))}",
            )


def _as_date(source: str, line: int, raw: Any, what: str) -> date:
    if isinstance(raw, datetime):  # pragma: no cover - the loader never builds datetimes
        raise _err(source, line, f"malformed date in {what}: {raw!r}")
    if isinstance(raw, date):
        return raw
    if isinstance(raw, str) and _DATE_RE.match(raw):
        try:
            return date.fromisoformat(raw)
        except ValueError:
            pass
    raise _err(source, line, f"malformed date in {what}: {_key_text(raw)!r}, expected YYYY-MM-DD")


def _plain(raw: Any) -> Value:
    """Strip loader bookkeeping; dates inside values become ISO strings."""
    if isinstance(raw, dict):
        return {str(k): _plain(v) for k, v in raw.items()}
    if isinstance(raw, list):
        return [_plain(v) for v in raw]
    if isinstance(raw, date):
        return raw.isoformat()
    if raw is None or isinstance(raw, Decimal | bool | str):
        return raw
    raise TypeError(f"unsupported YAML value {raw!r}")  # pragma: no cover


def _reference(source: str, line: int, raw: Any, what: str) -> tuple[str | None, str | None]:
    if isinstance(raw, str):
        return raw, None
    if not isinstance(raw, _Map):
        raise _err(source, line, f"{what} must be a mapping with section and title")
    _check_fields(source, raw, _REFERENCE_FIELDS, what)
    section, title = raw.get("section"), raw.get("title")
    for name, v in (("section", section), ("title", title)):
        if v is not None and not isinstance(v, str):
            raise _err(source, raw.lines[name], f"{what}.{name} must be a string")
    return section, title


def parse_parameter(text: str, *, jurisdiction: str, path: str, source: str) -> Parameter:
    """Parse one parameter file's text (``source`` names it in errors)."""
    loader = _Loader(text)
    loader.source = source
    try:
        doc = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise _err(source, line, f"invalid YAML: {exc.problem or exc}") from None
    finally:
        loader.dispose()
    if not isinstance(doc, _Map):
        raise _err(source, 1, "a parameter file must be a mapping")
    _check_fields(source, doc, _TOP_FIELDS, "the file")
    for name in _REQUIRED_TOP:
        if name not in doc:
            raise _err(source, doc.line, f"missing required field {name!r}")
    description = doc["description"]
    if not isinstance(description, str):
        raise _err(source, doc.lines["description"], "description must be a string")
    unit = doc.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise _err(source, doc.lines["unit"], "unit must be a string")

    metadata = doc["metadata"]
    if not isinstance(metadata, _Map):
        raise _err(source, doc.lines["metadata"], "metadata must be a mapping")
    _check_fields(source, metadata, _METADATA_FIELDS, "metadata")
    if "reference" not in metadata:
        raise _err(source, metadata.line, "metadata.reference (section, title) is required")
    section, title = _reference(
        source, metadata.lines["reference"], metadata["reference"], "metadata.reference"
    )
    if not section or not title:
        raise _err(source, metadata.lines["reference"], "metadata.reference needs section and title")
    open_ended = metadata.get("open_ended", False)
    if not isinstance(open_ended, bool):
        raise _err(source, metadata.lines["open_ended"], "open_ended must be true or false")
    last_valid: date | None = None
    if "last_valid" in metadata:
        last_valid = _as_date(
            source, metadata.lines["last_valid"], metadata["last_valid"], "metadata.last_valid"
        )
    if (last_valid is None) == (not open_ended):
        raise _err(
            source,
            metadata.line,
            "metadata must state exactly one of last_valid: YYYY-MM-DD or open_ended: true",
        )

    values = doc["values"]
    if not isinstance(values, _Map) or not values:
        raise _err(source, doc.lines["values"], "values must be a non-empty mapping of dates")
    entries: list[_Entry] = []
    seen: dict[date, int] = {}
    for raw_key, raw_entry in values.items():
        line = values.lines[raw_key]
        effective = _as_date(source, line, raw_key, "values")
        if effective in seen:
            raise _err(
                source, line, f"duplicate key {effective.isoformat()!r} (first at line {seen[effective]})"
            )
        seen[effective] = line
        if not isinstance(raw_entry, _Map):
            raise _err(source, line, "each value must be a mapping with a 'value' field")
        _check_fields(source, raw_entry, _ENTRY_FIELDS, f"values.{effective.isoformat()}")
        if "value" not in raw_entry:
            raise _err(source, raw_entry.line, "missing required field 'value'")
        provisional = raw_entry.get("provisional", False)
        if not isinstance(provisional, bool):
            raise _err(source, raw_entry.lines["provisional"], "provisional must be true or false")
        note = raw_entry.get("note")
        if note is not None and not isinstance(note, str):
            raise _err(source, raw_entry.lines["note"], "note must be a string")
        if provisional and not note:
            raise _err(source, raw_entry.line, "a provisional value must carry a note saying why")
        e_section, e_title = section, title
        if "reference" in raw_entry:
            o_section, o_title = _reference(
                source, raw_entry.lines["reference"], raw_entry["reference"], "reference"
            )
            e_section, e_title = o_section or section, o_title or title
        entries.append(
            _Entry(
                effective=effective,
                value=_plain(raw_entry["value"]),
                section=e_section,
                title=e_title,
                provisional=provisional,
                note=note,
            )
        )
    entries.sort(key=lambda e: e.effective)
    if last_valid is not None and last_valid < entries[0].effective:
        raise _err(source, metadata.lines["last_valid"], "last_valid is before the first value")
    return Parameter(
        jurisdiction=jurisdiction,
        path=path,
        description=description,
        unit=unit,
        source=source,
        entries=tuple(entries),
        last_valid=last_valid,
    )


def load_tree(root: Path) -> ParameterTree:
    """Load every ``<JUR>/**/*.yaml`` under ``root`` (a directory)."""
    root = Path(root)
    parameters: dict[tuple[str, str], Parameter] = {}
    for jur_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if jur_dir.name.startswith(("_", ".")):
            continue
        if not _JURISDICTION_RE.match(jur_dir.name):
            raise ParameterError(
                "jurisdiction", f"{jur_dir.name}: a jurisdiction folder is upper case, like 'PR'"
            )
        for file in sorted(jur_dir.rglob("*.y*ml")):
            rel = file.relative_to(jur_dir).with_suffix("")
            source = str(file.relative_to(root))
            if file.suffix not in (".yaml", ".yml"):
                continue
            for seg in rel.parts:
                if not _SEGMENT_RE.match(seg):
                    raise ParameterError(source, f"{source}: name segment {seg!r} must be lower_snake_case")
            path = ".".join(rel.parts)
            if (jur_dir.name, path) in parameters:
                raise ParameterError(path, f"{source}: parameter {path} defined twice")
            parameters[(jur_dir.name, path)] = parse_parameter(
                file.read_text(encoding="utf-8"),
                jurisdiction=jur_dir.name,
                path=path,
                source=source,
            )
    _check_citations(parameters)
    return ParameterTree(parameters, root)


#: Parameters a jurisdiction must have once it has the key (a jurisdiction that issues
#: notices states every citation its notice prints: taxcore never borrows another
#: jurisdiction's section, and no service supplies a default).
REQUIRED_WITH: dict[str, tuple[str, ...]] = {
    # a jurisdiction that takes payments prints receipts naming the agency and the statute
    "payments.application_order": ("agency.name", "agency.statute"),
    "assessment.notice_section": (
        "agency.name",
        "assessment.notice_response_days",
        "assessment.clerical_assessment_section",
        "assessment.estimate_section",
        "assessment.partial_dispute_prepay",
        "bonds.required",
    ),
}
#: Citations a jurisdiction must have when the flag is ever true (a notice says "pay the part
#: you do not dispute" only where the rule exists, and speaks of a bond only where bonds are
#: required: then it must cite its own section for it).
REQUIRED_WHEN_TRUE: dict[str, tuple[str, ...]] = {
    "bonds.required": ("bonds.draw_section",),
    "assessment.partial_dispute_prepay": ("assessment.partial_dispute_section",),
}


def _check_citations(parameters: dict[tuple[str, str], Parameter]) -> None:
    """Load-time checks that keep each jurisdiction's law its own.

    * every parameter that :data:`REQUIRED_WITH` / :data:`REQUIRED_WHEN_TRUE` asks for exists
      (a missing citation is a load error, never a fallback at use time);
    * no section, and no value of a ``unit: text`` parameter (a citation printed on letters),
      names another jurisdiction of the tree ("PR §34" in the Virgin Islands' tree).
    """
    codes = sorted({j for j, _ in parameters})
    foreign_codes = {
        j: re.compile(r"\b(" + "|".join(re.escape(c) for c in codes if c != j) + r")\b")
        for j in codes
        if len(codes) > 1
    }
    for (jur, path), parameter in sorted(parameters.items()):
        for need in REQUIRED_WITH.get(path, ()):
            if (jur, need) not in parameters:
                raise ParameterError(
                    need, f"{parameter.source}: {jur} has {path} and so needs {need} (none found)"
                )
        if any(e.value is True for e in parameter.entries):
            for need in REQUIRED_WHEN_TRUE.get(path, ()):
                if (jur, need) not in parameters:
                    raise ParameterError(
                        need, f"{parameter.source}: {jur} {path} is true, so {jur} needs {need} to cite"
                    )
        foreign = foreign_codes.get(jur)
        if foreign is None:
            continue
        for entry in parameter.entries:
            texts = [entry.section]
            if parameter.unit == "text" and isinstance(entry.value, str):
                texts.append(entry.value)
            for text in texts:
                match = foreign.search(text)
                if match:
                    raise ParameterError(
                        path,
                        f"{parameter.source}: {jur} {path} cites {match.group(1)} law ({text!r}); "
                        f"a jurisdiction's parameters cite its own statute only",
                    )


_DEFAULT: ParameterTree | None = None


def default_tree() -> ParameterTree:
    """The parameters every rule uses by default (loaded once, then cached for the process).

    The packaged tree, unless the environment variable ``TAXCORE_PARAMETERS`` names another
    root directory: a deployment (or a test) points taxcore, and so every service, at a tree
    with another jurisdiction or an amended value without a code change.
    """
    global _DEFAULT
    if _DEFAULT is None:
        root = os.environ.get(PARAMETERS_ENV)
        _DEFAULT = load_tree(Path(root) if root else PACKAGE_ROOT)
    return _DEFAULT


def reset_default_tree() -> None:
    """Forget the cached default tree: the next :func:`default_tree` reloads it (re-reading
    ``TAXCORE_PARAMETERS``). For tests that switch roots; a service reads it once at start."""
    global _DEFAULT
    _DEFAULT = None


def get(jurisdiction: str, path: str, on: date, *, parameters: ParameterTree | None = None) -> ParameterValue:
    """The value of ``path`` for ``jurisdiction`` in force on ``on``, with its citation."""
    return (parameters or default_tree()).get(jurisdiction, path, on)


def value(jurisdiction: str, path: str, on: date, *, parameters: ParameterTree | None = None) -> Value:
    """Just the value of :func:`get`."""
    return (parameters or default_tree()).get(jurisdiction, path, on).value


def decimal_value(
    jurisdiction: str, path: str, on: date, *, parameters: ParameterTree | None = None
) -> Decimal:
    """A numeric parameter as ``Decimal`` (ParameterError if it is not a number)."""
    v = value(jurisdiction, path, on, parameters=parameters)
    if isinstance(v, bool) or not isinstance(v, Decimal | int):
        raise ParameterError(path, f"{jurisdiction} {path} is not a number: {v!r}")
    return Decimal(v)


def int_value(jurisdiction: str, path: str, on: date, *, parameters: ParameterTree | None = None) -> int:
    """A whole-number parameter as ``int`` (ParameterError if it is not integral)."""
    d = decimal_value(jurisdiction, path, on, parameters=parameters)
    if d != d.to_integral_value():
        raise ParameterError(path, f"{jurisdiction} {path} is not a whole number: {d}")
    return int(d)


def jurisdictions(*, parameters: ParameterTree | None = None) -> list[str]:
    """Jurisdiction codes that have parameters (``['PR', 'VI']``)."""
    return (parameters or default_tree()).jurisdictions()

"""The OpenAPI document every service serves, made into a product once, here.

:func:`build_document` runs FastAPI's generator and then completes every operation:

* a stable ``operationId`` (``declarations.file``, ``notices.list``...): a route's own
  ``operation_id`` wins, else one is derived from its path and method (:func:`operation_id`);
* a ``description``: the route's own (its ``description=`` or docstring) or, failing that,
  its summary followed by who may call it, whether it replays with ``Idempotency-Key``
  and the errors it answers with;
* its error responses as RFC 9457 problem+json (``#/components/schemas/Problem``):
  401 and 403 on an authenticated operation, 404 on one with a path parameter or an
  authenticated one (another caller's object is a 404), 409 on an authenticated write,
  422 on one with parameters or a body, 413 on one with a body;
* the ``Idempotency-Key`` header on every POST the chassis makes idempotent
  (:class:`servicekit.db.TransactionalRoute`);
* request and response examples: a schema's own ``examples`` where it gives them, else
  built from the schema (:func:`example_for`) so that they validate against it;
* an OAuth2 client-credentials security scheme naming the registry's token URL, and
  the ``servers`` the service is reached at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, routing
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from servicekit.db import IDEMPOTENT_METHODS, TransactionalRoute
from servicekit.errors import PROBLEM_JSON, PROBLEM_SCHEMA

SECURITY_SCHEME = "oauth2"
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
ERROR_DESCRIPTIONS = {
    "401": "No valid access token (missing, expired, revoked or signed with an unknown key)",
    "403": "The caller's role may not do this",
    "404": "Not found, or not the caller's (another caller's object is a 404)",
    "409": "Conflicts with the object's current state",
    "413": "The request body is larger than the service accepts",
    "422": "Validation failed: the problem's errors name each field by JSON pointer",
}
IDEMPOTENCY_HEADER: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        "Any unique string (at most 200 characters, e.g. a UUID). A retry with the same key and "
        "body replays the first response (header `Idempotent-Replayed: true`) and changes nothing; "
        "the same key with another body is a 422. Keys are kept 7 days, per client."
    ),
    "schema": {"type": "string", "maxLength": 200},
    "example": "4f0c1d2e-file-2026-11",
}

_VERBS = {"post": "create", "put": "replace", "patch": "update", "delete": "delete"}


def operation_id(method: str, path: str) -> str:
    """``GET /v1/notices`` → ``notices.list``; ``GET /v1/notices/{id}`` → ``notices.get``;
    ``POST /v1/cases/{id}/review`` → ``cases.review.create``; ``GET /healthz`` → ``healthz.get``.

    A route that names a better verb passes ``operation_id=`` (``declarations.file``).
    """
    parts = [p for p in path.strip("/").split("/") if p]
    versioned = bool(parts) and parts[0] == "v1"
    named = [p for p in parts[versioned:] if not p.startswith("{")]
    words = [re.sub(r"[^a-z0-9]+", "_", p.lower()).strip("_") for p in named]
    if method == "get":
        verb = "list" if versioned and not parts[-1].startswith("{") else "get"
    else:
        verb = _VERBS[method]
    return ".".join([*words, verb])


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].split("/")[-1]]
    return schema


_PATTERN_EXAMPLES = {
    r"^\d{1,16}(\.\d{1,2})?$": "125.00",
    r"^-?\d{1,16}(\.\d{1,2})?$": "125.00",
    r"^\d{4}-\d{2}$": "2026-10",
    r"^\d{4}-(0[1-9]|1[0-2])$": "2026-10",
    r"^[A-Z]{2}$": "PR",
    r"^[^@\s]+@[^@\s]+$": "filer@example.com",
    r"^[^@\s]+@[^@\s]+\.[^@\s]+$": "filer@example.com",
    r"^https://": "https://hooks.example.com/roomtax",
}
_FORMAT_EXAMPLES = {
    "date": "2026-10-31",
    "date-time": "2026-11-15T14:30:00Z",
    "uuid": "3f2c7a9e-5b1d-4c8e-9a60-2d4b8e1f7c03",
    "email": "filer@example.com",
    "uri": "https://example.com/",
    "binary": "",
}


def example_for(doc: dict[str, Any], schema: dict[str, Any], depth: int = 0) -> Any:
    """An instance of ``schema`` (its own example first), deterministic, for the document."""
    schema = _resolve(doc, schema)
    for key in ("examples",):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema[key][0]
    if "example" in schema:
        return schema["example"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("default") is not None:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        options = [o for o in schema.get(key, []) if _resolve(doc, o).get("type") != "null"]
        if options:
            return example_for(doc, options[0], depth)
        if key in schema:
            return None
    if schema.get("allOf"):
        return example_for(doc, schema["allOf"][0], depth)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        required = set(schema.get("required", []))
        return {
            name: example_for(doc, sub, depth + 1)
            for name, sub in schema.get("properties", {}).items()
            if name in required or depth < 2
        }
    if kind == "array":
        if depth > 3:
            return []
        return [example_for(doc, schema.get("items", {}), depth + 1)] * max(1, schema.get("minItems", 1))
    if kind == "string":
        if schema.get("pattern") in _PATTERN_EXAMPLES:
            return _PATTERN_EXAMPLES[schema["pattern"]]
        if schema.get("format") in _FORMAT_EXAMPLES:
            return _FORMAT_EXAMPLES[schema["format"]]
        text = "example"
        low, high = schema.get("minLength", 0), schema.get("maxLength", 64)
        return (text * (1 + low // len(text)))[: max(low, min(len(text), high))]
    if kind == "integer":
        return max(int(schema.get("minimum", 1)), int(schema.get("exclusiveMinimum", 0)) + 1)
    if kind == "number":
        return float(schema.get("minimum", 1))
    if kind == "boolean":
        return False
    return None


def _authenticated(op: dict[str, Any]) -> bool:
    return bool(op.get("security"))


def _describe(op: dict[str, Any], method: str, idempotent: bool) -> str:
    lines = [op.get("summary") or op["operationId"]]
    lines[0] = lines[0].rstrip(".") + "."
    if _authenticated(op):
        lines.append("Needs an OAuth2 client-credentials access token (`Authorization: Bearer …`).")
    else:
        lines.append("Open: no access token needed.")
    if idempotent:
        lines.append("Send `Idempotency-Key` so that a retry is applied once.")
    errors = sorted(code for code in op.get("responses", {}) if code.startswith("4"))
    if errors:
        lines.append("Errors are RFC 9457 problem+json: " + ", ".join(errors) + ".")
    return "\n\n".join(lines)


def _add_examples(doc: dict[str, Any], op: dict[str, Any]) -> None:
    body = op.get("requestBody", {}).get("content", {})
    responses = [
        media
        for code, response in op.get("responses", {}).items()
        if code.startswith("2")
        for media in response.get("content", {}).values()
    ]
    for media in [*body.values(), *responses]:
        schema = media.get("schema")
        if schema and "example" not in media and "examples" not in media:
            if _resolve(doc, schema).get("format") == "binary":
                continue
            media["example"] = example_for(doc, schema)


def _problem(code: str, existing: dict[str, Any] | None) -> dict[str, Any]:
    description = (existing or {}).get("description") or ERROR_DESCRIPTIONS[code]
    if description.startswith("Validation Error"):
        description = ERROR_DESCRIPTIONS[code]
    return {"description": description, "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}}}


def _errors(op: dict[str, Any], method: str, path: str) -> Iterable[str]:
    authenticated = _authenticated(op)
    has_body = "requestBody" in op
    if authenticated:
        yield from ("401", "403", "404")
        if method != "get":
            yield "409"
    elif "{" in path:
        yield "404"
    if has_body or op.get("parameters"):
        yield "422"
    if has_body:
        yield "413"


def build_document(
    app: FastAPI,
    *,
    title: str,
    version: str,
    description: str,
    servers: list[dict[str, str]],
    token_url: str,
) -> dict[str, Any]:
    """The service's OpenAPI document, complete (see the module's docstring)."""
    explicit: dict[tuple[str, str], str] = {}
    idempotent: set[tuple[str, str]] = set()
    for context in routing.iter_route_contexts(app.routes):  # routers included, with their prefixes
        route = context.original_route
        if not isinstance(route, APIRoute):
            continue
        for method in context.methods or ():
            key = (method.lower(), str(context.path_format))
            if route.operation_id:
                explicit[key] = route.operation_id
            if isinstance(route, TransactionalRoute) and method in IDEMPOTENT_METHODS:
                idempotent.add(key)
    seen: dict[str, str] = {}
    doc = get_openapi(
        title=title, version=version, description=description, routes=app.routes, servers=servers
    )
    components = doc.setdefault("components", {})
    components.setdefault("schemas", {})["Problem"] = PROBLEM_SCHEMA
    components["schemas"].pop("HTTPValidationError", None)
    components["schemas"].pop("ValidationError", None)
    components["securitySchemes"] = {
        SECURITY_SCHEME: {
            "type": "oauth2",
            "description": "OAuth2 client credentials: POST client_id and client_secret to the token URL.",
            "flows": {"clientCredentials": {"tokenUrl": token_url, "scopes": {}}},
        }
    }
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            op["operationId"] = explicit.get((method, path)) or operation_id(method, path)
            where = f"{method.upper()} {path}"
            first = seen.setdefault(op["operationId"], where)
            if first != where:
                raise ValueError(f"operationId {op['operationId']!r} of {where} is also {first}")
            if op.get("security"):
                op["security"] = [{SECURITY_SCHEME: []}]
            params = op.setdefault("parameters", [])
            honours = (method, path) in idempotent
            if honours and not any(p.get("name", "").lower() == "idempotency-key" for p in params):
                params.append(IDEMPOTENCY_HEADER)
            if not params:
                del op["parameters"]
            responses = op.setdefault("responses", {})
            for code in _errors(op, method, path):
                responses[code] = _problem(code, responses.get(code))
            for code in list(responses):
                if code.startswith("4") and code in ERROR_DESCRIPTIONS:
                    responses[code] = _problem(code, responses[code])
            if not op.get("description"):
                op["description"] = _describe(op, method, honours)
            _add_examples(doc, op)
    return doc

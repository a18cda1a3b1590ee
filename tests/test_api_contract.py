"""The API contract of every service: a valid OpenAPI document, and bad input never a 500.

Each service's app is built in-process on a fresh database (its migrations) and
served by uvicorn on a loopback port in a background thread (its own event
loop, so the app's engine never crosses loops with pytest's). The document
the app builds is the one it serves at ``/openapi.json``; it is checked against
the OpenAPI meta-schema, and Schemathesis generates requests for every
operation (one pytest item each; valid and invalid
bodies, parameters and headers) with an agency-admin token. The rule:

* no response is ever a 5xx;
* every 4xx is ``application/problem+json`` (RFC 9457) with ``type``, ``title``
  and ``status`` (equal to the HTTP status).

The number of examples per operation is bounded and generation is derandomized,
so a run is reproducible and takes about a minute.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, Phase, settings

from servicekit.testing import BrokerProcess, ServedApp, auth, database_url, fresh_database

ROOT = Path(__file__).resolve().parent.parent
ADMIN = auth("agency-admin")
PROBLEM = "application/problem+json"
SERVICES = ("registry", "filing", "assessment", "distribution", "notify")

CONTRACT_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def _fresh_database(service: str) -> str:
    """A new, migrated database (run on its own loop, outside pytest's)."""
    migrations = ROOT / "services" / service / "migrations"
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, fresh_database(f"roomtax_contract_{service}", migrations)).result()


def _build(service: str, database_url: str, bootstrap: str) -> FastAPI:
    if service == "registry":
        from registry.app import build_app as registry_app
        from registry.settings import RegistrySettings

        return registry_app(
            RegistrySettings(environment="test", database_url=database_url, kafka_bootstrap=bootstrap)
        )
    if service == "filing":
        from filing.app import build_app as filing_app
        from filing.settings import FilingSettings

        return filing_app(
            FilingSettings(environment="test", database_url=database_url, kafka_bootstrap=bootstrap)
        )
    if service == "assessment":
        from assessment.app import build_app as assessment_app
        from assessment.settings import AssessmentSettings

        return assessment_app(
            AssessmentSettings(environment="test", database_url=database_url, kafka_bootstrap=bootstrap)
        )
    if service == "notify":
        from notify.app import build_app as notify_app
        from notify.settings import NotifySettings

        return notify_app(
            NotifySettings(environment="test", database_url=database_url, kafka_bootstrap=bootstrap)
        )
    from distribution.app import build_app as distribution_app
    from distribution.settings import DistributionSettings

    return distribution_app(
        DistributionSettings(environment="test", database_url=database_url, kafka_bootstrap=bootstrap)
    )


def _serve(service: str, broker: BrokerProcess) -> Iterator[str]:
    app = _build(service, _fresh_database(service), broker.bootstrap)
    with ServedApp(app) as served:
        yield served.url


@pytest.fixture(scope="module")
def registry_url(broker: BrokerProcess) -> Iterator[str]:
    yield from _serve("registry", broker)


@pytest.fixture(scope="module")
def filing_url(broker: BrokerProcess) -> Iterator[str]:
    yield from _serve("filing", broker)


@pytest.fixture(scope="module")
def assessment_url(broker: BrokerProcess) -> Iterator[str]:
    yield from _serve("assessment", broker)


@pytest.fixture(scope="module")
def distribution_url(broker: BrokerProcess) -> Iterator[str]:
    yield from _serve("distribution", broker)


@pytest.fixture(scope="module")
def notify_url(broker: BrokerProcess) -> Iterator[str]:
    yield from _serve("notify", broker)


def _document(service: str) -> dict[str, Any]:
    """The service's OpenAPI document (building the app touches neither database nor broker)."""
    return _build(service, database_url(f"roomtax_contract_{service}"), "127.0.0.1:9").openapi()


SCHEMAS = {svc: schemathesis.openapi.from_dict(_document(svc)) for svc in SERVICES}


@pytest.mark.parametrize("service", SERVICES)
def test_openapi_document_is_valid(service: str, request: pytest.FixtureRequest) -> None:
    """The document the running service serves is the one tested, and it is valid OpenAPI."""
    url = request.getfixturevalue(f"{service}_url")
    served = httpx.get(f"{url}/openapi.json", timeout=10)
    assert served.status_code == 200
    assert served.json() == SCHEMAS[service].raw_schema
    schema = schemathesis.openapi.from_dict(served.json())
    schema.validate()  # raises on a document that breaks the OpenAPI meta-schema
    assert str(schema.raw_schema["openapi"]).startswith("3.")
    operations = list(schema.get_all_operations())
    assert operations, "the document lists no operations"
    for result in operations:
        result.ok()  # every operation resolves (no dangling $ref)


def assert_contract(case: Any, base_url: str) -> None:
    """No 5xx; every 4xx is problem+json with type, title and status."""
    response = case.call(base_url=base_url, headers=ADMIN, timeout=30)
    where = f"{case.operation.label}: {case.as_curl_command(headers=ADMIN)}"
    assert response.status_code < 500, f"{response.status_code} from {where}\n{response.text[:2000]}"
    if 400 <= response.status_code < 500:
        raw = response.headers.get("content-type") or [""]
        content_type = (raw if isinstance(raw, str) else raw[0]).split(";")[0].strip()
        assert content_type == PROBLEM, (
            f"{response.status_code} as {content_type!r}, not {PROBLEM}, from {where}\n{response.text[:2000]}"
        )
        body = response.json()
        assert isinstance(body, dict), f"problem body is not an object, from {where}"
        missing = [k for k in ("type", "title", "status") if k not in body]
        assert not missing, f"problem without {missing}, from {where}\n{response.text[:2000]}"
        assert body["status"] == response.status_code, f"problem status {body['status']} from {where}"


@SCHEMAS["registry"].parametrize()
@CONTRACT_SETTINGS
def test_registry_contract(case: Any, registry_url: str) -> None:
    assert_contract(case, registry_url)


@SCHEMAS["filing"].parametrize()
@CONTRACT_SETTINGS
def test_filing_contract(case: Any, filing_url: str) -> None:
    assert_contract(case, filing_url)


@SCHEMAS["assessment"].parametrize()
@CONTRACT_SETTINGS
def test_assessment_contract(case: Any, assessment_url: str) -> None:
    assert_contract(case, assessment_url)


@SCHEMAS["distribution"].parametrize()
@CONTRACT_SETTINGS
def test_distribution_contract(case: Any, distribution_url: str) -> None:
    assert_contract(case, distribution_url)


@SCHEMAS["notify"].parametrize()
@CONTRACT_SETTINGS
def test_notify_contract(case: Any, notify_url: str) -> None:
    assert_contract(case, notify_url)


# --- Input limits (issue 10 item 1): every text field and every list of a request is bounded ---

#: a pattern bounds a string's length when it has no open-ended repetition
_OPEN_REPETITION = re.compile(r"(?<!\\)[+*]|\{\d+,\}")
#: raw bodies bounded by the chassis's body limit (ServiceSettings.max_upload_bytes), not a schema
_RAW_BODIES = {("filing", "POST /v1/remittance-schedules", "text/csv")}


def _unbounded(doc: dict[str, Any], schema: dict[str, Any], where: str) -> list[str]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].split("/")[-1]]
    found = [
        u
        for key in ("anyOf", "oneOf", "allOf")
        for s in schema.get(key, [])
        for u in _unbounded(doc, s, where)
    ]
    kind = schema.get("type")
    if kind == "string":
        pattern = schema.get("pattern")
        if not (
            "maxLength" in schema
            or "enum" in schema
            or "const" in schema
            or schema.get("format") in ("date", "date-time", "binary")
            or (pattern is not None and not _OPEN_REPETITION.search(pattern))
        ):
            found.append(f"{where}: string without maxLength")
    elif kind == "array":
        if "maxItems" not in schema:
            found.append(f"{where}: array without maxItems")
        found += _unbounded(doc, schema.get("items", {}), f"{where}[]")
    for name, sub in schema.get("properties", {}).items():
        found += _unbounded(doc, sub, f"{where}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        found += _unbounded(doc, schema["additionalProperties"], f"{where}.*")
    return found


@pytest.mark.parametrize("service", SERVICES)
def test_every_request_text_and_list_is_bounded(service: str) -> None:
    doc = SCHEMAS[service].raw_schema
    found: list[str] = []
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            for content_type, media in operation.get("requestBody", {}).get("content", {}).items():
                if (service, f"{method.upper()} {path}", content_type) in _RAW_BODIES:
                    continue
                found += _unbounded(doc, media.get("schema", {}), f"{method.upper()} {path} ({content_type})")
    assert found == []


#: snake_case words that name an amount (a field whose last word is one of these is money)
_MONEY_WORDS = frozenset(
    "amount tax total balance paid collected pending released distributed deficiency interest penalty "
    "fine fee fees base credit debit received transferred shortfall date owed unallocated refunded assessed "
    "outstanding certified annual carried scheduled computed declared difference receipts revenue rooms "
    "penalties charges retained period".split()
) - {"date", "period"}
_MONEY_PATTERNS = {r"^\d{1,16}(\.\d{1,2})?$", r"^-?\d{1,16}(\.\d{1,2})?$"}


@pytest.mark.parametrize("service", SERVICES)
def test_every_money_field_is_the_money_type(service: str) -> None:
    """Amounts in requests and responses are strings with the money pattern (issue 10 item 2)."""
    doc = SCHEMAS[service].raw_schema
    loose = []
    for name, schema in doc["components"]["schemas"].items():
        for field, sub in schema.get("properties", {}).items():
            if field.rsplit("_", 1)[-1] not in _MONEY_WORDS:
                continue
            for option in [sub, *sub.get("anyOf", []), sub.get("additionalProperties") or {}]:
                if option.get("type") == "number" or (
                    option.get("type") == "string" and option.get("pattern") not in _MONEY_PATTERNS
                ):
                    loose.append(f"{name}.{field}")
    assert loose == []


# --- The API as a product (issue 16): every operation documented for integrators ---

#: POSTs outside the transactional chassis: credentials are never replayed from a stored response
_CREDENTIAL_POSTS = {
    "/v1/oauth/token",
    "/v1/people/token",
    "/v1/people/token/oidc",
    "/v1/people/me/password",
}
TOKEN_URL = "http://127.0.0.1:8001/v1/oauth/token"
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_OPERATION_ID = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")


def _example_errors(doc: dict[str, Any], media: dict[str, Any]) -> list[str]:
    validator = jsonschema_rs.Draft202012Validator({**media["schema"], "components": doc["components"]})
    return [e.message for e in validator.iter_errors(media["example"])]


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


@pytest.mark.parametrize("service", SERVICES)
def test_every_operation_is_documented(service: str) -> None:
    """Description, stable id, problem+json errors, examples that validate, Idempotency-Key,
    the OAuth2 client-credentials scheme and the servers: for all operations of the service."""
    doc = SCHEMAS[service].raw_schema
    assert doc["servers"] == [{"url": "/", "description": f"the {service} API"}]
    assert doc["components"]["securitySchemes"] == {
        "oauth2": {
            "type": "oauth2",
            "description": "OAuth2 client credentials: POST client_id and client_secret to the token URL.",
            "flows": {"clientCredentials": {"tokenUrl": TOKEN_URL, "scopes": {}}},
        }
    }
    faults: list[str] = []
    ids: list[str] = []
    for method, path, op in _operations(doc):
        where = f"{method.upper()} {path}"
        ids.append(op["operationId"])
        if not _OPERATION_ID.match(op["operationId"]):
            faults.append(f"{where}: operationId {op['operationId']!r}")
        if len(op.get("description", "")) < 20:
            faults.append(f"{where}: no description")
        secured = op.get("security") == [{"oauth2": []}]
        expected = set()
        if secured:
            expected |= {"401", "403", "404"} | ({"409"} if method != "get" else set())
        elif "{" in path:
            expected.add("404")
        if "requestBody" in op:
            expected |= {"413", "422"}
        if op.get("parameters"):
            expected.add("422")
        for code in sorted(expected):
            response = op["responses"].get(code)
            if response is None or response["content"] != {PROBLEM: {"schema": PROBLEM_REF}}:
                faults.append(f"{where}: {code} not documented as problem+json")
        if method == "post" and path not in _CREDENTIAL_POSTS:
            names = [p["name"] for p in op.get("parameters", [])]
            if "Idempotency-Key" not in names:
                faults.append(f"{where}: Idempotency-Key not declared")
        medias = [*op.get("requestBody", {}).get("content", {}).values()] + [
            m for c, r in op["responses"].items() if c.startswith("2") for m in r.get("content", {}).values()
        ]
        for media in medias:
            if not media.get("schema") or media["schema"].get("format") == "binary":
                continue
            if "example" not in media:
                faults.append(f"{where}: no example")
            elif errors := _example_errors(doc, media):
                faults.append(f"{where}: example invalid: {errors[:2]}")
    assert faults == []
    assert len(ids) == len(set(ids)), "operation ids are not unique"


def test_operation_ids_are_named_for_integrators() -> None:
    ids = {
        f"{m.upper()} {p}": op["operationId"]
        for svc in SERVICES
        for m, p, op in _operations(SCHEMAS[svc].raw_schema)
    }
    assert ids["POST /v1/declarations"] == "declarations.file"
    assert ids["GET /v1/declarations"] == "declarations.list"
    assert ids["GET /v1/declarations/{declaration_id}"] == "declarations.get"
    assert ids["POST /v1/remittance-schedules"] == "remittance_schedules.upload"
    assert ids["GET /v1/accounts/{tax_account}/statement"] == "accounts.statement.get"
    assert ids["POST /v1/oauth/token"] == "oauth.token.create"

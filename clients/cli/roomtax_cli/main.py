"""``roomtax``: the command line for filers and the agency.

Every command speaks to the public HTTP APIs only (never a database), with the access token
``roomtax login`` stored in the config file (``$ROOMTAX_CONFIG``, else
``~/.config/roomtax/config.json``, mode 0600). ``--json`` prints one JSON document on stdout
for scripts; the exit code says how it went:

* 0: done; 1: done, but some rows were rejected; 2: bad input (a file it cannot parse,
  named by line), nothing sent; 3: not signed in, or not allowed (401/403);
  4: not found (404); 5: the API refused the request (409/413/422) or is unreachable.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

OK, REJECTED, BAD_INPUT, UNAUTHORIZED, NOT_FOUND, REFUSED = 0, 1, 2, 3, 4, 5
DEFAULT_URLS = {
    "registry": "http://127.0.0.1:8001",
    "filing": "http://127.0.0.1:8002",
    "assessment": "http://127.0.0.1:8003",
    "notify": "http://127.0.0.1:8005",
}
#: rows per schedule request: the filing API takes at most 50,000 rows and 32 MiB per schedule
DEFAULT_CHUNK_ROWS = 5_000
MAX_CHUNK_BYTES = 30 * 1024 * 1024

app = typer.Typer(help="Roomtax from the command line: file, upload, download, check.", no_args_is_help=True)
schedule_app = typer.Typer(help="Remittance schedules (facilitators).", no_args_is_help=True)
declarations_app = typer.Typer(help="Monthly declarations.", no_args_is_help=True)
receipts_app = typer.Typer(help="Payment receipts.", no_args_is_help=True)
webhooks_app = typer.Typer(help="Webhook subscriptions (the notify service).", no_args_is_help=True)
app.add_typer(schedule_app, name="schedule")
app.add_typer(declarations_app, name="declarations")
app.add_typer(receipts_app, name="receipts")
app.add_typer(webhooks_app, name="webhooks")

err = Console(stderr=True)
out = Console()
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document (for scripts)")]


class Failure(Exception):
    def __init__(self, code: int, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.body = code, message, body


def config_path() -> Path:
    return Path(os.environ.get("ROOMTAX_CONFIG") or Path.home() / ".config" / "roomtax" / "config.json")


def load_config() -> dict[str, Any]:
    path = config_path()
    if not path.exists():
        raise Failure(UNAUTHORIZED, f"not signed in: run `roomtax login` (no {path})")
    return dict(json.loads(path.read_text()))


def save_config(config: dict[str, Any]) -> None:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    path.write_text(json.dumps(config, indent=2))


@dataclass
class Api:
    config: dict[str, Any]

    def url(self, service: str, path: str) -> str:
        return str(self.config["urls"][service]).rstrip("/") + path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.config['access_token']}", "Accept": "application/json"}

    def call(self, method: str, service: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        try:
            response = httpx.request(method, self.url(service, path), headers=headers, timeout=300, **kwargs)
        except httpx.HTTPError as exc:
            raise Failure(REFUSED, f"{service} unreachable at {self.url(service, path)}: {exc}") from exc
        if response.status_code >= 400:
            raise _failure(response)
        return response

    def items(self, service: str, path: str) -> list[Any]:
        """Every item of a paged list (``items`` and ``next_cursor``), following the cursor."""
        found: list[Any] = []
        cursor: str | None = None
        while True:
            params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            page = self.call("GET", service, path, params=params).json()
            found += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return found


def _failure(response: httpx.Response) -> Failure:
    try:
        body = response.json()
    except ValueError:
        body = {"detail": response.text[:500]}
    detail = body.get("detail") or body.get("title") or response.reason_phrase
    errors = "; ".join(f"{e.get('pointer', '')}: {e.get('detail', '')}" for e in body.get("errors") or [])
    message = f"{response.status_code} {detail}" + (f" ({errors})" if errors else "")
    code = {401: UNAUTHORIZED, 403: UNAUTHORIZED, 404: NOT_FOUND}.get(response.status_code, REFUSED)
    return Failure(code, message, body)


def _finish(code: int, document: Any, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
    raise typer.Exit(code)


def _run(as_json: bool, action: Any) -> None:
    """Run a command body; a :class:`Failure` becomes its exit code and message."""
    try:
        action()
    except Failure as failure:
        if as_json:
            sys.stdout.write(
                json.dumps({"error": failure.message, "problem": failure.body}, default=str) + "\n"
            )
        else:
            err.print(f"[red]error:[/red] {failure.message}")
        raise typer.Exit(failure.code) from None


# --- login ---


@app.command()
def login(
    client_id: Annotated[str, typer.Option(envvar="ROOMTAX_CLIENT_ID", prompt=True)],
    client_secret: Annotated[str, typer.Option(envvar="ROOMTAX_CLIENT_SECRET", prompt=True, hide_input=True)],
    registry: Annotated[str, typer.Option(envvar="ROOMTAX_REGISTRY_URL")] = DEFAULT_URLS["registry"],
    filing: Annotated[str, typer.Option(envvar="ROOMTAX_FILING_URL")] = DEFAULT_URLS["filing"],
    assessment: Annotated[str, typer.Option(envvar="ROOMTAX_ASSESSMENT_URL")] = DEFAULT_URLS["assessment"],
    notify: Annotated[str, typer.Option(envvar="ROOMTAX_NOTIFY_URL")] = DEFAULT_URLS["notify"],
    as_json: JsonOpt = False,
) -> None:
    """Exchange a client id and secret for an access token (OAuth2 client credentials) and keep it."""

    def action() -> None:
        try:
            response = httpx.post(
                registry.rstrip("/") + "/v1/oauth/token",
                data={"grant_type": "client_credentials"},
                auth=(client_id, client_secret),
                timeout=30,
            )
        except httpx.HTTPError as exc:
            raise Failure(REFUSED, f"registry unreachable at {registry}: {exc}") from exc
        if response.status_code >= 400:
            raise _failure(response)
        token = response.json()
        urls = {"registry": registry, "filing": filing, "assessment": assessment, "notify": notify}
        expires_at = int(time.time()) + int(token["expires_in"])
        save_config(
            {
                "client_id": client_id,
                "access_token": token["access_token"],
                "expires_at": expires_at,
                "urls": urls,
            }
        )
        if not as_json:
            out.print(f"signed in as [bold]{client_id}[/bold]; token kept in {config_path()}")
        _finish(OK, {"client_id": client_id, "expires_at": expires_at, "config": str(config_path())}, as_json)

    _run(as_json, action)


# --- schedule upload ---


@dataclass
class ParsedCsv:
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (line number in the file, fields)


def read_csv(path: Path, required: tuple[str, ...] = ("tax_account",)) -> ParsedCsv:
    """The file's header and rows, each with its line; a line it cannot parse is a ``Failure``."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise Failure(BAD_INPUT, f"{path}: line {line}: not UTF-8 text") from exc
    except OSError as exc:
        raise Failure(BAD_INPUT, f"{path}: {exc.strerror}") from exc
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise Failure(BAD_INPUT, f"{path}: line 1: empty file, a header is expected") from None
    except csv.Error as exc:
        raise Failure(BAD_INPUT, f"{path}: line 1: {exc}") from exc
    missing = [c for c in required if c not in header]
    if missing:
        raise Failure(BAD_INPUT, f"{path}: line 1: the header has no {', '.join(missing)} column")
    rows: list[tuple[int, list[str]]] = []
    while True:
        line = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise Failure(BAD_INPUT, f"{path}: line {line}: {exc}") from exc
        if not fields:
            continue
        if len(fields) != len(header):
            raise Failure(
                BAD_INPUT,
                f"{path}: line {reader.line_num}: {len(fields)} fields, the header has {len(header)}",
            )
        rows.append((reader.line_num, fields))
    return ParsedCsv(header, rows)


def _chunks(parsed: ParsedCsv, chunk_rows: int) -> Iterator[list[tuple[int, list[str]]]]:
    chunk: list[tuple[int, list[str]]] = []
    size = 0
    for row in parsed.rows:
        row_bytes = sum(len(f) for f in row[1]) + len(row[1])
        if chunk and (len(chunk) >= chunk_rows or size + row_bytes > MAX_CHUNK_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(row)
        size += row_bytes
    if chunk:
        yield chunk


def _csv_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode()


def _pieces(body: bytes, progress: Progress, task: Any) -> Iterator[bytes]:
    step = 64 * 1024
    for start in range(0, len(body), step):
        piece = body[start : start + step]
        progress.advance(task, len(piece))
        yield piece


@schedule_app.command("upload")
def schedule_upload(
    file: Annotated[Path, typer.Argument(help="CSV: a header with tax_account and the amount columns")],
    period: Annotated[str, typer.Option(help="the tax period, YYYY-MM")],
    facilitator_id: Annotated[str | None, typer.Option(help="agency-admin only: the facilitator")] = None,
    chunk_rows: Annotated[int, typer.Option(min=1, max=50_000, help="rows per request")] = DEFAULT_CHUNK_ROWS,
    rejected_out: Annotated[
        Path | None, typer.Option(help="where rejected rows go (default FILE.rejected.csv)")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Upload a remittance schedule in chunks within the API's limit, with progress and a summary."""

    def action() -> None:
        parsed = read_csv(file)
        api = Api(load_config())
        digest = hashlib.sha256(file.read_bytes()).hexdigest()[:16]
        chunks = list(_chunks(parsed, chunk_rows))
        results: list[dict[str, Any]] = []
        schedules: list[str] = []
        params = {"period": period, **({"facilitator_id": facilitator_id} if facilitator_id else {})}
        columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
        with Progress(*columns, console=err, disable=as_json, transient=False) as progress:
            overall = progress.add_task("all rows", total=len(parsed.rows))
            for n, chunk in enumerate(chunks, start=1):
                body = _csv_bytes(parsed.header, [fields for _, fields in chunk])
                task = progress.add_task(f"chunk {n}/{len(chunks)} ({len(chunk)} rows)", total=len(body))
                response = api.call(
                    "POST",
                    "filing",
                    "/v1/remittance-schedules",
                    params=params,
                    content=_pieces(body, progress, task),
                    headers={
                        "Content-Type": "text/csv",
                        "Content-Length": str(len(body)),
                        "Idempotency-Key": f"roomtax-cli-{digest}-{period}-{n}-{chunk_rows}",
                    },
                )
                schedule = response.json()
                schedules.append(schedule["id"])
                for result in schedule["results"]:
                    line, fields = chunk[result["row"] - 1]
                    results.append({**result, "line": line, "fields": fields})
                progress.update(task, completed=len(body))
                progress.advance(overall, len(chunk))
        accepted = [r for r in results if r["status"] == "accepted"]
        rejected = [r for r in results if r["status"] == "rejected"]
        target = rejected_out or file.with_suffix(".rejected.csv")
        if rejected:
            with target.open("w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["line", *parsed.header, "errors"])
                for r in rejected:
                    reasons = "; ".join(f"{e.get('field') or ''}: {e['reason']}" for e in r["errors"])
                    writer.writerow([r["line"], *r["fields"], reasons])
        summary = {
            "file": str(file),
            "period": period,
            "rows": len(results),
            "accepted": len(accepted),
            "rejected": len(rejected),
            "chunks": len(chunks),
            "schedules": schedules,
            "rejected_file": str(target) if rejected else None,
            "rejected_rows": [
                {"line": r["line"], "tax_account": r["tax_account"], "errors": r["errors"]} for r in rejected
            ],
        }
        if not as_json:
            table = Table(title=f"{file.name}: period {period}")
            for column in ("rows", "accepted", "rejected", "chunks"):
                table.add_column(column, justify="right")
            table.add_row(*(str(summary[c]) for c in ("rows", "accepted", "rejected", "chunks")))
            out.print(table)
            for r in rejected[:20]:
                reasons = "; ".join(e["reason"] for e in r["errors"])
                out.print(f"  line {r['line']}: {r['tax_account']}: {reasons}")
            if rejected:
                out.print(f"rejected rows written to {target}")
        _finish(REJECTED if rejected else OK, summary, as_json)

    _run(as_json, action)


# --- declarations file ---


def _nested(header: list[str], fields: list[str]) -> dict[str, Any]:
    """A CSV row as a request body: ``declared.room_revenue`` is ``{"declared": {"room_revenue": …}}``;
    an empty cell is left out."""
    body: dict[str, Any] = {}
    for name, value in zip(header, fields, strict=True):
        if value == "":
            continue
        *parents, leaf = name.split(".")
        target = body
        for parent in parents:
            target = target.setdefault(parent, {})
        target[leaf] = value
    return body


def _declarations_from(file: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line or position, body) of each declaration in a JSON or CSV file."""
    if file.suffix.lower() == ".json":
        try:
            document = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise Failure(BAD_INPUT, f"{file}: line {exc.lineno}: {exc.msg}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise Failure(BAD_INPUT, f"{file}: {exc}") from exc
        items = document if isinstance(document, list) else [document]
        for n, item in enumerate(items, start=1):
            if not isinstance(item, dict):
                raise Failure(BAD_INPUT, f"{file}: item {n}: a declaration is a JSON object")
        return list(enumerate(items, start=1))
    parsed = read_csv(file, required=("lodging", "period"))
    return [(line, _nested(parsed.header, fields)) for line, fields in parsed.rows]


@declarations_app.command("file")
def declarations_file(
    file: Annotated[Path, typer.Argument(help="JSON (one declaration or a list) or CSV (one per row)")],
    as_json: JsonOpt = False,
) -> None:
    """File each declaration of the file (a retry of the same file files nothing twice)."""

    def action() -> None:
        declarations = _declarations_from(file)
        api = Api(load_config())
        results = []
        for where, body in declarations:
            key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
            try:
                filed = api.call(
                    "POST",
                    "filing",
                    "/v1/declarations",
                    json=body,
                    headers={"Idempotency-Key": f"roomtax-cli-{key}"},
                ).json()
                results.append(
                    {
                        "item": where,
                        "status": "filed",
                        "declaration_id": filed["id"],
                        "tax": (filed.get("computed") or {}).get("tax"),
                    }
                )
            except Failure as failure:
                if failure.code == UNAUTHORIZED:
                    raise
                results.append({"item": where, "status": "rejected", "error": failure.message})
        rejected = [r for r in results if r["status"] == "rejected"]
        if not as_json:
            table = Table(title=f"{file.name}: declarations")
            for column in ("item", "status", "declaration", "tax / error"):
                table.add_column(column)
            for r in results:
                table.add_row(
                    str(r["item"]),
                    r["status"],
                    r.get("declaration_id") or "",
                    str(r.get("tax") or r.get("error")),
                )
            out.print(table)
        _finish(
            REJECTED if rejected else OK,
            {"filed": len(results) - len(rejected), "rejected": len(rejected), "results": results},
            as_json,
        )

    _run(as_json, action)


# --- receipts download ---


@receipts_app.command("download")
def receipts_download(
    payment_ids: Annotated[
        list[str] | None, typer.Argument(help="payments; default: every payment listed")
    ] = None,
    out_dir: Annotated[Path, typer.Option(help="where the PDFs go")] = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Download payment receipts (PR §28(C)) as PDFs: the payments named, or all the caller's."""

    def action() -> None:
        api = Api(load_config())
        ids = list(payment_ids or [])
        if not ids:
            ids = [p["id"] for p in api.items("filing", "/v1/payments")]
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for payment_id in ids:
            pdf = api.call("GET", "filing", f"/v1/payments/{payment_id}/receipt", params={"format": "pdf"})
            target = out_dir / f"receipt-{payment_id}.pdf"
            target.write_bytes(pdf.content)
            written.append({"payment_id": payment_id, "file": str(target), "bytes": len(pdf.content)})
            if not as_json:
                out.print(f"{target}  ({len(pdf.content)} bytes)")
        _finish(OK, {"receipts": written}, as_json)

    _run(as_json, action)


# --- statement ---


@app.command()
def statement(
    account: Annotated[str, typer.Argument(help="the tax account number")],
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="YYYY-MM-DD, past or future; default today")
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="each amount's rule and statute section")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """The statement of a tax account as of a date: per period what is owed and paid."""

    def action() -> None:
        api = Api(load_config())
        params: dict[str, Any] = {"explain": str(explain).lower()}
        if as_of:
            params["as_of"] = as_of
        document = api.call("GET", "assessment", f"/v1/accounts/{account}/statement", params=params).json()
        if not as_json:
            table = Table(title=f"account {account} as of {document.get('as_of', as_of)}")
            periods = document.get("periods", [])
            columns = [k for k, v in (periods[0] if periods else {}).items() if isinstance(v, str | int)]
            for column in columns:
                table.add_column(column, justify="right")
            for row in periods:
                table.add_row(*(str(row.get(c, "")) for c in columns))
            out.print(table)
            for key, value in document.items():
                if key != "periods" and isinstance(value, str | int):
                    out.print(f"{key}: {value}")
            if explain:
                out.print_json(json.dumps(document, default=str))
        _finish(OK, document, as_json)

    _run(as_json, action)


# --- webhooks (notify, /v1/webhooks) ---


@webhooks_app.command("list")
def webhooks_list(as_json: JsonOpt = False) -> None:
    """The caller's webhook subscriptions (every page); ``--json``: ``{"items": [...]}``."""

    def action() -> None:
        webhooks = Api(load_config()).items("notify", "/v1/webhooks")
        if not as_json:
            table = Table(title="webhooks")
            for column in ("id", "url", "event_types", "status", "description"):
                table.add_column(column)
            for w in webhooks:
                table.add_row(
                    w["id"], w["url"], ", ".join(w["event_types"]), w["status"], w["description"] or ""
                )
            out.print(table)
        _finish(OK, {"items": webhooks}, as_json)

    _run(as_json, action)


@webhooks_app.command("create")
def webhooks_create(
    url: Annotated[str, typer.Argument(help="the endpoint that receives the events (https in production)")],
    event_types: Annotated[
        list[str],
        typer.Option("--event", help="an event type (repeat the option); see GET /v1/webhooks/event-types"),
    ],
    description: Annotated[str | None, typer.Option(help="what the endpoint is (e.g. our PMS)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Subscribe an endpoint to event types; the signing secret is shown once."""

    def action() -> None:
        body: dict[str, Any] = {"url": url, "event_types": event_types}
        if description is not None:
            body["description"] = description
        created = Api(load_config()).call("POST", "notify", "/v1/webhooks", json=body).json()
        if not as_json:
            out.print(f"subscribed [bold]{created['id']}[/bold] to {', '.join(created['event_types'])}")
            out.print(f"signing secret (shown only now, keep it): {created['secret']}")
        _finish(OK, created, as_json)

    _run(as_json, action)


@webhooks_app.command("delete")
def webhooks_delete(webhook_id: str, as_json: JsonOpt = False) -> None:
    """Remove a subscription."""

    def action() -> None:
        Api(load_config()).call("DELETE", "notify", f"/v1/webhooks/{webhook_id}")
        if not as_json:
            out.print(f"deleted {webhook_id}")
        _finish(OK, {"deleted": webhook_id}, as_json)

    _run(as_json, action)

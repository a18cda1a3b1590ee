"""``python -m web api [--host] [--port]``: serve the web app (port 8000)."""

from __future__ import annotations

import argparse
import logging
import signal

from servicekit import telemetry
from web.app import build_app
from web.settings import WebSettings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m web")
    sub = parser.add_subparsers(dest="command", required=True)
    api = sub.add_parser("api", help="serve the web application")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=8000)
    # The web app keeps no database and does no background work; these two commands exist so
    # a supervisor (scripts/stack.py, a Kubernetes init container) treats every deployable alike.
    sub.add_parser("migrate", help="nothing to migrate: the web app has no database")
    sub.add_parser("worker", help="nothing to do in the background: waits until stopped")
    args = parser.parse_args(argv)
    if args.command == "migrate":
        print("web: no database to migrate")
        return
    if args.command == "worker":
        stops = {signal.SIGTERM, signal.SIGINT}
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        signal.sigwait(stops)
        return
    settings = WebSettings()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s web %(levelname)s %(message)s")
    import uvicorn

    uvicorn.run(
        build_app(settings),
        host=args.host,
        port=args.port,
        access_log=False,
        proxy_headers=True,
        forwarded_allow_ips=settings.trusted_proxies,
        **telemetry.SERVER_OPTIONS,  # each request from an empty context
    )


if __name__ == "__main__":
    main()

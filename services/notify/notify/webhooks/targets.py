"""Where a webhook may be delivered: never the agency's own network (SSRF).

A target must be an absolute http(s) URL without credentials; https in production. Its
host, a literal address or every address its name resolves to, must be public: loopback,
private (RFC 1918, unique-local), link-local (cloud metadata at 169.254.169.254), shared,
multicast, reserved and unspecified addresses are refused unless a setting allows them
(tests, a local demo). The check runs when the subscription is made and again before
every delivery, since a name may resolve elsewhere later (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit


class TargetRefused(ValueError):
    """Why a URL may not receive webhooks (the message names the problem)."""


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_url(url: str, *, require_https: bool) -> tuple[str, int]:
    """Shape checks of a target URL; returns (host, port) to resolve."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"not a valid URL: {exc}") from exc
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("must be an http or https URL")
    if require_https and parts.scheme != "https":
        raise TargetRefused("must use https")
    if not parts.hostname:
        raise TargetRefused("has no host")
    if parts.username or parts.password:
        raise TargetRefused("must not carry credentials")
    if parts.fragment:
        raise TargetRefused("must not carry a fragment")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


async def resolve(host: str, port: int) -> list[str]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise TargetRefused(f"host {host!r} does not resolve") from exc
    return sorted({str(info[4][0]) for info in infos})


async def check_target(url: str, *, require_https: bool, allow_private: bool) -> None:
    """Refuse (TargetRefused) a URL that is malformed, plain http where https is required,
    or whose host is or resolves to a non-public address (unless ``allow_private``)."""
    host, port = check_url(url, require_https=require_https)
    if allow_private:
        return
    addresses = [host.strip("[]")] if _is_literal(host) else await resolve(host, port)
    refused = [a for a in addresses if not _public(a)]
    if refused:
        raise TargetRefused(f"resolves to a private or reserved address ({refused[0]})")


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True

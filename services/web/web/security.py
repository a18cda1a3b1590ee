"""Security headers and safe redirects."""

from __future__ import annotations

from urllib.parse import urlsplit

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "object-src 'none'",
    ]
)


def security_headers(*, production: bool) -> dict[str, str]:
    headers = {
        "Content-Security-Policy": CSP,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    }
    if production:
        headers["Strict-Transport-Security"] = "max-age=63072000; includeSubDomains"
    return headers


def safe_next(target: str | None, default: str = "/") -> str:
    """Only a path on this site: ``/portal?x=1``, never ``//evil.example``, ``https://…``,
    ``/\\evil.example`` or anything with a scheme or host (an open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or any(ord(c) < 32 for c in target):
        return default
    return target

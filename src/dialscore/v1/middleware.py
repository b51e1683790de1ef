"""Marks every answer of a version 1 path as deprecated, with a link to its version 2
successor: successes, errors, 401s and 429s alike."""

from __future__ import annotations

import re
from urllib.parse import quote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

V2_PREFIX = "/api/public/v2"
_FIXED = {
    "/api/contacts/score": f"{V2_PREFIX}/contacts/score",
    "/api/contacts/enrich": f"{V2_PREFIX}/contacts/enrich",
    "/api/jobs": f"{V2_PREFIX}/jobs",
}
_JOB = re.compile(r"^/api/jobs/([^/]+)$")


def successor(path: str) -> str | None:
    """The version 2 path that replaces a version 1 path; None for any other path."""
    fixed = _FIXED.get(path)
    if fixed is not None:
        return fixed
    match = _JOB.match(path)
    if match is not None:
        return f"{V2_PREFIX}/jobs/{quote(match.group(1), safe='')}"
    return None


def deprecation_headers(successor_path: str) -> list[tuple[bytes, bytes]]:
    link = f'<{successor_path}>; rel="successor-version"'
    return [(b"deprecation", b"true"), (b"link", link.encode("latin-1"))]


class DeprecationMiddleware:
    """Outermost, so that answers given before routing (the rate limiter's 429) get the
    headers too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = successor(scope["path"]) if scope["type"] == "http" else None
        if target is None:
            await self.app(scope, receive, send)
            return
        extra = deprecation_headers(target)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)

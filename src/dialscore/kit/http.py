"""Request bodies: read up to a size, parsed as strict JSON, and reported only once the caller
is known."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodySizeLimit:
    """Answers 413 ``{error}`` for a request body larger than ``max_bytes`` (D7), as soon as
    its declared length or the bytes received so far say so, reading no further.

    The error is raised from ``receive``, inside the route that reads the body, so the
    service's error handlers render it like any other. ``larger`` gives paths that start with
    a prefix a limit of their own."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, larger: dict[str, int] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.larger = larger or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = next(
            (size for prefix, size in self.larger.items() if scope["path"].startswith(prefix)),
            self.max_bytes,
        )
        declared = Headers(scope=scope).get("content-length")
        too_large = declared is not None and declared.isdigit() and int(declared) > limit
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            if too_large:
                raise self._error(limit)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise self._error(limit)
            return message

        await self.app(scope, limited_receive, send)

    @staticmethod
    def _error(limit: int) -> HTTPException:
        return HTTPException(413, f"request body is larger than {limit} bytes")


@dataclass(frozen=True)
class NotJson:
    """What a body that is not JSON reads as: no body model accepts it, and the validation
    error says why (``kit.errors``). Parsing does not fail at once, so that a caller without
    a valid key is answered 401 before anything about its body."""

    reason: str


class StrictJsonRequest(Request):
    """A request whose ``json()`` refuses what Python's parser lets through but JSON does not
    allow (NaN, Infinity, numbers out of range)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                self._json = parse_json(await self.body())
            except json.JSONDecodeError as exc:
                self._json = NotJson(exc.msg)
        return self._json


def parse_json(body: bytes) -> Any:
    """The JSON value of ``body``; ``json.JSONDecodeError`` for anything that is not JSON."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError(f"not UTF-8 ({exc.reason})", "", exc.start) from None
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def _refuse_constant(name: str) -> float:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise json.JSONDecodeError(f"{text} is out of range", text, 0)
    return value


class StrictJsonRoute(APIRoute):
    """Routes whose bodies are parsed by ``StrictJsonRequest``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict_handler

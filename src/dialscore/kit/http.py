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
        declared = _declared_length(Headers(scope=scope).get("content-length"))
        too_large = declared is not None and declared > limit
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


# Longer lengths are all "too large"; reading them as integers is never needed.
_LENGTH_DIGITS = 18


def _declared_length(header: str | None) -> int | None:
    """The length a Content-Length header declares, when it is a number."""
    if header is None or not (header.isascii() and header.isdigit()):
        return None
    digits = header.lstrip("0") or "0"
    return int(digits) if len(digits) <= _LENGTH_DIGITS else 10**_LENGTH_DIGITS


# Arrays and objects inside one another, the body itself counting as one level: deeper bodies
# are refused before anything recursive (validation, hashing, storing, answering) reads them
# (P73).
MAX_DEPTH = 64
_TOO_DEEP = f"request body is nested deeper than {MAX_DEPTH} levels of arrays and objects"
# Python's own limit on converting between integers and text: a longer integer could be read
# but never written back as JSON (P73).
MAX_INTEGER_DIGITS = 4300


@dataclass(frozen=True)
class NotJson:
    """What a body that cannot be read reads as: no body model accepts it, and the validation
    error says why (``kit.errors``). Parsing does not fail at once, so that a caller without
    a valid key is answered 401 before anything about its body."""

    message: str


class StrictJsonRequest(Request):
    """A request whose ``json()`` refuses what Python's parser lets through but JSON does not
    allow (NaN, Infinity, numbers out of range), and what the service cannot handle (bodies
    nested deeper than ``MAX_DEPTH``, integers longer than ``MAX_INTEGER_DIGITS``)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                self._json = parse_json(await self.body())
            except json.JSONDecodeError as exc:
                self._json = NotJson(f"request body is not valid JSON: {exc.msg}")
            except BodyTooComplex as exc:
                self._json = NotJson(str(exc))
        return self._json


class BodyTooComplex(ValueError):
    """A JSON body the service will not read: nested too deeply or with too long a number."""


def parse_json(body: bytes) -> Any:
    """The JSON value of ``body``; ``json.JSONDecodeError`` for anything that is not JSON,
    ``BodyTooComplex`` for JSON beyond the service's limits."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError(f"not UTF-8 ({exc.reason})", "", exc.start) from None
    try:
        value = json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_integer
        )
    except RecursionError:
        raise BodyTooComplex(_TOO_DEEP) from None
    if _depth_exceeds(value, MAX_DEPTH):
        raise BodyTooComplex(_TOO_DEEP)
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest more than ``limit`` deep in ``value``; iterative, so
    that it never recurses however deep the value is."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
    return False


def _refuse_constant(name: str) -> float:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise json.JSONDecodeError(f"{text} is out of range", text, 0)
    return value


def _integer(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise BodyTooComplex(
            f"request body has an integer of {digits} digits; at most {MAX_INTEGER_DIGITS} allowed"
        )
    return int(text)


class StrictJsonRoute(APIRoute):
    """Routes whose bodies are parsed by ``StrictJsonRequest``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict_handler

"""What every operation of the API documents besides its models: its error answers, and the
headers that the middlewares add to every answer under /api."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from dialscore.kit.errors import ErrorBody, RateLimitedBody

_ERRORS: dict[int, tuple[type[BaseModel], str]] = {
    400: (ErrorBody, "Invalid request: the message says what to fix"),
    401: (ErrorBody, "Missing, malformed, expired or revoked API key"),
    402: (ErrorBody, "The balance does not cover the charge"),
    403: (ErrorBody, "The plan does not allow this call"),
    404: (ErrorBody, "No such object for this user"),
    409: (ErrorBody, "Conflict with an earlier request or the object's state"),
    413: (ErrorBody, "Request body larger than 10 MiB"),
    429: (RateLimitedBody, "A request rate tier (second, minute or day) is used up"),
    500: (ErrorBody, "Internal error; the request may be retried"),
    503: (ErrorBody, "The rate limiter cannot count (fail-closed mode); retry shortly"),
}
# Every answer under /api may be one of these: no key, a plan without API access, a rate
# tier used up, the limiter unavailable, an internal error.
API_ERRORS = (401, 403, 429, 500, 503)


def error_responses(*codes: int, **described: str) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of an operation for the error statuses it answers; ``described``
    (``e409="…"``) words one of them for this operation."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in sorted(set(codes)):
        model, text = _ERRORS[code]
        out[code] = {"model": model, "description": described.get(f"e{code}", text)}
    return out


def api_responses(*codes: int, **described: str) -> dict[int | str, dict[str, Any]]:
    """``error_responses`` of an /api operation: its own error statuses and ``API_ERRORS``."""
    return error_responses(*API_ERRORS, *codes, **described)


_RATE_LIMIT_HEADERS = {
    f"X-RateLimit-{part}-{tier}": {
        "description": text.format(tier=tier.lower()),
        "schema": {"type": "integer", "minimum": 0},
    }
    for tier in ("Second", "Minute", "Day")
    for part, text in (
        ("Limit", "Requests allowed in the current {tier} window"),
        ("Remaining", "Requests left in the current {tier} window"),
        ("Reset", "When the current {tier} window ends, in Unix seconds"),
    )
}
_RETRY_AFTER = {
    "description": "Seconds until the exceeded tier resets, rounded up",
    "schema": {"type": "integer", "minimum": 1},
}
_DEPRECATION_HEADERS = {
    "Deprecation": {
        "description": "Always true: this call is deprecated",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "Link": {
        "description": 'The version 2 call that replaces this one, rel="successor-version"',
        "schema": {"type": "string"},
    },
}


def document_middleware_headers(schema: dict[str, Any]) -> dict[str, Any]:
    """Adds to the schema what the middlewares add to answers: the nine rate-limit headers on
    every answer under /api, ``Retry-After`` on 429s and 503s, and the deprecation headers on
    every answer of a deprecated operation. Validation errors answer 400 with ``{error}``, so
    FastAPI's default 422 is not documented."""
    components = schema.setdefault("components", {})
    components["headers"] = _RATE_LIMIT_HEADERS
    refs = {name: {"$ref": f"#/components/headers/{name}"} for name in _RATE_LIMIT_HEADERS}
    for path, operations in schema.get("paths", {}).items():
        for operation in operations.values():
            responses = operation.get("responses", {})
            responses.pop("422", None)
            if not path.startswith("/api"):
                continue
            for code, response in responses.items():
                headers = response.setdefault("headers", {})
                headers.update(refs)
                if code in ("429", "503"):
                    headers["Retry-After"] = _RETRY_AFTER
                if operation.get("deprecated"):
                    headers.update(_DEPRECATION_HEADERS)
    schemas = components.get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return schema

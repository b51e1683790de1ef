"""What every operation of the API documents besides its models: its error answers, its
examples, its operation id, and the headers that the middlewares add to every answer under
/api."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel
from starlette.routing import BaseRoute

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
# What the answers of a status say whatever the operation (the others' words depend on it).
_ERROR_EXAMPLES: dict[int, dict[str, Any]] = {
    401: {"error": "invalid API key"},
    403: {"error": "the 'free' plan has no API access"},
    413: {"error": "request body is larger than 10485760 bytes"},
    429: {
        "error": "rate limit exceeded",
        "message": "Too many requests: the limit of 10 per second is used up. Retry in 0.412 s.",
        "tier": "second",
        "retryAfter": 0.412,
    },
    500: {"error": "internal server error"},
    503: {"error": "the rate limiter is unavailable; retry shortly"},
}
# Every answer under /api may be one of these: no key, a plan without API access, a rate
# tier used up, the limiter unavailable, an internal error.
API_ERRORS = (401, 403, 429, 500, 503)


def error_responses(
    *codes: int, example: Any = None, status: int = 200, **described: str
) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of an operation for the error statuses it answers, with ``example``
    as the body of its ``status`` answer; ``described`` (``e409="…"``) words one of them for
    this operation."""
    out: dict[int | str, dict[str, Any]] = {}
    if example is not None:
        out[status] = {"content": {"application/json": {"example": example}}}
    for code in sorted(set(codes)):
        model, text = _ERRORS[code]
        out[code] = {"model": model, "description": described.get(f"e{code}", text)}
        # An answer worded for this operation says something else than the usual one.
        if code in _ERROR_EXAMPLES and f"e{code}" not in described:
            out[code]["content"] = {"application/json": {"example": _ERROR_EXAMPLES[code]}}
    return out


def api_responses(
    *codes: int, example: Any = None, status: int = 200, **described: str
) -> dict[int | str, dict[str, Any]]:
    """``error_responses`` of an /api operation: its own error statuses and ``API_ERRORS``."""
    return error_responses(*API_ERRORS, *codes, example=example, status=status, **described)


def request_example(body: Any) -> dict[str, Any]:
    """The ``openapi_extra`` of an operation whose JSON request body ``body`` exemplifies."""
    return {"requestBody": {"content": {"application/json": {"example": body}}}}


def operation_id(route: APIRoute) -> str:
    """An operation's id, what a generated client names its call: the endpoint's function
    name (``get_job``, ``score_contacts``), unless the route gives one itself."""
    return route.name


def _json_example(content: Any) -> Any:
    return (content or {}).get("application/json", {}).get("example")


def restore_examples(schema: dict[str, Any], routes: Sequence[BaseRoute], section: str) -> None:
    """Puts back the examples of ``routes`` as they were given: FastAPI drops every null from
    the document it makes, and an example without its nulls lacks required fields.
    ``section`` is where the routes are documented: ``paths`` or ``webhooks``."""
    for context in iter_route_contexts(routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or not route.include_in_schema:
            continue
        item = schema.get(section, {}).get(context.path_format, {})
        for method in route.methods or ():
            operation = item.get(method.lower())
            if operation is None:
                continue
            for status, response in route.responses.items():
                example = _json_example(response.get("content"))
                if example is not None:
                    documented = operation["responses"][str(status)]["content"]
                    documented["application/json"]["example"] = example
            extra = route.openapi_extra or {}
            example = _json_example(extra.get("requestBody", {}).get("content"))
            if example is not None:
                operation["requestBody"]["content"]["application/json"]["example"] = example


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
    FastAPI's default 422 is not documented, nor on the webhooks a receiver answers."""
    components = schema.setdefault("components", {})
    components["headers"] = _RATE_LIMIT_HEADERS
    refs = {name: {"$ref": f"#/components/headers/{name}"} for name in _RATE_LIMIT_HEADERS}
    for operations in schema.get("webhooks", {}).values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
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

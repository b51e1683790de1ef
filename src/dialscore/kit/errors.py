"""Errors that carry their HTTP status, and the handlers that render them as {error}."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from dialscore.kit.http import NotJson
from dialscore.kit.text import SURROGATE_PROBLEM

log = structlog.get_logger(__name__)


class ErrorBody(BaseModel):
    error: str


class RateLimitedBody(BaseModel):
    """The 429 answer (D26); the Retry-After header carries retryAfter rounded up."""

    error: str
    message: str
    tier: Literal["second", "minute", "day"] = Field(description="The exceeded tier")
    retryAfter: float = Field(ge=0, description="Seconds until that tier resets")


class ApiError(Exception):
    status_code = 400

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code


class BadRequest(ApiError):
    status_code = 400


class Unauthorized(ApiError):
    status_code = 401


class PaymentRequired(ApiError):
    status_code = 402


class Forbidden(ApiError):
    status_code = 403


class NotFound(ApiError):
    status_code = 404


class Conflict(ApiError):
    status_code = 409


class PayloadTooLarge(ApiError):
    status_code = 413


# Where a validation error was found, as a client names it: the body's own fields without
# "body", parameters by their name.
_PLACES = ("body", "query", "path", "header")
# What a client must fix, by the kind of validation error (Pydantic's error types).
_MESSAGES: dict[str, str] = {
    "missing": "{field} is required",
    "list_type": "{field} must be an array",
    "too_short": "{field} must not be empty",
    "too_long": "{field} has {actual_length} elements; at most {max_length} allowed",
    "string_type": "{field} must be a string",
    "string_too_short": "{field} must not be blank",
    "string_too_long": "{field} is longer than {max_length} characters",
    "literal_error": "{field} must be one of {expected}",
    "enum": "{field} must be one of {expected}",
    "bool_type": "{field} must be true or false",
    "bool_parsing": "{field} must be true or false",
    "int_type": "{field} must be an integer",
    "int_parsing": "{field} must be an integer",
    "greater_than_equal": "{field} must be at least {ge}",
    "less_than_equal": "{field} must be at most {le}",
    "value_error": "{field} {error}",
    "dict_type": "{field} must be a JSON object",
    "model_type": "{field} must be a JSON object",
    "model_attributes_type": "{field} must be a JSON object",
    "int_parsing_size": "{field} must be an integer of at most 4300 digits",
    "text_characters": "{field} {problem}",
    # Pydantic's own refusal of a string with a lone surrogate (P74).
    "string_unicode": "{field} " + SURROGATE_PROBLEM,
    # A key that the operation's body does not have (bodies that refuse unknown keys, P140).
    "extra_forbidden": "{field} is not a field of this request",
    "float_type": "{field} must be a number",
    "float_parsing": "{field} must be a number",
}


def describe_validation(errors: Sequence[Mapping[str, Any]]) -> str:
    """The first validation error as a sentence naming the field and what is wrong with it."""
    if not errors:
        return "invalid request"
    error = errors[0]
    if isinstance(error.get("input"), NotJson):
        return str(error["input"].message)
    loc = [str(part) for part in error.get("loc", ())]
    place = loc.pop(0) if loc and loc[0] in _PLACES else None
    if error.get("type") == "json_invalid":
        reason = (error.get("ctx") or {}).get("error", "")
        return f"request body is not valid JSON: {reason}".rstrip(": ")
    if loc:
        field = "'" + ".".join(loc) + "'"
    elif place in (None, "body"):
        field = "request body"
    else:
        field = place
    template = _MESSAGES.get(str(error.get("type")))
    if template is None:
        # A model's own check (a model validator) says what is wrong in its own words.
        return f"{field}: {error.get('msg', 'invalid')}" if loc else str(error.get("msg"))
    ctx = {key: value for key, value in (error.get("ctx") or {}).items() if key != "field"}
    try:
        return template.format(field=field, **ctx)
    except (KeyError, IndexError):
        return f"{field}: {error.get('msg', 'invalid')}"


# Starlette's own words for errors it answers itself, said as the service says them.
_PLAIN_MESSAGES = {(404, "Not Found"): "no such endpoint"}


def install_error_handlers(app: FastAPI) -> None:
    async def api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        return JSONResponse({"error": exc.message}, status_code=exc.status_code, headers=headers)

    async def validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return JSONResponse({"error": describe_validation(exc.errors())}, status_code=400)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        message = _PLAIN_MESSAGES.get((exc.status_code, message), message)
        return JSONResponse(
            {"error": message}, status_code=exc.status_code, headers=getattr(exc, "headers", None)
        )

    async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", path=request.url.path)
        return JSONResponse({"error": "internal server error"}, status_code=500)

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected_error)

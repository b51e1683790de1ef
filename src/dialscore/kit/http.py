"""Reading request bodies with a size cap and JSON errors in the {error} shape."""

from __future__ import annotations

import json
import math
from typing import Any

from fastapi import Request

from dialscore.kit.errors import BadRequest, PayloadTooLarge


async def read_json_body(request: Request, max_bytes: int) -> Any:
    """The parsed JSON body; 413 past ``max_bytes`` (read no further), 400 when not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise PayloadTooLarge(f"request body is larger than {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"request body is larger than {max_bytes} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip():
        raise BadRequest("request body must be a JSON object")
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None


def _refuse_constant(name: str) -> float:
    # NaN and Infinity are not JSON; Python's parser accepts them unless told otherwise.
    raise BadRequest(f"request body is not valid JSON: {name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadRequest(f"request body is not valid JSON: {text} is out of range")
    return value

"""The response envelope of version 2 and JSON forms of stored values."""

from __future__ import annotations

from decimal import Decimal
from typing import Any


def number(value: Decimal) -> int | float:
    """A credit amount as a JSON number: integral amounts without a fraction."""
    normalized = value.normalize()
    if normalized == normalized.to_integral_value():
        return int(normalized)
    return float(normalized)


def data(payload: Any) -> dict[str, Any]:
    return {"data": payload}

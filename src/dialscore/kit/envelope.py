"""Pieces of request and response bodies shared by several routes, and JSON forms of stored
values."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, BeforeValidator, Field
from pydantic_core import PydanticCustomError


def number(value: Decimal) -> int | float:
    """A credit amount as a JSON number: integral amounts without a fraction."""
    normalized = value.normalize()
    if normalized == normalized.to_integral_value():
        return int(normalized)
    return float(normalized)


def _present(value: Any) -> Any:
    if value is None:
        raise PydanticCustomError("missing", "Field required")
    return value


# A required field sent as null reads as missing: "'contacts' is required", not "must be an
# array".
NotNull = BeforeValidator(_present)


class RejectionSummary(BaseModel):
    """The ``error`` of an answer that accepted some records and rejected others."""

    rejectedRecordCount: int
    records: list[dict[str, Any]] = Field(
        description="Each rejected record as submitted, plus rejectedReason"
    )

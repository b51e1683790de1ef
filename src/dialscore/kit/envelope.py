"""Pieces of request and response bodies shared by several routes, and JSON forms of stored
values."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, RootModel, WithJsonSchema
from pydantic_core import PydanticCustomError

# Strings the contract gives a format: what a generated client reads as a UUID or a date-time.
# The values stay strings here; only the document says more.
Uuid = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
# What a text the server strips before checking it must hold to be more than blank.
NOT_BLANK = r"\S"


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


def elements_of(model: type[BaseModel]) -> Callable[[dict[str, Any]], None]:
    """The ``json_schema_extra`` of a list whose elements are documented as ``model`` but
    checked one by one later (``SkipValidation``): the document names the model, a schema a
    generated client shares, where it would repeat it inline."""

    def refer(schema: dict[str, Any]) -> None:
        schema["items"] = {"$ref": f"#/components/schemas/{model.__name__}"}

    return refer


def echoed(model: type[BaseModel], noun: str) -> dict[str, Any]:
    """The document of a rejected record of ``model`` elements (``json_schema_extra``): the
    reason, and each field of ``model`` as it was sent. A record is rejected for a field of
    the wrong type too, so an echoed field may hold any JSON value."""
    properties: dict[str, Any] = {
        name: {"description": f"The {noun}'s {name} as sent: any JSON value"}
        for name in model.model_fields
    }
    properties["rejectedReason"] = {
        "type": "string",
        "description": "Why the record was rejected: one stable sentence per rule",
    }
    properties["input"] = {
        "description": f"The element as sent, when it was not a JSON object (P4); the {noun}'s "
        "fields are absent then"
    }
    return {
        "description": f"A rejected {noun}: the element as sent, every key kept, plus "
        "rejectedReason",
        "properties": properties,
        "required": ["rejectedReason"],
    }


class RejectedRecord(RootModel[dict[str, Any]]):
    """A rejected record: the element as sent plus ``rejectedReason``. Its keys are the
    client's, so the record is passed through as it is (order included) and only documented:
    subclasses name the fields they echo with ``echoed``."""


RecordT = TypeVar("RecordT", bound=RejectedRecord)


class RejectionSummary(BaseModel, Generic[RecordT]):
    """The ``error`` of an answer that accepted some records and rejected others; null when
    nothing was rejected."""

    rejectedRecordCount: int = Field(ge=1)
    records: list[RecordT] = Field(
        min_length=1, description="Each rejected record as sent, plus rejectedReason"
    )

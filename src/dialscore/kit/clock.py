"""Time and identifiers, kept in one place so they can be replaced in tests."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from dialscore.kit.errors import BadRequest


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


def canonical_uuid(value: str) -> str | None:
    """The canonical (lower-case, hyphenated) form of a UUID in any accepted spelling."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def isoformat(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def require_uuid(value: str, name: str) -> str:
    """The canonical form of an id from a path; 400 when it is not a UUID."""
    canonical = canonical_uuid(value)
    if canonical is None:
        raise BadRequest(f"{name} must be a UUID")
    return canonical

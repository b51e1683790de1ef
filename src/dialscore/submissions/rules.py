"""Normalisation and rejection rules of submitted contacts (D5 to D7). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dialscore.jobs.schemas import CONTACT_INPUT_FIELDS, Kind, NewContact
from dialscore.kit.text import scrub, text_problem, value_problem
from dialscore.scoring.numbers import ParsedPhone, parse_contact_phones

# Each known field's place in the order a contact's fields are kept in.
_FIELD_PLACE = {name: place for place, name in enumerate(CONTACT_INPUT_FIELDS)}
MAX_FIELD_LENGTH = 1000

FIRST_NAME_REQUIRED = "firstName is required"
LAST_NAME_REQUIRED = "lastName is required"
PHONE_REQUIRED = "at least one valid phone number is required"
DUPLICATE = "duplicate of an earlier contact in this request"
COMPANY_REQUIRED = "companyAccount, linkedInUrl or companyLinkedInUrl is required"
IDENTITY_REQUIRED = "a name, linkedInUrl or email is required"
NOT_AN_OBJECT = "each contact must be a JSON object"
# What the rules may say of a contact given as an object.
REASONS = (
    FIRST_NAME_REQUIRED,
    LAST_NAME_REQUIRED,
    PHONE_REQUIRED,
    DUPLICATE,
    COMPANY_REQUIRED,
    IDENTITY_REQUIRED,
)


@dataclass(frozen=True)
class Rejected:
    record: dict[str, Any]


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    return None


def _split_fields(raw: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], str | None]:
    """Known fields as strings, everything else kept aside; a reason when a field is unusable."""
    fields: dict[str, str] = {}
    unmapped: dict[str, Any] = {}
    for key, value in raw.items():
        problem = text_problem(key)
        if problem is not None:
            # P74: a field name is stored too (unknown fields are kept, D7).
            return fields, unmapped, f"field names {problem}"
        if key == "unmappedFields":
            if value is None:
                continue
            if not isinstance(value, dict):
                return fields, unmapped, "unmappedFields must be an object"
            problem = value_problem(value)
            if problem is not None:
                return fields, unmapped, f"unmappedFields {problem}"
            unmapped.update(value)
        elif key in _FIELD_PLACE:
            if value is None:
                continue
            text = _as_text(value)
            if text is None:
                return fields, unmapped, f"{key} must be a string"
            if len(text) > MAX_FIELD_LENGTH:
                return fields, unmapped, f"{key} is longer than {MAX_FIELD_LENGTH} characters"
            problem = text_problem(text)
            if problem is not None:
                return fields, unmapped, f"{key} {problem}"
            fields[key] = text
        else:
            problem = value_problem(value)
            if problem is not None:
                return fields, unmapped, f"{key} {problem}"
            unmapped[key] = value
    # In the fields' order: sorting the few given takes half the time of looking for each of
    # the 55 known ones.
    ordered = {name: fields[name] for name in sorted(fields, key=_FIELD_PLACE.__getitem__)}
    return ordered, unmapped, None


def _present(fields: dict[str, str], name: str) -> bool:
    return bool(fields.get(name, "").strip())


def _folded(fields: dict[str, str], name: str) -> str:
    return " ".join(fields.get(name, "").split()).casefold()


def _duplicate_key(
    kind: Kind, fields: dict[str, str], phones: list[ParsedPhone]
) -> tuple[Any, ...]:
    numbers = frozenset(p.e164 or p.raw for p in phones)
    names = (_folded(fields, "firstName"), _folded(fields, "lastName"))
    if kind == "scoring":
        return (*names, numbers)
    identity = tuple(
        _folded(fields, name).rstrip("/")
        for name in ("email", "linkedInUrl", "companyAccount", "companyLinkedInUrl")
    )
    return (*names, *identity, numbers)


def _reason(kind: Kind, fields: dict[str, str], phones: list[ParsedPhone]) -> str | None:
    if kind == "scoring":
        if not _present(fields, "firstName"):
            return FIRST_NAME_REQUIRED
        if not _present(fields, "lastName"):
            return LAST_NAME_REQUIRED
        if not any(p.valid for p in phones):
            return PHONE_REQUIRED
        return None
    if not any(
        _present(fields, n) for n in ("companyAccount", "linkedInUrl", "companyLinkedInUrl")
    ):
        return COMPANY_REQUIRED
    has_name = _present(fields, "firstName") or _present(fields, "lastName")
    if not has_name and not (_present(fields, "linkedInUrl") or _present(fields, "email")):
        return IDENTITY_REQUIRED
    return None


def rejected_record(raw: Any, reason: str) -> dict[str, Any]:
    """A rejected record as the answer echoes it: its input, with any character no text may
    hold shown as U+FFFD (P74), and its reason."""
    if isinstance(raw, dict):
        return {**scrub(raw), "rejectedReason": reason}
    return {"input": scrub(raw), "rejectedReason": reason}


def prepare(kind: Kind, contacts: list[Any]) -> list[NewContact | Rejected]:
    """Each submitted contact, in order, either prepared for a job or rejected with a reason."""
    seen: set[tuple[Any, ...]] = set()
    results: list[NewContact | Rejected] = []
    for raw in contacts:
        if not isinstance(raw, dict):
            results.append(Rejected(rejected_record(raw, NOT_AN_OBJECT)))
            continue
        fields, unmapped, reason = _split_fields(raw)
        phones = parse_contact_phones(fields) if reason is None else []
        reason = reason or _reason(kind, fields, phones)
        if reason is None:
            key = _duplicate_key(kind, fields, phones)
            if key in seen:
                reason = DUPLICATE
            seen.add(key)
        if reason is not None:
            results.append(Rejected(rejected_record(raw, reason)))
        else:
            results.append(NewContact(fields, unmapped, phones))
    return results

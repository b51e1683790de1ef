"""Call reporting use cases: check and store reported calls, list a number's calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.calls import repository as repo
from dialscore.calls.schemas import EARLIEST_CALL, FUTURE_TOLERANCE, MAX_IVR_PATH_LENGTH
from dialscore.kit.clock import canonical_uuid
from dialscore.kit.errors import BadRequest
from dialscore.kit.pagination import PageRequest
from dialscore.kit.text import scrub, text_problem
from dialscore.models import CallOutcome
from dialscore.phones import analyse, country_or_default
from dialscore.scoring.evidence import OUTCOMES

NOT_AN_OBJECT = "each call must be a JSON object"
NUMBER_REQUIRED = "number is required"
NUMBER_INVALID = "number is not a valid phone number"
OUTCOME_REQUIRED = "outcome is required"
OUTCOME_UNKNOWN = f"outcome must be one of {', '.join(OUTCOMES)}"
CONTACT_ID_MALFORMED = "contactId must be a UUID"
CONTACT_NOT_OURS = "contactId is not a contact of this client"
IVR_PATH_TOO_LONG = f"ivrPath is longer than {MAX_IVR_PATH_LENGTH} characters"
IVR_PATH_UNPRINTABLE = "ivrPath must contain only printable characters"
CALLED_AT_MALFORMED = "calledAt must be an ISO 8601 date-time with a time zone"
CALLED_AT_IN_FUTURE = "calledAt is more than 5 minutes in the future"
CALLED_AT_TOO_EARLY = "calledAt is before 2000"

# Field shapes are checked first, in this order, then the rules of each field in this order.
_FIELDS = ("number", "country", "outcome", "contactId", "ivrPath", "calledAt")


@dataclass(frozen=True)
class PreparedCall:
    number: str
    outcome: str
    contact_id: str | None
    ivr_path: str | None
    called_at: datetime


class _Rejection(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _texts(raw: dict[str, Any]) -> dict[str, str]:
    """The known fields that are present and not blank, as text; rejects unusable shapes.

    ``number`` may be a JSON number (CRM exports send them so), read as its decimal text."""
    texts: dict[str, str] = {}
    for name in _FIELDS:
        value = raw.get(name)
        if value is None:
            continue
        if name == "number" and isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise _Rejection(f"{name} must be a string")
        problem = text_problem(value)
        if problem is not None:
            raise _Rejection(f"{name} {problem}")
        if value.strip():
            texts[name] = value.strip()
    return texts


def _called_at(text: str | None, now: datetime) -> datetime:
    if text is None:
        return now
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise _Rejection(CALLED_AT_MALFORMED) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise _Rejection(CALLED_AT_MALFORMED)
    try:
        called_at = parsed.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 with an offset that leaves the calendar
        raise _Rejection(
            CALLED_AT_TOO_EARLY if parsed.year < EARLIEST_CALL.year else CALLED_AT_IN_FUTURE
        ) from None
    if called_at < EARLIEST_CALL:
        raise _Rejection(CALLED_AT_TOO_EARLY)
    if called_at > now + FUTURE_TOLERANCE:
        raise _Rejection(CALLED_AT_IN_FUTURE)
    return called_at


def _prepare(raw: dict[str, Any], now: datetime) -> PreparedCall:
    texts = _texts(raw)
    if "number" not in texts:
        raise _Rejection(NUMBER_REQUIRED)
    phone = analyse(texts["number"], country_or_default(texts.get("country")))
    if phone is None:
        raise _Rejection(NUMBER_INVALID)
    if "outcome" not in texts:
        raise _Rejection(OUTCOME_REQUIRED)
    outcome = texts["outcome"].lower()
    if outcome not in OUTCOMES:
        raise _Rejection(OUTCOME_UNKNOWN)
    contact_id = None
    if "contactId" in texts:
        contact_id = canonical_uuid(texts["contactId"])
        if contact_id is None:
            raise _Rejection(CONTACT_ID_MALFORMED)
    ivr_path = texts.get("ivrPath")
    if ivr_path is not None:
        if len(ivr_path) > MAX_IVR_PATH_LENGTH:
            raise _Rejection(IVR_PATH_TOO_LONG)
        if not ivr_path.isprintable():
            raise _Rejection(IVR_PATH_UNPRINTABLE)
    return PreparedCall(
        number=phone.e164,
        outcome=outcome,
        contact_id=contact_id,
        ivr_path=ivr_path,
        called_at=_called_at(texts.get("calledAt"), now),
    )


def prepare_call(raw: Any, now: datetime) -> PreparedCall | str:
    """One reported call, normalised, or the reason it is rejected. Pure."""
    if not isinstance(raw, dict):
        return NOT_AN_OBJECT
    try:
        return _prepare(raw, now)
    except _Rejection as rejection:
        return rejection.reason


def _rejected_record(raw: Any, reason: str) -> dict[str, Any]:
    """A rejected call as the answer echoes it, with any character no text may hold shown as
    U+FFFD (P74)."""
    if isinstance(raw, dict):
        return {**scrub(raw), "rejectedReason": reason}
    return {"input": scrub(raw), "rejectedReason": reason}


@dataclass(frozen=True)
class CallReport:
    """What a report did: how many calls came, how many were stored, and each rejected call
    as it was sent, with its reason."""

    total: int
    accepted: int
    rejected: list[dict[str, Any]]


async def record_calls(
    session: AsyncSession, *, principal: Principal, calls: Sequence[Any], now: datetime
) -> CallReport:
    """Stores the valid calls of a report for the principal's client."""
    results = [prepare_call(raw, now) for raw in calls]
    named = {r.contact_id for r in results if isinstance(r, PreparedCall) and r.contact_id}
    ours = await repo.contacts_of_client(session, principal.client_id, named) if named else set()
    rows: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    for raw, result in zip(calls, results, strict=True):
        if (
            isinstance(result, PreparedCall)
            and result.contact_id is not None
            and result.contact_id not in ours
        ):
            result = CONTACT_NOT_OURS
        if isinstance(result, str):
            rejected.append(_rejected_record(raw, result))
            continue
        rows.append(
            {
                "client_id": principal.client_id,
                "user_id": principal.user_id,
                "number": result.number,
                "contact_id": result.contact_id,
                "outcome": result.outcome,
                "ivr_path": result.ivr_path,
                "called_at": result.called_at,
                "created_at": now,
            }
        )
    await repo.insert_outcomes(session, rows)
    return CallReport(len(calls), len(rows), rejected)


def parse_query_number(text: str, country: str | None) -> str:
    """The E.164 form of a number given in a query; 400 when it is not a valid number."""
    # An unencoded '+' in a query string arrives as a space.
    if text[:1] == " " and text.strip()[:1].isdigit():
        text = "+" + text.strip()
    phone = analyse(text.strip(), country_or_default(country))
    if phone is None:
        raise BadRequest(NUMBER_INVALID)
    return phone.e164


async def list_calls(
    session: AsyncSession,
    principal: Principal,
    *,
    number: str,
    country: str | None,
    page: PageRequest,
) -> tuple[Sequence[CallOutcome], int]:
    """A page of the calls the principal's client reported to a number, newest first."""
    return await repo.list_outcomes(
        session,
        client_id=principal.client_id,
        number=parse_query_number(number, country),
        offset=page.offset,
        limit=page.limit,
    )

"""Call reporting use cases: check and store reported calls, list a number's calls."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Final
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.calls import repository as repo
from dialscore.calls.schemas import EARLIEST_CALL, FUTURE_TOLERANCE, MAX_IVR_PATH_LENGTH
from dialscore.compliance import LEARNING_PERIOD, number_zone, tally_type
from dialscore.kit.clock import canonical_uuid
from dialscore.kit.errors import BadRequest
from dialscore.kit.pagination import PageRequest
from dialscore.kit.text import scrub, text_problem
from dialscore.models import CallOutcome
from dialscore.phones import analyse, country_or_default, query_number
from dialscore.scoring.evidence import OUTCOMES
from dialscore.scoring.lines import CONNECTS

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
    """Stores the valid calls of a report for the principal's client, and counts them in the
    client's tallies by line type, zone and local hour (P194)."""
    results = [prepare_call(raw, now) for raw in calls]
    named = {r.contact_id for r in results if isinstance(r, PreparedCall) and r.contact_id}
    ours = await repo.contact_lines(session, principal.client_id, named) if named else {}
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
    await _tally(
        session,
        principal.client_id,
        [(r["number"], r["contact_id"], r["outcome"], r["called_at"]) for r in rows],
        ours,
    )
    return CallReport(len(calls), len(rows), rejected)


# -- the tallies the best hours are learnt from (P194) -----------------------------------------

# The calls read at a time when the tallies are rebuilt (over the LEARNING_PERIOD).
REBUILD_PAGE: Final = 5000

# A reported call: number (E.164), contact id, outcome, when (UTC).
Call = tuple[str, str | None, str, datetime]
TallyKey = tuple[str, str, date, int]


def _line(number: str, lines: repo.ContactLines | None) -> tuple[str, str | None]:
    """The line type and zone a call to ``number`` is tallied under, from the phone entry
    and address of the contact it was given for (none known: no type, the number's zone)."""
    if lines is None:
        return "", number_zone(number, None, None)
    phones, fields = lines
    entry = next((e for e in phones if isinstance(e, dict) and e.get("number") == number), None)
    state, zone = fields.get("stateProvince"), fields.get("timeZone")
    return tally_type(entry), number_zone(
        number,
        state if isinstance(state, str) and state.strip() else None,
        zone if isinstance(zone, str) and zone.strip() else None,
    )


def tally_rows(
    client_id: str,
    calls: Iterable[Call],
    named: dict[str, repo.ContactLines],
    carriers: dict[str, repo.ContactLines],
) -> list[dict[str, Any]]:
    """The calls counted by (line type, zone, local day, local hour), as rows to add to the
    client's tallies, in key order. A call names its contact, else the newest contact that
    carries its number says its line; a call whose number's zone is not known is not
    counted. Pure."""
    counts: Counter[TallyKey] = Counter()
    connects: Counter[TallyKey] = Counter()
    for number, contact_id, outcome, called_at in calls:
        lines = named.get(contact_id) if contact_id is not None else None
        line_type, zone = _line(number, lines if lines is not None else carriers.get(number))
        if zone is None:
            continue
        local = called_at.astimezone(ZoneInfo(zone))
        key = (line_type, zone, local.date(), local.hour)
        counts[key] += 1
        connects[key] += outcome in CONNECTS
    rows = []
    for key in sorted(counts):
        line_type, zone, day, hour = key
        rows.append(
            {
                "client_id": client_id,
                "line_type": line_type,
                "time_zone": zone,
                "day": day,
                "hour": hour,
                "weekday": day.weekday(),
                "calls": counts[key],
                "connects": connects[key],
            }
        )
    return rows


async def _tally(
    session: AsyncSession,
    client_id: str,
    calls: Sequence[Call],
    named: dict[str, repo.ContactLines],
) -> None:
    unnamed = {number for number, contact_id, _, _ in calls if contact_id not in named}
    carriers = await repo.newest_carriers(session, client_id, unnamed) if unnamed else {}
    await repo.add_tallies(session, tally_rows(client_id, calls, named, carriers))


async def rebuild_tallies(session: AsyncSession, *, client_id: str, now: datetime) -> int:
    """The client's tallies made again from its calls of the learning period (for calls
    reported before tallies were kept, or after the zone data changed); how many calls."""
    await repo.drop_tallies(session, client_id)
    since, after, counted = now - LEARNING_PERIOD, 0, 0
    while True:
        page = await repo.outcomes_page(
            session, client_id, since=since, after_id=after, limit=REBUILD_PAGE
        )
        if not page:
            return counted
        calls = [(number, contact, outcome, at) for _, number, contact, outcome, at in page]
        named_ids = {contact for _, contact, _, _ in calls if contact is not None}
        named = await repo.contact_lines(session, client_id, named_ids) if named_ids else {}
        await _tally(session, client_id, calls, named)
        after, counted = page[-1][0], counted + len(page)


def parse_query_number(text: str, country: str | None) -> str:
    """The E.164 form of a number given in a query; 400 when it is not a valid number."""
    number = query_number(text, country)
    if number is None:
        raise BadRequest(NUMBER_INVALID)
    return number


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

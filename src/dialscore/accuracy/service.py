"""The score report's use case: read the calls and the scores in force, then work out the
figures (``report.build_report``). The API and the web app's page both ask here."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.accuracy import repository as repo
from dialscore.accuracy.report import (
    ReportedCall,
    Score,
    ScoreReport,
    build_report,
    reported_call,
    scores_of,
)
from dialscore.kit.errors import BadRequest

# The calls a report reads when the caller does not say since when.
DEFAULT_WINDOW = timedelta(days=90)


def malformed(name: str) -> str:
    """The 400 message of a query parameter that is no time."""
    return (
        f"{name} must be an ISO 8601 date (2026-01-31) or date-time with a time zone "
        "(2026-01-31T00:00:00Z)"
    )


SINCE_MALFORMED = malformed("since")
SINCE_OUT_OF_RANGE = "since is out of range"
# An unencoded '+' of an offset arrives in a query string as a space: "…T09:00:00 02:00".
_SPACED_OFFSET = re.compile(r"(T[0-9:.,]+) ([0-9]{2}(?::?[0-9]{2})?)$")


def parse_since(text: str | None, now: datetime) -> datetime:
    """The start of a report's calls: a date (from its midnight UTC) or a date-time with a
    time zone; ``DEFAULT_WINDOW`` before ``now`` when not given. 400 otherwise."""
    if text is None or not text.strip():
        return now - DEFAULT_WINDOW
    return parse_time(text, "since")


def parse_time(text: str, name: str) -> datetime:
    """A time given in the query parameter ``name``: a date (its midnight UTC) or a
    date-time with a time zone, as ``since`` is read. 400 otherwise."""
    text = _SPACED_OFFSET.sub(r"\1+\2", text.strip())
    try:
        if len(text) <= 10 and "T" not in text:
            return datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(malformed(name)) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise BadRequest(malformed(name))
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 with an offset that leaves the calendar
        raise BadRequest(f"{name} is out of range") from None


async def scoring_report(
    session: AsyncSession, principal: Principal, *, since: datetime
) -> ScoreReport:
    """How the principal's scored numbers did in the calls their client reported since
    ``since``: each call against the most recent score of its number before it (P110)."""
    calls: list[ReportedCall] = []
    async for chunk in repo.calls_since(session, client_id=principal.client_id, since=since):
        calls.extend(reported_call(number, outcome, at) for number, outcome, at in chunk)
    if not calls:
        return build_report((), (), since)
    called = {call.number for call in calls}
    last_call = max(call.called_at for call in calls)
    scores: list[Score] = []
    async for rows in repo.scored_contacts(session, user_id=principal.user_id, until=last_call):
        for scored_at, phones in rows:
            if scored_at is not None:  # the query reads only scored contacts
                found = scores_of(scored_at, phones)
                scores.extend(score for score in found if score.number in called)
    return build_report(scores, calls, since)

"""The record of the Reassigned Numbers Database's queries (P195): one row per (contact, number,
consent date) a scoring batch asked about, with the answer, written in the batch's transaction
and read back per client (the API, the operator's command)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.clock import isoformat
from dialscore.kit.errors import BadRequest
from dialscore.kit.pagination import PageRequest
from dialscore.kit.text import text_problem
from dialscore.models import RndQuery
from dialscore.phones import query_number
from dialscore.scoring.evidence import REASSIGNED_ANSWERS
from dialscore.scoring.service import ReassignedChecks

# The answer of a query no answer was read for: the database was unavailable or refused the
# credentials, the query was given up after retries, rejected, unreadable, or not sent.
NO_ANSWER = "none"
RECORDED_ANSWERS = (*REASSIGNED_ANSWERS, NO_ANSWER)
NUMBER_INVALID = "number is not a valid phone number"
# Rows read at a time by the operator's command: a long record is never held whole as rows.
CHUNK = 5000


# -- building and writing ------------------------------------------------------------------


def query_rows(
    checks: ReassignedChecks, *, client_id: str, job_id: str | None, asked_at: datetime
) -> list[dict[str, Any]]:
    """The rows of a batch's queries: one per contact, number and consent date asked about,
    ``none`` where nothing was answered. A consent date that is no date was not asked about
    and has none (P190). Pure."""
    rows: list[dict[str, Any]] = []
    for contact_id, numbers in checks.items():
        for number, check in numbers.items():
            if not check.date_valid:
                continue
            rows.append(
                {
                    "client_id": client_id,
                    "job_id": job_id,
                    "contact_id": contact_id,
                    "number": number,
                    "consent_date": date.fromisoformat(check.consent_date),
                    "asked_at": asked_at,
                    "answer": check.answer or NO_ANSWER,
                }
            )
    return rows


async def insert_queries(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(RndQuery), list(rows))


async def record_queries(
    session: AsyncSession,
    *,
    client_id: str,
    job_id: str | None,
    checks: ReassignedChecks,
    asked_at: datetime,
) -> int:
    """Records a batch's queries in the caller's transaction; how many rows it wrote."""
    rows = query_rows(checks, client_id=client_id, job_id=job_id, asked_at=asked_at)
    await insert_queries(session, rows)
    return len(rows)


# -- reading -------------------------------------------------------------------------------


def parse_number(text: str | None) -> str | None:
    """The E.164 form of a number to filter by (without '+': a US number); None when none is
    given. 400 when it is not a valid number."""
    if text is None or not text.strip():
        return None
    number = query_number(text) if text_problem(text) is None else None
    if number is None:
        raise BadRequest(NUMBER_INVALID)
    return number


async def page_of_queries(
    session: AsyncSession,
    *,
    client_id: str,
    since: datetime,
    number: str | None,
    offset: int,
    limit: int,
) -> tuple[Sequence[RndQuery], int]:
    """One page of the client's queries asked at or after ``since`` (about ``number`` only,
    when given), newest first, and how many there are."""
    conditions = [RndQuery.client_id == client_id, RndQuery.asked_at >= since]
    if number is not None:
        conditions.append(RndQuery.number == number)
    total = await session.scalar(select(func.count()).select_from(RndQuery).where(*conditions))
    rows = await session.scalars(
        select(RndQuery)
        .where(*conditions)
        .order_by(RndQuery.asked_at.desc(), RndQuery.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return rows.all(), int(total or 0)


async def queries_since(
    session: AsyncSession, *, client_id: str, since: datetime
) -> AsyncIterator[Sequence[RndQuery]]:
    """The client's queries asked at or after ``since``, in the order they were recorded, in
    chunks."""
    query = (
        select(RndQuery)
        .where(RndQuery.client_id == client_id, RndQuery.asked_at >= since)
        .order_by(RndQuery.asked_at, RndQuery.id)
        .execution_options(yield_per=CHUNK)
    )
    result = await session.stream_scalars(query)
    async for chunk in result.partitions():
        yield chunk


async def list_queries(
    session: AsyncSession,
    *,
    client_id: str,
    since: datetime,
    number: str | None,
    page: PageRequest,
) -> tuple[Sequence[RndQuery], int]:
    """A page of the client's record, newest first; ``number`` as the client gave it."""
    return await page_of_queries(
        session,
        client_id=client_id,
        since=since,
        number=parse_number(number),
        offset=page.offset,
        limit=page.limit,
    )


def present_query(query: RndQuery) -> dict[str, Any]:
    """A recorded query as the API and the operator's command show it."""
    return {
        "number": query.number,
        "consentDate": query.consent_date.isoformat(),
        "askedAt": isoformat(query.asked_at),
        "answer": query.answer,
        "jobId": query.job_id,
        "contactId": query.contact_id,
    }

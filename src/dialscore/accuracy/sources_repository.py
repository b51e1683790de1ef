"""Every query of the enrichment sources report (P205): the period's tallies, its enrichment
jobs and their ledger rows, the contacts enrichment found numbers for, and the calls to those
numbers. A handful of statements, whatever the number of jobs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Row, Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.jobs.schemas import ENRICHMENT_JOB_TYPES
from dialscore.models import CallOutcome, Contact, CreditLedgerEntry, EnrichmentTally, Job

# Rows fetched at a time, and numbers asked about in one statement (well under the bound
# parameters either database takes).
CHUNK = 5000
NUMBERS_PER_QUERY = 1000


def _jobs_of_period(client_id: str, since: datetime, until: datetime) -> ColumnElement[bool]:
    return (
        (Job.client_id == client_id)
        & Job.job_type.in_(sorted(ENRICHMENT_JOB_TYPES))
        & (Job.created_at >= since)
        & (Job.created_at < until)
    )


def _job_ids(client_id: str, since: datetime, until: datetime) -> Select[str]:
    return select(Job.id).where(_jobs_of_period(client_id, since, until))


async def tallies(
    session: AsyncSession, *, client_id: str, since: datetime, until: datetime
) -> Sequence[Row[str, str, bool, int, int, int]]:
    """The tallies of the client's jobs created in [since, until), erased jobs' included:
    (job, source, own key, tried, hits, named)."""
    result = await session.execute(
        select(
            EnrichmentTally.job_id,
            EnrichmentTally.source,
            EnrichmentTally.own_key,
            EnrichmentTally.tried,
            EnrichmentTally.hits,
            EnrichmentTally.named,
        ).where(
            EnrichmentTally.client_id == client_id,
            EnrichmentTally.job_created_at >= since,
            EnrichmentTally.job_created_at < until,
        )
    )
    return result.all()


async def jobs(
    session: AsyncSession, *, client_id: str, since: datetime, until: datetime
) -> Sequence[Row[str, int, int]]:
    """The client's enrichment jobs created in [since, until): (id, accepted contacts,
    contacts enrichment found nothing for)."""
    result = await session.execute(
        select(Job.id, Job.accepted_count, Job.enrichment_rejected_count).where(
            _jobs_of_period(client_id, since, until)
        )
    )
    return result.all()


async def ledger_rows(
    session: AsyncSession, *, client_id: str, since: datetime, until: datetime
) -> Sequence[Row[str | None, Decimal, str]]:
    """The credit ledger's rows of those jobs, in the order written: (job, delta, reason)."""
    result = await session.execute(
        select(CreditLedgerEntry.job_id, CreditLedgerEntry.delta, CreditLedgerEntry.reason)
        .where(
            CreditLedgerEntry.client_id == client_id,
            CreditLedgerEntry.job_id.in_(_job_ids(client_id, since, until)),
        )
        .order_by(CreditLedgerEntry.id)
    )
    return result.all()


async def enriched_contacts(
    session: AsyncSession, *, client_id: str, since: datetime, until: datetime
) -> AsyncIterator[Sequence[Row[str | None, bool, datetime | None, list[dict[str, Any]]]]]:
    """The contacts of those jobs that a source is named for: (source, own key, scored at,
    phone entries), in chunks, in the order they were scored (a job's in its order)."""
    query = (
        select(
            Contact.enrichment_source,
            Contact.enrichment_own_key,
            Contact.scored_at,
            Contact.phones,
        )
        .join(Job, Job.id == Contact.job_id)
        .where(
            _jobs_of_period(client_id, since, until),
            Contact.client_id == client_id,
            Contact.enrichment_source.is_not(None),
        )
        .order_by(Contact.scored_at, Contact.job_id, Contact.ordinal)
        .execution_options(yield_per=CHUNK)
    )
    result = await session.stream(query)
    async for chunk in result.partitions():
        yield chunk


async def calls_to(
    session: AsyncSession, *, client_id: str, numbers: Collection[str], since: datetime
) -> AsyncIterator[Sequence[Row[str, str, datetime]]]:
    """The client's calls to ``numbers`` made at or after ``since``: (number, outcome, time),
    a statement per ``NUMBERS_PER_QUERY`` numbers."""
    ordered = sorted(numbers)
    for start in range(0, len(ordered), NUMBERS_PER_QUERY):
        result = await session.execute(
            select(CallOutcome.number, CallOutcome.outcome, CallOutcome.called_at).where(
                CallOutcome.client_id == client_id,
                CallOutcome.number.in_(ordered[start : start + NUMBERS_PER_QUERY]),
                CallOutcome.called_at >= since,
            )
        )
        yield result.all()

"""The enrichment sources report's use case (P205): the period asked for, what is read for it,
and the figures worked out (``sources_report.build_sources_report``). The API and the web
app's Enrichment sources page both ask here."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accuracy import sources_repository as repo
from dialscore.accuracy.report import ReportedCall, reported_call
from dialscore.accuracy.service import parse_time
from dialscore.accuracy.sources_report import (
    EnrichedContact,
    JobCredits,
    SourcesReport,
    Tally,
    build_sources_report,
    called_numbers,
)
from dialscore.config import Settings
from dialscore.enrichment.client_settings import effective_order, enrichment_order
from dialscore.jobs.refunds import OWN_KEY_REASON, REFUND_REASON
from dialscore.kit.errors import BadRequest
from dialscore.scoring.numbers import enriched_numbers

# The jobs a report reads when the caller does not say which: those of the last 30 days.
DEFAULT_PERIOD = timedelta(days=30)
# The longest period a report covers.
MAX_PERIOD = timedelta(days=366)
SINCE_NOT_BEFORE_UNTIL = "since must be before until"
PERIOD_TOO_LONG = "since and until must be at most 366 days apart"


def parse_period(since: str | None, until: str | None, now: datetime) -> tuple[datetime, datetime]:
    """The period [since, until) of a report, each bound read as the score report reads
    ``since``; until defaults to ``now``, since to ``DEFAULT_PERIOD`` before until. 400 for
    a bound that is no time, a since not before until, or a period over ``MAX_PERIOD``."""
    end = now if until is None or not until.strip() else parse_time(until, "until")
    if since is None or not since.strip():
        start = end - DEFAULT_PERIOD
    else:
        start = parse_time(since, "since")
    check_period(start, end)
    return start, end


def check_period(since: datetime, until: datetime) -> None:
    if since >= until:
        raise BadRequest(SINCE_NOT_BEFORE_UNTIL)
    if until - since > MAX_PERIOD:
        raise BadRequest(PERIOD_TOO_LONG)


async def sources_report(
    session: AsyncSession,
    settings: Settings,
    *,
    client_id: str,
    since: datetime,
    until: datetime,
) -> SourcesReport:
    """What each enrichment source did for the client's jobs created in [since, until)."""
    tallies = [
        Tally(*row)
        for row in await repo.tallies(session, client_id=client_id, since=since, until=until)
    ]
    jobs = await _job_credits(session, client_id=client_id, since=since, until=until)
    contacts: list[EnrichedContact] = []
    async for chunk in repo.enriched_contacts(
        session, client_id=client_id, since=since, until=until
    ):
        for source, own_key, scored_at, phones in chunk:
            found = tuple(number for number, _ in enriched_numbers(phones, None))
            if source is not None:  # the query reads only contacts a source is named for
                contacts.append(EnrichedContact(source, own_key, scored_at, found))
    numbers, earliest = called_numbers(contacts)
    calls: list[ReportedCall] = []
    if earliest is not None:
        async for rows in repo.calls_to(
            session, client_id=client_id, numbers=numbers, since=earliest
        ):
            calls.extend(reported_call(number, outcome, at) for number, outcome, at in rows)
    order = effective_order(settings, await enrichment_order(session, client_id))
    return build_sources_report(
        since=since,
        until=until,
        order=order,
        tallies=tallies,
        jobs=jobs,
        contacts=contacts,
        calls=calls,
    )


async def _job_credits(
    session: AsyncSession, *, client_id: str, since: datetime, until: datetime
) -> list[JobCredits]:
    """The period's enrichment jobs with their charge (a job's first debit, as
    ``accounts.repository.job_charge`` reads it) and refunds."""
    charged: dict[str, Decimal] = {}
    refunded: dict[tuple[str, str], Decimal] = {}
    for job_id, delta, reason in await repo.ledger_rows(
        session, client_id=client_id, since=since, until=until
    ):
        if job_id is None:
            continue
        if delta < 0:
            charged.setdefault(job_id, -delta)
        elif reason in (REFUND_REASON, OWN_KEY_REASON):
            refunded[(job_id, reason)] = refunded.get((job_id, reason), Decimal(0)) + delta
    return [
        JobCredits(
            job_id=job_id,
            accepted=accepted,
            unfound=unfound,
            charged=charged.get(job_id, Decimal(0)),
            refunded_unfound=refunded.get((job_id, REFUND_REASON), Decimal(0)),
            refunded_own_key=refunded.get((job_id, OWN_KEY_REASON), Decimal(0)),
        )
        for job_id, accepted, unfound in await repo.jobs(
            session, client_id=client_id, since=since, until=until
        )
    ]

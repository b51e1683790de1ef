"""A job's enrichment, one batch at a time: the waterfall's numbers for each contact, with
what each source was asked and found, run ahead of scoring."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dialscore.enrichment.waterfall import (
    EnrichmentRequest,
    EnrichmentSource,
    Tally,
    run_waterfall_many,
)
from dialscore.jobs.schemas import ENRICHMENT_JOB_TYPES, ContactRow
from dialscore.models import Job
from dialscore.scoring.numbers import EnrichedNumber, enriched_numbers, parse_contact_phones


@dataclass(frozen=True)
class Enriched:
    numbers: list[EnrichedNumber]
    record_id: str | None
    # The source named for the numbers, and whether they came through the client's own
    # provider keys (P204, P205); None for jobs that do not enrich.
    source: str | None = None
    own_key: bool = False


@dataclass
class EnrichedBatch:
    # For each contact, what enrichment found; None when it found no new number (rejected).
    found: list[Enriched | None]
    # What each source was asked and found for this batch, saved with it.
    tally: Tally = field(default_factory=dict)


async def enrich(
    job: Job,
    batch: Sequence[ContactRow],
    sources: Sequence[EnrichmentSource],
    collect_all: bool,
) -> EnrichedBatch:
    """The numbers enrichment found for each contact of the batch."""
    if job.job_type == "rescoring":
        # Scored again as they were: with the numbers enrichment found the first time.
        return EnrichedBatch(
            [
                Enriched(
                    enriched_numbers(contact.phones, contact.enriched_types),
                    contact.enrichment_contact_id,
                )
                for contact in batch
            ]
        )
    if job.job_type not in ENRICHMENT_JOB_TYPES:
        return EnrichedBatch([Enriched([], None) for _ in batch])
    requests = []
    for contact in batch:
        own = parse_contact_phones(dict(contact.fields))
        requests.append(
            EnrichmentRequest(
                job.client_id,
                contact.id,
                contact.fields,
                known=frozenset(p.e164 for p in own if p.e164 is not None),
            )
        )
    tally: Tally = {}
    found = await run_waterfall_many(sources, requests, collect_all=collect_all, tally=tally)
    return EnrichedBatch(
        [
            None
            if result is None
            else Enriched(
                [(p.number, p.type_hint) for p in result.phones],
                result.record_id,
                result.source,
                result.own_key,
            )
            for result in found
        ],
        tally,
    )


def enriching(
    job: Job, batch: Sequence[ContactRow], sources: Sequence[EnrichmentSource], collect_all: bool
) -> asyncio.Task[EnrichedBatch] | None:
    """The batch's enrichment, started; None for no batch."""
    if not batch:
        return None
    return asyncio.create_task(enrich(job, batch, sources, collect_all))


async def abandon(task: asyncio.Task[Any] | None) -> None:
    """Stops an enrichment whose batch will not be saved now (the job failed or stopped):
    its contacts stay pending for the next attempt."""
    if task is None:
        return
    if not task.done():
        task.cancel()
    # asyncio.wait, not "await task" under suppress(CancelledError): a cancellation of this
    # coroutine itself must not be swallowed with the enrichment's.
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: it is abandoned, whatever it raised

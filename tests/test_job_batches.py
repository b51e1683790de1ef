"""A job processed batch by batch, the next batch enriched while one is scored and saved:
every contact is asked for once and in order, and a source failing on a later batch keeps
what was saved and leaves the rest pending for the next attempt."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta

import pytest
from sqlalchemy import select

from dialscore.config import Settings
from dialscore.enrichment.waterfall import Enrichment, EnrichmentRequest, FoundPhone
from dialscore.jobs import enriching as jobs_enriching
from dialscore.jobs import processing as jobs_processing
from dialscore.kit.db import Database
from dialscore.models import Contact
from tests.support import job_status, unprocessed_job

# A failed attempt gives the job up: a second attempt takes it at once, lease or not.
SETTINGS = jobs_processing.ProcessingSettings(batch_size=2, job_lease=timedelta(seconds=10))


class SourceDown(RuntimeError):
    pass


class RecordingSource:
    """Finds a number for every contact whose last name ends in an even digit; notes the
    last names of each batch it is asked for; fails on its ``fail_on``-th batch."""

    name = "recording"

    def __init__(self, fail_on: int | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_on = fail_on

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        (found,) = await self.find_many([request])
        return found

    async def find_many(self, requests: Sequence[EnrichmentRequest]) -> list[Enrichment | None]:
        self.batches.append([str(r.fields["lastName"]) for r in requests])
        if len(self.batches) == self.fail_on:
            raise SourceDown("the source is down")
        found: list[Enrichment | None] = []
        for request in requests:
            digit = int(str(request.fields["lastName"])[-1])
            phone = FoundPhone(f"+1212555718{digit}", "mobile")
            found.append(
                Enrichment((phone,), f"rec-{digit}", self.name) if digit % 2 == 0 else None
            )
        return found


async def enrichment_job(settings: Settings, count: int) -> tuple[str, int]:
    """(job id, its outbox message) of an enrichment job of ``count`` contacts that no
    worker processes."""
    people = [
        {"firstName": "Ann", "lastName": f"Lee{i}", "companyAccount": "Acme"} for i in range(count)
    ]
    return await unprocessed_job(settings, people, kind="enrich")


async def contacts_of(db: Database, job_id: str) -> list[Contact]:
    """The job's contacts, in the order they were submitted."""
    async with db.read() as session:
        contacts = await session.scalars(
            select(Contact).where(Contact.job_id == job_id).order_by(Contact.ordinal)
        )
        return list(contacts)


async def states(db: Database, job_id: str) -> list[tuple[str, str, str | None]]:
    return [
        (str(c.fields["lastName"]), c.state, c.enrichment_contact_id)
        for c in await contacts_of(db, job_id)
    ]


async def keyed(db: Database, job_id: str) -> dict[str, tuple[str | None, str | None]]:
    """The contacts with the keys enrichment finds earlier contacts by: by last name, their
    last name key and first initial."""
    return {
        str(c.fields["lastName"]): (c.last_name_key, c.first_initial)
        for c in await contacts_of(db, job_id)
        if c.last_name_key is not None or c.company_key is not None
    }


async def test_each_batch_is_enriched_once_in_order(settings: Settings) -> None:
    job_id, outbox_id = await enrichment_job(settings, 5)
    db = Database(settings.resolved_database_url)
    try:
        source = RecordingSource()
        status = await jobs_processing.process_job(
            db, job_id=job_id, outbox_id=outbox_id, settings=SETTINGS, sources=[source]
        )
        assert status == "Finalized"
        assert source.batches == [["Lee0", "Lee1"], ["Lee2", "Lee3"], ["Lee4"]]
        assert await states(db, job_id) == [
            ("Lee0", "scored", "rec-0"),
            ("Lee1", "rejected", None),
            ("Lee2", "scored", "rec-2"),
            ("Lee3", "rejected", None),
            ("Lee4", "scored", "rec-4"),
        ]
        async with db.read() as session:
            first = await session.scalar(select(Contact).where(Contact.job_id == job_id))
        assert first is not None
        assert first.phones[-1]["number"] == "+12125557180"
        assert first.phones[-1]["type"] == "Service Enriched Phone 1"
    finally:
        await db.dispose()


async def test_a_source_failing_on_a_later_batch_keeps_what_was_saved(settings: Settings) -> None:
    job_id, outbox_id = await enrichment_job(settings, 5)
    db = Database(settings.resolved_database_url)
    try:
        failing = RecordingSource(fail_on=2)
        with pytest.raises(SourceDown):
            await jobs_processing.process_job(
                db, job_id=job_id, outbox_id=outbox_id, settings=SETTINGS, sources=[failing]
            )
        assert failing.batches == [["Lee0", "Lee1"], ["Lee2", "Lee3"]]
        assert await states(db, job_id) == [
            ("Lee0", "scored", "rec-0"),
            ("Lee1", "rejected", None),
            ("Lee2", "pending", None),
            ("Lee3", "pending", None),
            ("Lee4", "pending", None),
        ]
        assert await job_status(db, job_id) == "Processing"
        # Written with the score (P215): neither a pending contact nor a rejected one is
        # searched for as an earlier contact.
        assert await keyed(db, job_id) == {"Lee0": ("lee0", "a")}

        # The next attempt asks only for the contacts still pending.
        source = RecordingSource()
        status = await jobs_processing.process_job(
            db, job_id=job_id, outbox_id=outbox_id, settings=SETTINGS, sources=[source]
        )
        assert status == "Finalized"
        assert source.batches == [["Lee2", "Lee3"], ["Lee4"]]
        assert [state for _, state, _ in await states(db, job_id)] == [
            "scored",
            "rejected",
            "scored",
            "rejected",
            "scored",
        ]
        assert list(await keyed(db, job_id)) == ["Lee0", "Lee2", "Lee4"]
    finally:
        await db.dispose()


async def test_abandoning_an_enrichment_does_not_swallow_a_cancellation() -> None:
    # The job's own task is cancelled (its worker stops) while it waits for the enrichment
    # it abandons, which takes a moment to stop: the job's task must still end cancelled.
    stopping = asyncio.Event()

    async def enrichment() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            stopping.set()
            await asyncio.sleep(0.5)

    async def job(abandoned: asyncio.Task[None]) -> None:
        await jobs_enriching.abandon(abandoned)
        await asyncio.sleep(3600)  # what the job would do next, were it not cancelled

    abandoned = asyncio.create_task(enrichment())
    await asyncio.sleep(0)  # the enrichment is under way
    running = asyncio.create_task(job(abandoned))
    await asyncio.wait_for(stopping.wait(), timeout=5)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, timeout=5)

"""A worker stopping (SIGTERM, P83): it claims nothing more, lets a job finish the batch it is
on and hands the rest of the job back, and after the grace time cuts short what is still
running (a job waiting on a source, a delivery waiting on a hung receiver) and hands it
back: due at once for another worker, no attempt counted, nothing lost.

The processes' own exit on SIGTERM (status 0) is checked by the chaos test and
tests/test_processes.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from dialscore.config import Settings
from dialscore.enrichment.waterfall import Enrichment, EnrichmentRequest, FoundPhone
from dialscore.jobs import processing as jobs_processing
from dialscore.jobs.service import PROCESS_JOB
from dialscore.kit.clock import utcnow
from dialscore.kit.wakers import Wakers
from dialscore.models import Job, OutboxMessage, WebhookAttempt
from dialscore.worker.context import TaskContext
from dialscore.worker.runtime import BackgroundWorker
from tests.fakes import Answer, running_receiver
from tests.test_webhook_outage import Work, subscribed, until

GRACE = 0.5
# The slack allowed to a stop beyond its grace time, for a loaded machine.
SLACK = 3.0
# How long a job may take to reach its held batch: a bound on a wait that takes about a
# second, wide for a machine under the whole suite's load.
HELD_WITHIN = 60


def people(count: int) -> list[dict[str, Any]]:
    return [
        {"firstName": "Ann", "lastName": f"Lee{i}", "companyAccount": "Acme"} for i in range(count)
    ]


class BatchSource:
    """An enrichment source that answers its first ``answered`` batches at once and holds
    every later one until ``release`` is set (from any thread); ``held`` is set when a batch
    is held."""

    name = "batches"

    def __init__(self, answered: int) -> None:
        self.answered = answered
        self.asked = 0
        self.held = asyncio.Event()
        self.release = threading.Event()

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        (found,) = await self.find_many([request])
        return found

    async def find_many(self, requests: Sequence[EnrichmentRequest]) -> list[Enrichment | None]:
        self.asked += 1
        if self.asked > self.answered:
            self.held.set()
            while not self.release.is_set():
                await asyncio.sleep(0.01)
        return [
            Enrichment((FoundPhone("+12125557182", "mobile"),), "rec", self.name) for _ in requests
        ]


def job_task(source: BatchSource) -> Callable[..., Awaitable[None]]:
    """The worker's process_job task, with ``source`` as the only enrichment source."""

    async def task(context: TaskContext, *, outbox_id: int, job_id: str) -> None:
        await jobs_processing.process_job(
            context.db,
            job_id=job_id,
            outbox_id=outbox_id,
            settings=jobs_processing.ProcessingSettings(
                batch_size=2, job_lease=timedelta(seconds=10)
            ),
            sources=[source],
            should_stop=lambda: context.stopping,
        )

    return task


async def stopped_after(
    background: BackgroundWorker, meanwhile: Callable[[], None] | None = None
) -> float:
    """How long stopping took; ``meanwhile`` is called once the stop has begun."""
    started = time.monotonic()
    stopping = asyncio.ensure_future(background.stop())
    if meanwhile is not None:
        await until(lambda: background.context.stopping, "the stop to begin")
        meanwhile()
    await stopping
    return time.monotonic() - started


async def handed_back(work: Work, job_id: str, outbox_id: int) -> tuple[Job, OutboxMessage]:
    async with work.db.read() as session:
        job = await session.get(Job, job_id)
        message = await session.get(OutboxMessage, outbox_id)
    assert job is not None and message is not None
    return job, message


async def test_a_job_stops_after_its_batch_and_is_handed_back(
    settings: Settings, tmp_path: Path
) -> None:
    with running_receiver() as receiver:
        async with subscribed(settings, receiver, rate=50) as work:
            job_id, outbox_id = await work.submit(people(6), kind="enrich")
            # The first batch is answered; the second is held while the first is saved.
            source = BatchSource(answered=1)
            configured = work.settings.model_copy(update={"shutdown_grace_seconds": 30.0})
            background = BackgroundWorker(
                configured, work.db, Wakers(), tasks={PROCESS_JOB: job_task(source)}
            )
            await background.start()
            background.relay.wake()
            await asyncio.wait_for(source.held.wait(), timeout=HELD_WITHIN)

            async def first_batch_saved() -> bool:
                job, _ = await handed_back(work, job_id, outbox_id)
                return job.processed_count == 2

            # The job waits for its second batch's enrichment when the stop begins, and gets
            # it then: it saves that batch and stops.
            await until(first_batch_saved, "the first batch to be saved")
            took = await stopped_after(background, meanwhile=source.release.set)
            job, message = await handed_back(work, job_id, outbox_id)
    # It did not wait out the grace time: the job stopped once its batch was saved (the
    # second, or, had the stop come between the first's commit and the next look, the first).
    assert took < SLACK
    assert (job.status, job.lease_until) == ("Processing", None)
    assert job.processed_count in (2, 4)
    assert message.available_at <= utcnow()
    assert (message.attempts, message.last_error, message.failed_at) == (0, None, None)


async def test_what_outlives_the_grace_time_is_cut_short_and_handed_back(
    settings: Settings, tmp_path: Path
) -> None:
    hung = running_receiver(lambda request, index: Answer(200, delay=30.0))
    with hung as receiver:
        async with subscribed(settings, receiver, rate=50) as work:
            await work.job(2)  # its two contact events wait for the dispatcher
            job_id, outbox_id = await work.submit(people(2), kind="enrich")
            source = BatchSource(answered=0)  # the job waits on its source for good
            configured = work.settings.model_copy(
                update={"shutdown_grace_seconds": GRACE, "webhook_timeout": 20.0}
            )
            background = BackgroundWorker(
                configured, work.db, Wakers(), tasks={PROCESS_JOB: job_task(source)}
            )
            await background.start()
            background.relay.wake()
            await asyncio.wait_for(source.held.wait(), timeout=HELD_WITHIN)
            await until(lambda: len(receiver.received) == 2, "both deliveries in flight")
            took = await stopped_after(background)
            job, message = await handed_back(work, job_id, outbox_id)
            deliveries = [d for d in await work.deliveries() if d.event_type != "job.completed"]
            async with work.db.read() as session:
                attempts = await session.scalar(select(func.count()).select_from(WebhookAttempt))
    assert GRACE <= took < GRACE + SLACK
    assert (job.status, job.processed_count, job.lease_until) == ("Processing", 0, None)
    assert message.available_at <= utcnow()
    assert (message.attempts, message.last_error) == (0, None)
    # Cut short mid-send: due again at once, no attempt recorded (the receiver dedupes by id).
    assert [(d.state, d.attempts) for d in deliveries] == [("pending", 0), ("pending", 0)]
    assert all(d.leased_until is None and d.available_at <= utcnow() for d in deliveries)
    assert attempts == 0

"""The process-job task."""

from __future__ import annotations

from datetime import timedelta

from dialscore.jobs import processing, service
from dialscore.kit.wakers import DISPATCHER
from dialscore.worker.registry import task
from dialscore.worker.runtime import TaskContext


@task(service.PROCESS_JOB)
async def process_job(context: TaskContext, *, outbox_id: int, job_id: str) -> None:
    settings = context.settings
    await processing.process_job(
        context.db,
        job_id=job_id,
        outbox_id=outbox_id,
        settings=processing.ProcessingSettings(
            batch_size=settings.job_batch_size,
            job_lease=timedelta(seconds=settings.job_lease_seconds),
            outbox_lease=timedelta(seconds=settings.outbox_lease_seconds),
        ),
        sources=context.enrichment_sources,
        verifiers=context.providers,
        collect_all=settings.enrichment_collect_all,
        on_events=lambda: context.wakers.wake(DISPATCHER),
    )

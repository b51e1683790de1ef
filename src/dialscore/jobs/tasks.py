"""The tasks of jobs (processing a job), and what they need from the process that runs them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Protocol

from dialscore.config import Settings
from dialscore.enrichment.waterfall import EnrichmentSource
from dialscore.jobs import processing, service
from dialscore.kit.db import Database
from dialscore.kit.foreground import Step
from dialscore.kit.wakers import DISPATCHER, Wakers
from dialscore.scoring.providers import VerificationProvider
from dialscore.scoring.reassigned import ReassignedNumbers
from dialscore.scoring.service import RateScales


class JobContext(Protocol):
    """What a task of jobs uses, given by the worker that runs it: the settings, a database
    for the worker's event loop, the enrichment sources, the verification providers and the
    Reassigned Numbers Database query, the process's wakers, the clients' rate scales it
    keeps, whether the process is stopping, and the wait for the requests it serves."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    async def enrichment_sources(self, client_id: str) -> Sequence[EnrichmentSource]:
        """The client's waterfall (its order and its own provider keys)."""
        ...

    @property
    def providers(self) -> Sequence[VerificationProvider]: ...

    @property
    def reassigned_numbers(self) -> ReassignedNumbers | None: ...

    @property
    def wakers(self) -> Wakers: ...

    @property
    def rate_scales(self) -> RateScales: ...

    @property
    def stopping(self) -> bool: ...

    @property
    def step(self) -> Step:
        """A step of a job: after the requests the process serves, in turn with its other
        jobs' steps (P211, P219)."""
        ...


async def process_job(context: JobContext, *, outbox_id: int, job_id: str) -> None:
    settings = context.settings
    await processing.process_job(
        context.db,
        job_id=job_id,
        outbox_id=outbox_id,
        settings=processing.ProcessingSettings(
            batch_size=settings.job_batch_size,
            job_lease=timedelta(seconds=settings.job_lease_seconds),
            compliance_rules=settings.compliance_rules,
        ),
        sources=context.enrichment_sources,
        verifiers=context.providers,
        reassigned=context.reassigned_numbers,
        collect_all=settings.enrichment_collect_all,
        on_events=lambda: context.wakers.wake(DISPATCHER),
        # A job stops after its batch when the process stops, and another worker goes on.
        should_stop=lambda: context.stopping,
        rate_scales=context.rate_scales,
        step=context.step,
    )


# The tasks, by the actor name their outbox messages carry. Each is called with the context
# and the message's payload, plus ``outbox_id``, and deletes its message when it is done.
TASKS: Mapping[str, Callable[..., Awaitable[None]]] = {service.PROCESS_JOB: process_job}

"""What the tasks of a worker process use: settings, a database for the worker's event loop,
providers made on first use, the process's wakers, and whether the process is stopping."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import Middleware

from dialscore.config import Settings
from dialscore.enrichment import client_settings
from dialscore.enrichment.client_sources import ClientSources
from dialscore.enrichment.waterfall import EnrichmentSource
from dialscore.kit.db import Database
from dialscore.kit.foreground import Step, any_time
from dialscore.kit.wakers import Wakers
from dialscore.scoring.providers import (
    VerificationProvider,
    providers_from_settings,
    reassigned_numbers_from_settings,
)
from dialscore.scoring.reassigned import ReassignedNumbers
from dialscore.scoring.service import RateScales


@dataclass
class TaskContext:
    """Made before the worker takes its first message, and given to every task it runs.

    ``db`` is the tasks' own: they run on Dramatiq's event loop thread, and pooled
    connections belong to the loop that opened them."""

    settings: Settings
    db: Database
    wakers: Wakers = field(default_factory=Wakers)
    # How a job takes each of its steps: in `serve`, after the requests the process serves
    # and in turn with its other jobs' steps (P211, P219).
    step: Step = any_time
    # The clients' rate scales (P90), kept between jobs.
    rate_scales: RateScales = field(default_factory=RateScales)
    # Verification providers of core scoring, made on first use on the worker's event loop.
    _providers: list[VerificationProvider] | None = None
    # The FCC Reassigned Numbers Database query (P191), likewise; a list once made (empty
    # when it is not configured).
    _reassigned: list[ReassignedNumbers] | None = None
    # The enrichment waterfalls, each client's, whose providers are made on first use
    # likewise.
    _enrichment: ClientSources | None = None
    # Set when the process stops: runs taken after it are handed back, jobs stop after
    # their batch. An Event, since the stop comes from another thread than the tasks'.
    _stop: threading.Event = field(default_factory=threading.Event)
    # The runs under way, as tasks of the worker's event loop (changed only there).
    runs: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Asks the tasks to stop; safe from any thread."""
        self._stop.set()

    def cancel_runs(self) -> None:
        """Cancels every run under way; call it on the worker's event loop."""
        for run in list(self.runs):
            run.cancel()

    @property
    def providers(self) -> list[VerificationProvider]:
        if self._providers is None:
            self._providers = providers_from_settings(self.settings)
        return self._providers

    @property
    def reassigned_numbers(self) -> ReassignedNumbers | None:
        if self._reassigned is None:
            checker = reassigned_numbers_from_settings(self.settings)
            self._reassigned = [] if checker is None else [checker]
        return self._reassigned[0] if self._reassigned else None

    async def enrichment_sources(self, client_id: str) -> list[EnrichmentSource]:
        """The client's waterfall: the operator's sources in its order, with its own
        provider keys (read for each job, so that a change counts from the next)."""
        if self._enrichment is None:
            self._enrichment = ClientSources(self.settings, self.db)
        async with self.db.read() as session:
            chosen = await client_settings.client_enrichment(
                session, client_id, self.settings.resolved_secret_key
            )
        return self._enrichment.sources(client_id, chosen)

    async def close(self) -> None:
        for provider in self._providers or ():
            await provider.close()
        for checker in self._reassigned or ():
            await checker.close()
        if self._enrichment is not None:
            await self._enrichment.close()
        await self.db.dispose()


class ClosesTaskContext(Middleware):
    """Closes the context on the worker's event loop once the worker threads have stopped.

    Added after Dramatiq's AsyncIO middleware: "after" hooks run in reverse order, so this
    one runs while that loop is still up."""

    def __init__(self, context: TaskContext) -> None:
        self.context = context

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None:
            loop_thread.run_coroutine(self.context.close())

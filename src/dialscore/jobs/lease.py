"""A worker's hold on a job it processes: renewed by a heartbeat, checked by every
transaction that writes the job's results, given up when the worker stops."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.jobs import repository as repo
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.leases import LeaseLost


class JobLease:
    """The lease a worker took on a job with ``repo.claim``. Its end (``lease_until``) is the
    worker's token: a renewal moves it only from the token this worker wrote, so a worker
    whose lease ran out and was taken by another learns it at its next renewal or write,
    instead of scoring the same contacts again under other event ids.

    One lock orders the heartbeat's renewals and the writes, which run on one event loop:
    a write checks the token that no renewal is changing meanwhile."""

    def __init__(
        self,
        db: Database,
        job_id: str,
        *,
        token: datetime,
        length: timedelta,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.job_id = job_id
        self.token = token
        self.length = length
        self.clock = clock
        self._lock = asyncio.Lock()

    def _lost(self, status: str | None) -> LeaseLost:
        """Why the lease is not this worker's, from the job's ``status`` (None: no job)."""
        if status is None:
            # Erased while it ran (P133): what it was writing is not wanted any more.
            return LeaseLost(f"job {self.job_id} was erased while it ran")
        return LeaseLost(f"job {self.job_id} was taken over: its lease ran out")

    async def renew(self) -> None:
        """Extends the lease by its length from now; ``LeaseLost`` when it is not ours."""
        async with self._lock:
            until = self.clock() + self.length
            async with self.db.unit_of_work() as session:
                if not await repo.renew_lease(session, self.job_id, held=self.token, until=until):
                    status = await repo.job_status(session, self.job_id)
                    if status is not None and status not in repo.ACTIVE_STATES:
                        # Finished (its lease cleared) while this renewal waited for the
                        # lock: nothing is left to renew. Had another worker finished it, this
                        # one's next write would still find it lost.
                        return
                    raise self._lost(status)
            # Only once committed: a renewal rolled back left the old token in place.
            self.token = until

    @asynccontextmanager
    async def holding(self) -> AsyncIterator[AsyncSession]:
        """A unit of work that commits only if this worker still holds the job; it raises
        ``LeaseLost`` (writing nothing) when another worker has taken it over, or the job was
        erased."""
        async with self._lock, self.db.unit_of_work() as session:
            if not await repo.holds_lease(session, self.job_id, held=self.token):
                raise self._lost(await repo.job_status(session, self.job_id))
            yield session

    async def release(self) -> None:
        """Gives the job up for another worker to take at once (this one is stopping)."""
        async with self._lock, self.db.unit_of_work() as session:
            await repo.release_lease(session, self.job_id, held=self.token)

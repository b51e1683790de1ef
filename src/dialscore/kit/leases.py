"""Work held under a lease: a heartbeat renews the lease while the work runs, so that a live
worker keeps what it holds however long it takes, and a dead one loses it within a lease."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog

log = structlog.get_logger(__name__)

T = TypeVar("T")

# The lease is renewed this many times per its length, so that one late or failed renewal
# does not lose it.
BEATS_PER_LEASE = 3


class LeaseLost(Exception):
    """Another worker holds what this one was working on: its lease ran out and was taken."""


class WorkStopped(Exception):
    """The work stopped because its process is stopping, after handing back what it held."""


def beat_seconds(lease_seconds: float) -> float:
    return lease_seconds / BEATS_PER_LEASE


async def keep_alive(
    work: Awaitable[T], renew: Callable[[], Awaitable[None]], *, every: float, name: str
) -> T:
    """Runs ``work`` and calls ``renew`` every ``every`` seconds until it ends; its result.

    A renewal that raises ``LeaseLost`` cancels the work and raises ``LeaseLost``. Any other
    failure of a renewal is logged (once until a renewal succeeds again) and tried again at
    the next beat: the lease may still last. Cancelling this cancels the work and waits for
    it to end."""
    task = asyncio.ensure_future(work)
    failing = False
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            try:
                await renew()
            except LeaseLost:
                raise
            except Exception as exc:
                if not failing:
                    log.warning("cannot renew a lease; trying again", work=name, error=str(exc))
                failing = True
            else:
                if failing:
                    log.info("renewed a lease again", work=name)
                failing = False
    finally:
        if not task.done():
            task.cancel()
            # Not "await task": a cancellation of this coroutine itself must stay raised.
            await asyncio.wait({task})
            if not task.cancelled():
                task.exception()  # retrieved: the work was abandoned, whatever it raised

"""Dramatiq actors made from tasks: each runs its task with the worker's context, holds the
task's outbox message under a lease renewed while it runs, and a task that fails is retried
through its outbox message, never by Dramatiq."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

import dramatiq
import structlog

from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.leases import LeaseLost, WorkStopped, beat_seconds, keep_alive
from dialscore.outbox import failed, messages
from dialscore.worker.context import TaskContext

log = structlog.get_logger(__name__)

Task = Callable[..., Awaitable[None]]
QUEUE = "default"
TIME_LIMIT_MS = 15 * 60 * 1000
# How much of an exception's text an outbox row keeps.
ERROR_CHARS = 2000


def failure_policy(settings: Settings) -> failed.FailurePolicy:
    """The outbox's retries: soon after a failure, then less and less often."""
    return failed.FailurePolicy(
        max_attempts=settings.outbox_max_attempts,
        first_retry=timedelta(seconds=settings.outbox_retry_seconds),
        longest_retry=timedelta(seconds=settings.outbox_retry_max_seconds),
    )


def declare_actors(
    broker: Any,
    tasks: Mapping[str, Task],
    context: TaskContext,
    policy: failed.FailurePolicy,
    *,
    clock: Callable[[], datetime] = utcnow,
) -> None:
    """Declares one actor per task on ``broker``, each bound to ``context``."""
    for name, task in tasks.items():
        dramatiq.actor(
            actor_name=name,
            queue_name=QUEUE,
            broker=broker,
            # The outbox retries (record_task_failure): a Dramatiq retry on top would run a
            # failing task again behind the outbox's back.
            max_retries=0,
            time_limit=TIME_LIMIT_MS,
        )(_bound(name, task, context, policy, clock))


def _bound(
    name: str,
    task: Task,
    context: TaskContext,
    policy: failed.FailurePolicy,
    clock: Callable[[], datetime],
) -> Callable[..., Awaitable[None]]:
    async def run(*, outbox_id: int, **payload: Any) -> None:
        await run_task(context, name, task, outbox_id, payload, policy, clock=clock)

    run.__name__ = name
    run.__qualname__ = name
    return run


async def run_task(
    context: TaskContext,
    actor: str,
    task: Task,
    outbox_id: int,
    payload: dict[str, Any],
    policy: failed.FailurePolicy,
    *,
    clock: Callable[[], datetime],
) -> None:
    """Runs one message's task: counted as an attempt when it starts, its message leased to
    it while it runs (renewed every third of the lease), handed back at once when the
    process stops, and its failure recorded on the message."""
    lease = timedelta(seconds=context.settings.outbox_lease_seconds)
    if context.stopping:
        # Taken from the broker after the process began to stop: another worker runs it.
        await _hand_back(context, actor, outbox_id, started=False)
        return
    async with context.db.unit_of_work() as session:
        if not await messages.start_run(session, outbox_id, utcnow() + lease):
            # An earlier copy of the message finished it (or it was set aside): a message
            # that waited in the broker longer than its lease was published again.
            return

    async def renew() -> None:
        async with context.db.unit_of_work() as session:
            await messages.extend_lease(session, outbox_id, utcnow() + lease)

    current = asyncio.current_task()
    if current is not None:
        context.runs.add(current)
    try:
        await keep_alive(
            task(context, outbox_id=outbox_id, **payload),
            renew,
            every=beat_seconds(lease.total_seconds()),
            name=actor,
        )
    except (WorkStopped, asyncio.CancelledError):
        # The process is stopping (or the task outlived Dramatiq's time limit): not a failed
        # attempt, and due again at once for another worker. The cancellation ends here, at
        # the top of the message's coroutine, so that Dramatiq takes the message as handled:
        # the outbox, not the broker, brings it back.
        await _hand_back(context, actor, outbox_id, started=True)
    except LeaseLost as exc:
        # Its lease ran out (the heartbeat could not renew it) and another run holds the work.
        log.warning("task lost its lease", actor=actor, outbox_id=outbox_id, reason=str(exc))
    except Exception as exc:
        await record_task_failure(context, actor, outbox_id, exc, policy, now=clock())
    finally:
        if current is not None:
            context.runs.discard(current)


async def _hand_back(context: TaskContext, actor: str, outbox_id: int, *, started: bool) -> None:
    """Makes a message this process will not finish due at once for another worker; a run
    it started and stopped is not counted as a failed attempt."""
    try:
        async with context.db.unit_of_work() as session:
            if started:
                await messages.defer(session, outbox_id, utcnow())
            else:
                await messages.release(session, outbox_id, utcnow())
    except Exception:
        # Its lease runs out soon enough, and it is published again then.
        log.exception("could not hand back a task's message", actor=actor, outbox_id=outbox_id)
        return
    log.info("task handed back to other workers", actor=actor, outbox_id=outbox_id)


def describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:ERROR_CHARS]


async def record_task_failure(
    context: TaskContext,
    actor: str,
    outbox_id: int,
    exc: Exception,
    policy: failed.FailurePolicy,
    *,
    now: datetime,
) -> None:
    """Notes the failure on the task's outbox message: due again after a short wait, or set
    aside once its attempts have run out (logged as an error)."""
    error = describe_error(exc)
    try:
        async with context.db.unit_of_work() as session:
            failure = await failed.record_failure(
                session, outbox_id, error=error, now=now, policy=policy
            )
            failed_total = (
                await failed.count_failed(session) if failure and failure.set_aside else 0
            )
    except Exception:
        # The message stays leased: published again when its lease runs out, which counts.
        log.exception("could not record a failed task", actor=actor, outbox_id=outbox_id)
        return
    retry_at = failure.retry_at if failure is not None else None
    log.warning(
        "task failed",
        actor=actor,
        outbox_id=outbox_id,
        attempts=failure.attempts if failure is not None else None,
        retry_in_seconds=(retry_at - now).total_seconds() if retry_at is not None else None,
        exc_info=exc,
    )
    if failure is not None and failure.set_aside:
        failed.report_set_aside(
            outbox_id=outbox_id,
            actor=actor,
            attempts=failure.attempts,
            error=error,
            failed_total=failed_total,
        )

"""Dramatiq actors made from tasks: each runs its task with the worker's context."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import dramatiq

from dialscore.worker.context import TaskContext

Task = Callable[..., Awaitable[None]]
QUEUE = "default"
TIME_LIMIT_MS = 15 * 60 * 1000


def declare_actors(broker: Any, tasks: Mapping[str, Task], context: TaskContext) -> None:
    """Declares one actor per task on ``broker``, each bound to ``context``."""
    for name, task in tasks.items():
        dramatiq.actor(
            actor_name=name,
            queue_name=QUEUE,
            broker=broker,
            max_retries=3,
            min_backoff=1000,
            time_limit=TIME_LIMIT_MS,
        )(_bound(name, task, context))


def _bound(name: str, task: Task, context: TaskContext) -> Callable[..., Awaitable[None]]:
    async def run(*, outbox_id: int, **payload: Any) -> None:
        await task(context, outbox_id=outbox_id, **payload)

    run.__name__ = name
    run.__qualname__ = name
    return run

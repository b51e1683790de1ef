"""Tasks: async functions that the broker runs as Dramatiq actors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

TaskFn = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class Task:
    name: str
    fn: TaskFn
    queue: str
    time_limit_ms: int


TASKS: dict[str, Task] = {}


def task(
    name: str, *, queue: str = "default", time_limit_ms: int = 15 * 60 * 1000
) -> Callable[[TaskFn], TaskFn]:
    """Registers an async function as a task; every task receives ``outbox_id`` first."""

    def register(fn: TaskFn) -> TaskFn:
        TASKS[name] = Task(name=name, fn=fn, queue=queue, time_limit_ms=time_limit_ms)
        return fn

    return register


def load_tasks() -> dict[str, Task]:
    """Imports every module that defines tasks, so the registry is complete."""
    import dialscore.jobs.tasks  # noqa: F401

    return TASKS


def call(name: str, kwargs: dict[str, Any]) -> Awaitable[None]:
    return TASKS[name].fn(**kwargs)

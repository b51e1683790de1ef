"""The outbox as the only retry of background work: a failed task comes back soon, a task that
keeps failing is set aside with its last error (logged, counted, listed by
``dialscore admin failed-work``, which can requeue it), and migration 0010 keeps the rows."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from dialscore.config import Settings
from dialscore.kit.clock import isoformat
from dialscore.kit.db import Database
from dialscore.kit.wakers import Wakers
from dialscore.models import OutboxMessage
from dialscore.outbox import failed, messages
from dialscore.worker.context import TaskContext
from dialscore.worker.relay import Relay
from dialscore.worker.runtime import BackgroundWorker
from tests.processes import REDIS_URL, base_env, cli_error, cli_json, redis_namespace

NOW = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
ACTOR = "flaky"
SET_ASIDE = "outbox message set aside after failing too often"


# -- the worker: a task that fails -----------------------------------------------------------


class FlakyTask:
    """A task that raises on the calls listed in ``failing`` (1-based, or all when None) and
    otherwise finishes its message, as a real task does."""

    def __init__(self, failing: set[int] | None = None) -> None:
        self.failing = failing
        self.calls = 0

    async def __call__(self, context: TaskContext, *, outbox_id: int, item: str) -> None:
        self.calls += 1
        if self.failing is None or self.calls in self.failing:
            raise RuntimeError(f"{item} failed on call {self.calls}")
        async with context.db.unit_of_work() as session:
            await messages.finish(session, outbox_id)


@asynccontextmanager
async def worker_running(
    settings: Settings,
    task: Callable[..., Awaitable[None]],
    *,
    clock: Callable[[], datetime] | None = None,
    **update: Any,
) -> AsyncIterator[tuple[BackgroundWorker, Database]]:
    values = {"outbox_max_attempts": 3, "outbox_retry_seconds": 0.0, **update}
    configured = settings.model_copy(update=values)
    db = Database(configured.resolved_database_url)
    extra: dict[str, Any] = {} if clock is None else {"clock": clock}
    background = BackgroundWorker(configured, db, Wakers(), tasks={ACTOR: task}, **extra)
    await background.start()
    try:
        yield background, db
    finally:
        await background.stop()
        await db.dispose()


async def enqueue(db: Database, item: str = "item-1") -> int:
    async with db.unit_of_work() as session:
        message = messages.enqueue(session, ACTOR, {"item": item})
        await session.flush()
        return message.id


async def row(db: Database, outbox_id: int) -> OutboxMessage | None:
    async with db.read() as session:
        return await session.get(OutboxMessage, outbox_id)


async def run_until(
    background: BackgroundWorker, done: Callable[[], Awaitable[bool]], rounds: int = 30
) -> None:
    """Publishes what is due and waits for the worker, until ``done`` (bounded rounds)."""
    for _ in range(rounds):
        await background.relay.drain()
        await asyncio.to_thread(background.join)
        if await done():
            return
    raise AssertionError("not done after the rounds allowed")


async def test_a_task_that_always_fails_is_set_aside_after_max_attempts(
    settings: Settings,
) -> None:
    task = FlakyTask()
    with capture_logs() as logs:
        async with worker_running(settings, task) as (background, db):
            outbox_id = await enqueue(db)
            await run_until(background, _set_aside(db, outbox_id))
            # Set aside for good: the relay publishes it no more.
            assert await background.relay.drain() == 0
            await asyncio.to_thread(background.join)
            message = await row(db, outbox_id)
    assert task.calls == 3
    assert message is not None
    assert message.attempts == 3
    assert message.last_error == "RuntimeError: item-1 failed on call 3"
    assert message.failed_at is not None
    errors = [entry for entry in logs if entry["log_level"] == "error"]
    assert len(errors) == 1, errors
    assert errors[0]["event"].startswith(SET_ASIDE)
    assert (errors[0]["outbox_id"], errors[0]["actor"], errors[0]["attempts"]) == (
        outbox_id,
        ACTOR,
        3,
    )
    assert errors[0]["failed_total"] == 1
    assert errors[0]["error"] == message.last_error
    warnings = [entry for entry in logs if entry["event"] == "task failed"]
    assert [entry["attempts"] for entry in warnings] == [1, 2, 3]


async def test_set_aside_work_is_listed_by_the_command_and_requeued(
    settings: Settings, tmp_path: Path
) -> None:
    task = FlakyTask()
    env = base_env(tmp_path / "var", DATABASE_URL=settings.resolved_database_url)

    def command(*args: str) -> dict[str, Any]:
        return cli_json(["admin", "failed-work", *args], env=env, cwd=tmp_path)

    async with worker_running(settings, task) as (background, db):
        outbox_id = await enqueue(db, "item-7")
        await run_until(background, _set_aside(db, outbox_id))
        message = await row(db, outbox_id)
        assert message is not None and message.failed_at is not None

        listed = await asyncio.to_thread(command)
        assert listed == {
            "count": 1,
            "messages": [
                {
                    "id": outbox_id,
                    "actor": ACTOR,
                    "payload": {"item": "item-7"},
                    "attempts": 3,
                    "lastError": "RuntimeError: item-7 failed on call 3",
                    "failedAt": isoformat(message.failed_at),
                    "createdAt": isoformat(message.created_at),
                }
            ],
        }

        task.failing = set()  # from now on the task succeeds
        assert await asyncio.to_thread(command, "--requeue", str(outbox_id)) == {
            "requeued": [outbox_id]
        }
        # Due again with its attempts reset: it runs, and this time finishes.
        await run_until(background, _gone(db, outbox_id))
        assert task.calls == 4

        assert await asyncio.to_thread(command) == {"count": 0, "messages": []}
        assert await asyncio.to_thread(command, "--requeue-all") == {"requeued": []}
        refused = await asyncio.to_thread(
            cli_error, ["admin", "failed-work", "--requeue", str(outbox_id)], env=env, cwd=tmp_path
        )
        assert str(outbox_id) in refused


def _set_aside(db: Database, outbox_id: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        found = await row(db, outbox_id)
        return found is not None and found.failed_at is not None

    return check


def _gone(db: Database, outbox_id: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await row(db, outbox_id) is None

    return check


async def test_a_task_that_fails_once_then_succeeds_finishes(settings: Settings) -> None:
    task = FlakyTask({1})
    async with worker_running(settings, task) as (background, db):
        outbox_id = await enqueue(db)
        await run_until(background, _gone(db, outbox_id))
    assert task.calls == 2


async def test_a_failed_task_comes_back_after_the_backoff_not_the_lease(
    settings: Settings,
) -> None:
    """Failures recorded at a fixed time: the first is due again after the first retry wait,
    the second after twice that, both long before the outbox lease would bring it back."""
    # An hour ahead of the real clock, so that the relay's own polls (on the real clock)
    # leave the message alone between the steps of the test.
    failed_at = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    task = FlakyTask()
    async with worker_running(
        settings,
        task,
        clock=lambda: failed_at,
        outbox_retry_seconds=5.0,
        outbox_lease_seconds=120.0,
    ) as (background, db):
        outbox_id = await enqueue(db)
        await background.relay.drain()
        await asyncio.to_thread(background.join)
        first = await row(db, outbox_id)
        assert first is not None
        assert (first.attempts, first.available_at) == (1, failed_at + timedelta(seconds=5))
        assert first.last_error == "RuntimeError: item-1 failed on call 1"
        assert first.failed_at is None

        async with db.unit_of_work() as session:  # its wait is over
            await messages.extend_lease(session, outbox_id, datetime.now(UTC))
        await background.relay.drain()
        await asyncio.to_thread(background.join)
        second = await row(db, outbox_id)
        assert second is not None
        assert (second.attempts, second.available_at) == (2, failed_at + timedelta(seconds=10))
    assert task.calls == 2


@pytest.mark.parametrize("broker", ["memory", "redis"])
async def test_a_message_waiting_when_the_worker_starts_runs_with_its_context(
    settings: Settings, broker: str
) -> None:
    """Tasks close over a context made before the worker takes any message: one waiting in
    the broker when the worker threads start (as a stopped worker leaves it in Redis) runs
    with it, instead of finding no context yet. (It may run twice: the start republishes the
    messages a stopped worker held, this one too when it is not finished yet: at least
    once.)"""
    task = FlakyTask(failing=set())
    db = Database(settings.resolved_database_url)
    with redis_namespace() as namespace:
        if broker == "redis":
            settings = settings.model_copy(
                update={"redis_url": REDIS_URL, "redis_namespace": namespace}
            )
        await _run_the_waiting_message(settings, db, task)
    # Each call finished the message through its context (FlakyTask uses context.db).
    assert task.calls in (1, 2)


async def _run_the_waiting_message(settings: Settings, db: Database, task: FlakyTask) -> None:
    background = BackgroundWorker(settings, db, Wakers(), tasks={ACTOR: task})
    async with db.unit_of_work() as session:
        # Leased, as by the publication below, so that the relay leaves it alone.
        message = messages.enqueue(
            session, ACTOR, {"item": "early"}, available_at=datetime.now(UTC) + timedelta(hours=1)
        )
        await session.flush()
        outbox_id = message.id
    background.broker.get_actor(ACTOR).send(outbox_id=outbox_id, item="early")
    await background.start()
    try:
        await run_until(background, _gone(db, outbox_id))
    finally:
        await background.stop()
        await db.dispose()


# -- the outbox functions, on a clock of their own -------------------------------------------


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[Database]:
    database = Database(settings.resolved_database_url)
    try:
        yield database
    finally:
        await database.dispose()


POLICY = failed.FailurePolicy(
    max_attempts=3, first_retry=timedelta(seconds=2), longest_retry=timedelta(seconds=60)
)


def test_retry_waits_double_up_to_the_longest() -> None:
    waits = [POLICY.retry_delay(n).total_seconds() for n in range(1, 9)]
    assert waits == [2, 4, 8, 16, 32, 60, 60, 60]
    assert POLICY.retry_delay(10_000) == timedelta(seconds=60)


async def add(db: Database, *, attempts: int = 0, available_at: datetime = NOW) -> int:
    async with db.unit_of_work() as session:
        message = OutboxMessage(
            actor=ACTOR,
            payload={"item": "x"},
            available_at=available_at,
            attempts=attempts,
            created_at=NOW - timedelta(hours=1),
        )
        session.add(message)
        await session.flush()
        return message.id


async def claim(db: Database, now: datetime) -> messages.Claim:
    async with db.unit_of_work() as session:
        return await messages.claim_due(
            session,
            now=now,
            lease=timedelta(seconds=120),
            limit=10,
            skip_locked=not db.is_sqlite,
            max_attempts=POLICY.max_attempts,
        )


async def start(db: Database, outbox_id: int, now: datetime) -> bool:
    """What a worker does when it takes the message from the broker: its run starts."""
    async with db.unit_of_work() as session:
        return await messages.start_run(session, outbox_id, now + timedelta(seconds=10))


async def test_a_failure_is_due_after_its_wait_and_the_last_one_sets_it_aside(
    db: Database,
) -> None:
    outbox_id = await add(db)
    now = NOW
    for attempt in (1, 2):
        (claimed,) = (await claim(db, now)).published
        assert claimed.attempts == attempt - 1  # publishing is no attempt
        assert await start(db, outbox_id, now)
        started = await row(db, outbox_id)
        assert started is not None and started.attempts == attempt
        async with db.unit_of_work() as session:
            failure = await failed.record_failure(
                session, outbox_id, error=f"boom {attempt}", now=now, policy=POLICY
            )
        wait = POLICY.retry_delay(attempt)
        assert failure == failed.Failure(outbox_id, ACTOR, attempt, False, now + wait)
        assert (await claim(db, now + wait / 2)).published == []
        now += wait
    (claimed,) = (await claim(db, now)).published
    assert await start(db, outbox_id, now)
    async with db.unit_of_work() as session:
        failure = await failed.record_failure(
            session, outbox_id, error="boom 3", now=now, policy=POLICY
        )
        assert await failed.count_failed(session) == 1
    assert failure == failed.Failure(outbox_id, ACTOR, 3, True, None)
    message = await row(db, outbox_id)
    assert message is not None
    assert (message.failed_at, message.last_error) == (now, "boom 3")
    # Never published again, not even by an in-memory broker's restart.
    assert (await claim(db, now + timedelta(days=1))).published == []
    async with db.unit_of_work() as session:
        assert await messages.release_leases(session, now=now - timedelta(days=1)) == 0
        late = await failed.record_failure(session, outbox_id, error="x", now=now, policy=POLICY)
    assert late is None
    # Nor run by a copy of it still waiting in the broker.
    assert not await start(db, outbox_id, now)


async def test_runs_that_never_finished_count_and_set_the_message_aside(
    db: Database,
) -> None:
    """A worker killed mid-task says nothing: its message comes due when its lease runs out,
    and the claim that finds its attempts used up sets it aside instead of publishing it."""
    spent = await add(db, attempts=POLICY.max_attempts)
    last_chance = await add(db, attempts=POLICY.max_attempts - 1)
    claimed = await claim(db, NOW)
    assert [m.id for m in claimed.published] == [last_chance]
    assert [m.id for m in claimed.set_aside] == [spent]
    message, published = await row(db, spent), await row(db, last_chance)
    assert message is not None and published is not None
    assert (message.failed_at, message.last_error, message.attempts) == (NOW, failed.UNFINISHED, 3)
    assert (published.failed_at, published.attempts) == (None, 2)


async def test_a_publication_lost_before_its_run_started_costs_no_attempt(db: Database) -> None:
    """A message lost in the broker (a Redis restarted empty, a worker killed with messages
    fetched ahead) comes due when its lease runs out and is published again as often as it
    takes, never set aside for it."""
    outbox_id = await add(db)
    now = NOW
    for _ in range(POLICY.max_attempts + 2):
        assert [m.id for m in (await claim(db, now)).published] == [outbox_id]
        now += timedelta(seconds=121)  # claim() leases for 120 s
    message = await row(db, outbox_id)
    assert message is not None
    assert (message.attempts, message.failed_at) == (0, None)
    assert await start(db, outbox_id, now)
    message = await row(db, outbox_id)
    assert message is not None
    assert (message.attempts, message.available_at) == (1, now + timedelta(seconds=10))


async def test_the_relay_logs_what_it_sets_aside_and_never_publishes_it(db: Database) -> None:
    spent = await add(db, attempts=3, available_at=datetime.now(UTC) - timedelta(minutes=5))
    published: list[tuple[str, dict[str, Any]]] = []
    relay = Relay(
        db, published.extend, lease_seconds=120, poll_seconds=60, max_attempts=POLICY.max_attempts
    )
    with capture_logs() as logs:
        assert await relay.drain() == 1
        assert await relay.drain() == 0
    assert published == []
    (entry,) = [e for e in logs if e["log_level"] == "error"]
    assert entry["event"].startswith(SET_ASIDE)
    assert (entry["outbox_id"], entry["attempts"], entry["failed_total"]) == (spent, 3, 1)
    assert entry["error"] == failed.UNFINISHED


async def test_a_deferred_run_is_not_a_failed_attempt(db: Database) -> None:
    outbox_id = await add(db)
    await claim(db, NOW)
    assert await start(db, outbox_id, NOW)
    later = NOW + timedelta(seconds=30)
    async with db.unit_of_work() as session:
        await messages.defer(session, outbox_id, later)
    message = await row(db, outbox_id)
    assert message is not None
    assert (message.attempts, message.available_at) == (0, later)


async def test_requeue_makes_set_aside_work_due_with_its_attempts_reset(db: Database) -> None:
    kept = await add(db)
    first = await add(db, attempts=3)
    second = await add(db, attempts=3)
    await claim(db, NOW)  # sets both aside; publishes the other
    async with db.read() as session:
        assert [m.id for m in await failed.list_failed(session)] == [first, second]
    later = NOW + timedelta(minutes=1)
    async with db.unit_of_work() as session:
        assert await failed.requeue(session, now=later, outbox_ids=[second, kept]) == [second]
    async with db.unit_of_work() as session:
        assert await failed.requeue(session, now=later) == [first]
        assert await failed.requeue(session, now=later) == []
        assert await failed.count_failed(session) == 0
    for outbox_id in (first, second):
        message = await row(db, outbox_id)
        assert message is not None
        assert (message.failed_at, message.attempts, message.available_at) == (None, 0, later)
        assert message.last_error == failed.UNFINISHED
    assert {m.id for m in (await claim(db, later)).published} == {first, second}


def lasting_threads() -> set[threading.Thread]:
    """The process's threads but the event loop's executor ones ("asyncio_N"), which the
    worker's start, stop and relay borrow and whose number grows with how many overlap."""
    return {t for t in threading.enumerate() if not t.name.startswith("asyncio_")}


async def test_workers_of_one_process_share_one_time_limit_thread(settings: Settings) -> None:
    # Dramatiq's time limit starts a thread that never ends when its broker boots: one per
    # process, however many workers it builds and stops (the suite builds hundreds).
    async with worker_running(settings, FlakyTask(failing=set())):
        pass
    threads = lasting_threads()
    for _ in range(3):
        async with worker_running(settings, FlakyTask(failing=set())):
            pass
    assert sorted(t.name for t in lasting_threads() - threads) == []

"""Requests first (P211, P216): the API counts the requests it serves, and a job
of the same process waits while there are any, each wait bounded; its jobs take their steps
in turn (P219)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from dialscore.config import Settings
from dialscore.jobs import processing
from dialscore.kit.db import Database
from dialscore.kit.foreground import Foreground, Step, any_time
from dialscore.submissions import endpoints as submission_endpoints
from tests.conftest import SECRET
from tests.support import job_status, make_tenant, state_of, submit, unprocessed_job
from tests.test_job_batches import states

PROCESSING = processing.ProcessingSettings(batch_size=2, job_lease=timedelta(seconds=30))


class FakeTime:
    """A clock that only its sleep moves, by the time slept; counts the sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps = 0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds


async def test_nothing_served_means_no_wait() -> None:
    time = FakeTime()
    foreground = Foreground(clock=time.clock, sleep=time.sleep)
    assert await foreground.give_way() == 0.0
    assert time.sleeps == 0


async def test_a_step_waits_until_the_request_is_served() -> None:
    time = FakeTime()
    served = contextlib.ExitStack()

    async def sleep(seconds: float) -> None:
        await time.sleep(seconds)
        if time.sleeps == 3:
            served.close()  # the request is answered during the third look

    foreground = Foreground(most=0.5, step=0.01, clock=time.clock, sleep=sleep)
    served.enter_context(foreground.serving())
    waited = await foreground.give_way()
    assert time.sleeps == 3
    assert waited == pytest.approx(0.03)
    assert foreground.serving_count == 0


async def test_a_step_waits_at_most_its_bound() -> None:
    time = FakeTime()
    foreground = Foreground(most=0.5, step=0.01, clock=time.clock, sleep=time.sleep)
    with foreground.serving():
        waited = await foreground.give_way()
    assert waited == pytest.approx(0.5)
    assert time.sleeps == 50


def test_requests_are_counted_while_served_even_when_they_fail() -> None:
    foreground = Foreground()
    with foreground.serving():
        with foreground.serving():
            assert foreground.serving_count == 2
        assert foreground.serving_count == 1
        with pytest.raises(RuntimeError), foreground.serving():
            raise RuntimeError("the request failed")
        assert foreground.serving_count == 1
    assert foreground.serving_count == 0


async def most_at_once(step: Step, runs: int) -> int:
    """The most of ``runs`` steps taken at once, each step giving up the loop twice."""
    inside = most = 0

    async def run() -> None:
        nonlocal inside, most
        async with step():
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            inside -= 1

    await asyncio.gather(*(run() for _ in range(runs)))
    return most


async def test_the_jobs_of_a_process_that_serves_requests_take_turns() -> None:
    """P219: one step at a time in `serve`; in `dialscore worker`, all at once."""
    assert await most_at_once(Foreground().turn, 3) == 1
    assert await most_at_once(any_time, 3) == 3


async def test_a_turn_gives_way_to_the_requests_served() -> None:
    time = FakeTime()
    foreground = Foreground(most=0.5, step=0.01, clock=time.clock, sleep=time.sleep)
    with foreground.serving():
        async with foreground.turn() as waited:
            assert waited == pytest.approx(0.5)
    async with foreground.turn() as waited:
        assert waited == 0.0


async def test_a_job_scores_nothing_while_a_request_is_served(settings: Settings) -> None:
    people = [
        {"firstName": "Ann", "lastName": f"Lee{i}", "phone": f"+1415555267{i}"} for i in range(5)
    ]
    job_id, outbox_id = await unprocessed_job(settings, people)
    waiting = asyncio.Event()

    async def sleep(seconds: float) -> None:
        waiting.set()
        await asyncio.sleep(0)

    # Bounded far beyond the test's own timeouts: the job waits for the request.
    foreground = Foreground(most=3600, sleep=sleep)
    db = Database(settings.resolved_database_url)
    try:
        with foreground.serving():
            run = asyncio.create_task(
                processing.process_job(
                    db,
                    job_id=job_id,
                    outbox_id=outbox_id,
                    settings=PROCESSING,
                    step=foreground.turn,
                )
            )
            await asyncio.wait_for(waiting.wait(), timeout=30)
            # Many looks later, the job still waits, having scored nothing (its contacts
            # may not even have their rows yet, P218).
            for _ in range(50):
                await asyncio.sleep(0)
            assert not run.done()
            assert {state for _, state, _ in await states(db, job_id)} <= {"pending"}
        assert await asyncio.wait_for(run, timeout=60) == "Finalized"
        assert [state for _, state, _ in await states(db, job_id)] == ["scored"] * 5
        assert await job_status(db, job_id) == "Finalized"
    finally:
        await db.dispose()


async def test_the_api_counts_a_submission_while_it_is_served(
    app: Any, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = state_of(app)
    tenant = await make_tenant(state.db, SECRET)
    counts: list[int] = []
    submit_contacts = submission_endpoints.service.submit

    async def counting_submit(*args: Any, **kwargs: Any) -> Any:
        counts.append(state.foreground.serving_count)
        return await submit_contacts(*args, **kwargs)

    monkeypatch.setattr(submission_endpoints.service, "submit", counting_submit)
    response = await submit(
        api, tenant, [{"firstName": "A", "lastName": "B", "phone": "+14155552671"}]
    )
    assert response.status_code == 200, response.text
    # Counted by its unit of work and, around it, by the middleware (P216).
    assert len(counts) == 1
    assert counts[0] >= 1
    assert state.foreground.serving_count == 0


async def test_a_request_that_writes_counts_while_its_body_is_read(
    app: Any, api: httpx.AsyncClient
) -> None:
    """P216: from its first byte, before the body is parsed and checked, not only while its
    unit of work is open; a read is never counted."""
    state = state_of(app)
    tenant = await make_tenant(state.db, SECRET)
    counts: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        counts.append(state.foreground.serving_count)
        yield b'{"contacts": [{"firstName": "A", "lastName": "B", "phone": "+14155552671"}]}'

    response = await api.post(
        "/api/public/v2/contacts/score", content=body(), headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    assert counts == [1]
    reading = await api.get("/api/public/v2/jobs", headers=tenant.headers)
    assert reading.status_code == 200
    assert state.foreground.serving_count == 0

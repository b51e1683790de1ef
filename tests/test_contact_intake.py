"""A job's accepted contacts are kept as submitted until their rows are written (P218): by the
worker that takes the job, or by a read of them that comes first. Either way every contact is
there, in order, with one id from then on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TypeVar

import pytest
from sqlalchemy import select

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import Principal
from dialscore.config import Settings
from dialscore.jobs import intake, processing, repository
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.foreground import Step, any_time
from dialscore.kit.leases import WorkStopped
from dialscore.models import ContactNumber, Job
from dialscore.submissions import service as submissions
from tests.support import (
    V2,
    contact,
    job_contacts,
    many_contacts,
    start_message,
    submit,
    without_worker,
    write_kept_contacts,
)
from tests.test_job_batches import contacts_of
from tests.web_forms import sign_in_user

T = TypeVar("T")
PROCESSING = processing.ProcessingSettings(batch_size=250, job_lease=timedelta(seconds=30))


async def intake_of(db: Database, job_id: str) -> list[int]:
    """The first ordinals of the job's groups of contacts kept as submitted."""
    async with db.read() as session:
        return await repository.intake_groups(session, job_id)


async def process(
    db: Database,
    job_id: str,
    *,
    step: Step = any_time,
    should_stop: Callable[[], bool] = lambda: False,
) -> str | None:
    return await processing.process_job(
        db,
        job_id=job_id,
        outbox_id=await start_message(db, job_id),
        settings=PROCESSING,
        step=step,
        should_stop=should_stop,
    )


def before_each_step(action: Callable[[int], Awaitable[None]]) -> Step:
    """A ``step`` that runs ``action`` (given the step's number, from 1) before each of the
    job's steps: between a batch's read and its write, among others."""
    taken = 0

    @asynccontextmanager
    async def step() -> AsyncIterator[float]:
        nonlocal taken
        taken += 1
        await action(taken)
        yield 0.0

    return step


async def test_the_worker_writes_the_rows_of_every_group_in_order(settings: Settings) -> None:
    # More than a request may hold, as an uploaded file gives.
    people = many_contacts(1001)
    async with without_worker(settings) as (db, _, tenant):
        async with db.unit_of_work() as session:
            plan = await accounts.client_plan(session, client_id=tenant.client_id)
            principal = Principal(tenant.user_id, tenant.client_id, "admin", None, plan)
            submitted = await submissions.submit(
                session,
                principal=principal,
                kind="scoring",
                contacts=people,
                scoring_type="lightning",
                name=None,
                now=utcnow(),
            )
        job_id = submitted.opened.job_id
        assert job_id is not None
        # The submission wrote no contact row: its contacts are kept in groups of 250.
        assert await contacts_of(db, job_id) == []
        assert await intake_of(db, job_id) == [1, 251, 501, 751, 1001]

        assert await process(db, job_id) == "Finalized"
        contacts = await contacts_of(db, job_id)
        assert [c.ordinal for c in contacts] == list(range(1, 1002))
        assert [c.fields["lastName"] for c in contacts] == [p["lastName"] for p in people]
        assert {c.state for c in contacts} == {"scored"}
        assert await intake_of(db, job_id) == []


async def test_a_read_before_the_worker_writes_the_rows_with_ids_that_stay(
    settings: Settings,
) -> None:
    people = [
        contact(last="Lee0", phone="+14155552670", department="Sales"),
        contact(last="Lee1", phone="+14155552671"),
        contact(last="Lee2", phone="+14155552672"),
    ]
    async with without_worker(settings) as (db, api, tenant):
        response = await submit(api, tenant, people)
        job_id = response.json()["data"]["jobId"]
        first = await job_contacts(api, tenant, job_id)
        assert await intake_of(db, job_id) == []
        second = await job_contacts(api, tenant, job_id)

        ids = [c["id"] for c in first]
        assert [c["id"] for c in second] == ids
        assert len(set(ids)) == 3
        assert [c["lastName"] for c in first] == ["Lee0", "Lee1", "Lee2"]
        assert [c["leadStatus"] for c in first] == ["Uncontacted"] * 3
        assert [c["phone"] for c in first] == ["+14155552670", "+14155552671", "+14155552672"]
        assert first[0]["unmappedFields"] == {"department": "Sales"}
        assert first[1]["unmappedFields"] == {}

        # The worker scores those same contacts.
        assert await process(db, job_id) == "Finalized"
        scored = await job_contacts(api, tenant, job_id)
        assert [c["id"] for c in scored] == ids
        assert all(c["leadStatus"] != "Uncontacted" for c in scored)


async def test_erasing_a_job_removes_the_contacts_it_still_keeps(settings: Settings) -> None:
    async with without_worker(settings) as (db, api, tenant):
        response = await submit(api, tenant, many_contacts(3))
        job_id = response.json()["data"]["jobId"]
        assert await intake_of(db, job_id) == [1]
        erased = await api.delete(f"{V2}/jobs/{job_id}", headers=tenant.headers)
        assert erased.status_code == 204, erased.text
        assert await intake_of(db, job_id) == []
        assert (await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)).status_code == 404


async def test_the_job_page_writes_the_rows_it_shows_and_counts(settings: Settings) -> None:
    """The web app's job page, before the worker: its table and its summary alike."""
    people = [contact(first="Grace", last="Hopper"), contact(first="Alan", last="Turing")]
    async with without_worker(settings) as (db, api, tenant):
        response = await submit(api, tenant, people)
        job_id = response.json()["data"]["jobId"]
        await sign_in_user(api, db, tenant.user_id)
        page = await api.get(f"/app/jobs/{job_id}")
        assert page.status_code == 200, page.text
        assert "Hopper" in page.text and "Turing" in page.text
        # The summary counts them too: written before it was made.
        assert "No contacts." not in page.text
        assert await intake_of(db, job_id) == []
        assert [c.state for c in await contacts_of(db, job_id)] == ["pending", "pending"]


async def test_the_worker_writes_each_contact_once_scored(settings: Settings) -> None:
    """A kept group's contacts are written as rows in the write that scores them (P220): not
    one is ever a pending row, and each has the id its job and place give it."""
    async with without_worker(settings) as (db, api, tenant):
        response = await submit(api, tenant, many_contacts(600))
        job_id = response.json()["data"]["jobId"]
        seen: list[set[str]] = []

        async def look(_: int) -> None:
            seen.append(set((await contacts_by_ordinal(db, job_id)).values()))

        assert await process(db, job_id, step=before_each_step(look)) == "Finalized"
        states = await contacts_by_ordinal(db, job_id)
    # The numbers' read and their index's write, then for each of the three groups the read
    # of it, the evidence's read and the write, a last read that finds none, then the end.
    assert len(seen) == 13
    assert set().union(*seen) == {"scored"}
    assert list(states) == [intake.contact_id(job_id, n) for n in range(1, 601)]
    assert set(states.values()) == {"scored"}


async def contacts_by_ordinal(db: Database, job_id: str) -> dict[str, str]:
    """The job's contact rows in order: id to state."""
    return {c.id: c.state for c in await contacts_of(db, job_id)}


async def test_rows_a_read_writes_during_the_job_are_scored_in_place(settings: Settings) -> None:
    """A read of the job's contacts between a batch's read and its write writes the rows of
    every group still kept, that batch's included: the worker updates them, with the ids they
    were read with, and scores every contact once."""
    async with without_worker(settings) as (db, api, tenant):
        response = await submit(api, tenant, many_contacts(600))
        job_id = response.json()["data"]["jobId"]
        read: list[list[str]] = []

        async def read_contacts(step: int) -> None:
            # Step 6 comes before the first batch's write (after the numbers' read and index,
            # the first and second groups' reads and the first's evidence): its group is kept.
            if step == 6:
                assert await intake_of(db, job_id) == [1, 251, 501]
                await write_kept_contacts(db)
                read.append(list(await contacts_by_ordinal(db, job_id)))

        assert await process(db, job_id, step=before_each_step(read_contacts)) == "Finalized"
        states = await contacts_by_ordinal(db, job_id)
        job = await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)
    ids = [intake.contact_id(job_id, n) for n in range(1, 601)]
    assert read == [ids]
    assert list(states) == ids
    assert set(states.values()) == {"scored"}
    assert job.json()["data"]["processedCount"] == 600


async def test_erasing_a_started_job_forgets_the_numbers_of_the_contacts_it_keeps(
    settings: Settings,
) -> None:
    """The worker indexes every number of the job before its first batch, those of contacts
    still kept included: erased while some are, the job leaves none of them behind."""
    async with without_worker(settings) as (db, api, tenant):
        response = await submit(api, tenant, many_contacts(300))
        job_id = response.json()["data"]["jobId"]
        looks = iter([False, True])  # stopped after its first batch
        with pytest.raises(WorkStopped):
            await process(db, job_id, should_stop=lambda: next(looks))
        assert await intake_of(db, job_id) == [251]
        ids = [intake.contact_id(job_id, n) for n in range(1, 301)]
        assert await indexed(db, ids) == 300

        erased = await api.delete(f"{V2}/jobs/{job_id}", headers=tenant.headers)
        assert erased.status_code == 204, erased.text
        assert await indexed(db, ids) == 0


async def indexed(db: Database, contact_ids: list[str]) -> int:
    """How many of these contacts have a number indexed."""
    async with db.read() as session:
        found = await session.scalars(
            select(ContactNumber.contact_id).where(ContactNumber.contact_id.in_(contact_ids))
        )
        return len(set(found))


async def test_contacts_whose_rows_a_read_writes_meanwhile_are_all_found_to_score(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's first read finds every contact not scored yet even when a read of the
    job's contacts writes their rows between its two queries, whichever comes first (on
    PostgreSQL each query sees what was committed before it)."""
    async with without_worker(settings) as (db, api, tenant):
        response = await submit(api, tenant, many_contacts(300))
        job_id = response.json()["data"]["jobId"]
        written: list[bool] = []

        def then_rows_written(query: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
            async def run(*args: object, **kwargs: object) -> T:
                found = await query(*args, **kwargs)
                if not written:
                    written.append(True)
                    await write_kept_contacts(db)
                return found

            return run

        for name in ("kept_groups", "pending_contact_fields"):
            monkeypatch.setattr(repository, name, then_rows_written(getattr(repository, name)))
        async with db.read() as session:
            job = await session.get(Job, job_id)
            assert job is not None
            found = await intake.unscored_fields(session, job)
    assert written == [True]
    assert sorted(found) == sorted(intake.contact_id(job_id, n) for n in range(1, 301))

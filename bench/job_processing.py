"""Processing alone: a job's submission and its scoring in this process, with no HTTP, no
webhooks and nothing else running, on SQLite in a temporary directory (by default).

Submits ``--jobs`` jobs of ``--contacts`` contacts (one or two random US numbers each) through
the submission service, then runs ``process_job`` on each, one after the other, and prints the
CPU time of a submission and the contacts scored per second with the CPU time per 1000. The
cycle collector is set, and the calling-time rules read, as a service process does at start.
Run it with another commit's ``src`` first on ``PYTHONPATH`` to compare, back to back.

``--without`` measures what the rest of a job costs, as a floor: ``evidence`` scores every
number as one nothing is known of (no evidence read); ``scoring`` reads no evidence and runs
no engine (every contact saved as having no numbers). The job's other steps, its numbers
indexed, its batches read and written, stay as they are.

``--database-url`` names an empty database (PostgreSQL, say) to migrate and use instead.

    .venv/bin/python bench/job_processing.py [--jobs 5] [--contacts 1000] [--seed 1]
        [--without evidence|scoring] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import Principal
from dialscore.jobs import callability, processing
from dialscore.kit.clock import utcnow
from dialscore.kit.collector import tune_garbage_collector
from dialscore.kit.db import Database
from dialscore.migrations import upgrade
from dialscore.models import OutboxMessage
from dialscore.scoring import service as scoring
from dialscore.scoring.engine import ContactScore
from dialscore.scoring.evidence import NumberEvidence
from dialscore.submissions import service as submissions
from dialscore.webhooks import service as webhooks
from dialscore.webhooks.schemas import CONTACT_SCORED, SubscriptionCreate

T = TypeVar("T")


def contacts(count: int, rng: random.Random) -> list[dict[str, Any]]:
    made = []
    for i in range(count):
        contact = {
            "firstName": f"F{rng.randrange(10**6)}",
            "lastName": f"L{i}",
            "companyAccount": f"Co {i % 50}",
            "phone": f"+1415{rng.randint(200, 999)}{rng.randint(1000, 9999)}",
        }
        if i % 2:
            contact["phone2"] = f"+1212{rng.randint(200, 999)}{rng.randint(1000, 9999)}"
        made.append(contact)
    return made


@dataclass(frozen=True)
class Processed:
    """CPU seconds of all the submissions, of each job's processing, the wall time of the
    processing and the statements it sent."""

    submitting_cpu: float
    job_cpu: list[float]
    wall: float
    # Statements the processing sent the database: each transaction's BEGIN among them, not
    # its COMMIT (a call of the driver's connection, not a statement).
    statements: int


async def bench_client(session: AsyncSession, *, listening: bool) -> Principal:
    """The admin of a new enterprise client with credits to spare; with ``listening``, the
    client has a webhook subscribed to job.contact.scored (at a URL nothing is sent to)."""
    client, user = await accounts.create_client(
        session, name="Bench", plan="enterprise", credits=Decimal(10**9), admin_email=None
    )
    plan = await accounts.client_plan(session, client_id=client.id)
    principal = Principal(user.id, client.id, "admin", None, plan)
    if listening:
        await webhooks.create_subscription(
            session,
            principal,
            SubscriptionCreate(
                name="bench", url="https://127.0.0.1/hook", eventTypes=[CONTACT_SCORED]
            ),
            server_secret="bench",
            allow_private=True,
        )
    return principal


async def process_jobs(
    db: Database, jobs: int, size: int, rng: random.Random, *, listening: bool = False
) -> Processed:
    """Submits ``jobs`` jobs of ``size`` contacts, then processes them one after the other;
    with ``listening``, for a client with a webhook subscribed to job.contact.scored (the
    events are written, not sent)."""
    async with db.unit_of_work() as session:
        principal = await bench_client(session, listening=listening)
    ids = []
    started = time.process_time()
    for _ in range(jobs):
        async with db.unit_of_work() as session:
            submitted = await submissions.submit(
                session,
                principal=principal,
                kind="scoring",
                contacts=contacts(size, rng),
                scoring_type="lightning",
                name=None,
                now=utcnow(),
            )
        ids.append(submitted.opened.job_id)
    submitting = time.process_time() - started
    async with db.read() as session:
        messages = (await session.scalars(select(OutboxMessage))).all()
    outbox = {m.payload["job_id"]: m.id for m in messages if "job_id" in m.payload}
    settings = processing.ProcessingSettings(batch_size=250, job_lease=timedelta(seconds=30))
    job_cpu = []
    statements = 0

    def count(*_: Any) -> None:
        nonlocal statements
        statements += 1

    event.listen(db.engine.sync_engine, "before_cursor_execute", count)
    clock = time.perf_counter()
    for job_id in ids:
        assert job_id is not None
        cpu = time.process_time()
        await processing.process_job(db, job_id=job_id, outbox_id=outbox[job_id], settings=settings)
        job_cpu.append(time.process_time() - cpu)
    wall = time.perf_counter() - clock
    event.remove(db.engine.sync_engine, "before_cursor_execute", count)
    return Processed(submitting, job_cpu, wall, statements)


async def _no_evidence(
    session: AsyncSession, client_id: str, items: Sequence[scoring.ScoringItem], *_: Any
) -> list[dict[str, NumberEvidence]]:
    """``scoring.evidence_for`` reading nothing: every number as one nothing is known of."""
    return [{} for _ in items]


async def _not_scored(
    session: AsyncSession, client_id: str, items: Sequence[scoring.ScoringItem], **_: Any
) -> list[ContactScore]:
    """``scoring.score_items`` doing nothing: every contact without numbers."""
    return [ContactScore([], "No Numbers Found", None) for _ in items]


# What ``--without`` takes out: the function of ``scoring`` a job's scoring calls, and what
# stands in its place.
WITHOUT: dict[str, tuple[str, Callable[..., Awaitable[Any]]]] = {
    "evidence": ("evidence_for", _no_evidence),
    "scoring": ("score_items", _not_scored),
}


def on_fresh_database(work: Callable[[Database], Awaitable[T]], url: str | None = None) -> T:
    """``work`` run on a migrated SQLite database in a temporary directory, removed after;
    or, given its ``url``, on an empty database the caller made (left as it is after)."""
    if url is not None:
        return _on_database(url, work)
    folder = Path(tempfile.mkdtemp(prefix="dialscore-processing-"))
    try:
        return _on_database(f"sqlite:///{folder / 'bench.db'}", work)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _on_database(url: str, work: Callable[[Database], Awaitable[T]]) -> T:
    upgrade(url)
    db = Database(url)

    async def run() -> T:
        try:
            return await work(db)
        finally:
            await db.dispose()

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--contacts", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--without", choices=sorted(WITHOUT), help="a floor: see above")
    parser.add_argument("--database-url", help="an empty database to use instead of SQLite's")
    args = parser.parse_args()
    if not (1 <= args.jobs <= 100 and 1 <= args.contacts <= 50_000):
        parser.error("--jobs must be 1..100 and --contacts 1..50000")
    # As `dialscore serve` and `dialscore worker` do once started: without it, full
    # collections of the default thresholds land in the jobs measured.
    tune_garbage_collector()
    # As they do at start too: the calling-time rules, with the holiday calendars they import,
    # are read once per process, and would otherwise be a first job's.
    callability.rules_in_force(None)
    if args.without:
        setattr(scoring, *WITHOUT[args.without])
    figures = on_fresh_database(
        lambda db: process_jobs(db, args.jobs, args.contacts, random.Random(args.seed)),
        args.database_url,
    )
    scored = args.jobs * args.contacts
    submission = figures.submitting_cpu / args.jobs * 1000
    print(f"submission of {args.contacts} contacts: {submission:.0f} ms CPU each")
    print(
        f"processing {scored} contacts: {scored / figures.wall:,.0f} contacts/s, "
        f"{sum(figures.job_cpu) / scored * 1000:.3f} s CPU per 1000, "
        f"{figures.statements / args.jobs:.0f} statements a job"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

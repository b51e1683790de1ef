"""The wall time of an enrichment job of 1000 contacts against a directory of a million
people, embedded (SQLite).

Generates the directory of ``directory_import.py`` (``--rows`` people), imports it with the
same function ``dialscore import directory`` runs, then submits ``--runs`` enrichment jobs of
``--contacts`` contacts each and runs ``jobs.processing.process_job`` on each, as the worker
would, with the directory and history sources. A job's contacts are people of the
directory as a client's CRM holds them (found by email, by name and company, by name and
website; some with a nickname-free typo-free rendering, some lower-cased) and, one in five,
people it does not hold. Prints the import's rows/s and, per job, the processing time, the
time inside the sources, the contacts matched, and the median.

Every run is bounded: the whole bench stops after ``--timeout`` seconds. The temporary
directory is removed at the end.

    python bench/enrichment_job.py [--rows 1000000] [--contacts 1000] [--runs 3]
                                   [--timeout 900] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from dialscore.config import Settings
from dialscore.enrichment.directory import import_directory
from dialscore.enrichment.sources import DirectorySource, HistorySource
from dialscore.enrichment.waterfall import EnrichmentSource
from dialscore.jobs import processing as jobs
from dialscore.jobs.service import PROCESS_JOB
from dialscore.kit.clock import utcnow
from dialscore.kit.collector import tune_garbage_collector
from dialscore.kit.db import Database
from dialscore.migrations import upgrade
from dialscore.models import Contact, Job, OutboxMessage
from dialscore.submissions import service as submissions
from directory_import import People, generate
from scoring_speed import create_principal, median_of, ms


def contact_of(rng: random.Random, row: list[str]) -> dict[str, Any]:
    """A client's rendering of a directory row (``People.row`` order)."""
    _, first, last, email, linkedin, company, website = row[:7]
    contact: dict[str, Any] = {"firstName": first, "lastName": last, "companyAccount": company}
    way = rng.random()
    if way < 0.35 and email:
        contact["email"] = email.lower()
    elif way < 0.5 and linkedin:
        contact["linkedInUrl"] = linkedin
    elif way < 0.75 and website:
        contact["website"] = website.replace("https://www.", "")
    if rng.random() < 0.1:
        contact["lastName"] = last.upper()
    return contact


def stranger(rng: random.Random, people: People) -> dict[str, Any]:
    row = people.row(10**9 + rng.randrange(10**6))
    return {"firstName": row[1], "lastName": row[2] + "son", "companyAccount": row[5]}


def job_contacts(rng: random.Random, people: People, rows: int, count: int) -> list[Any]:
    return [
        stranger(rng, people)
        if rng.random() < 0.2
        else contact_of(rng, people.row(rng.randrange(rows)))
        for _ in range(count)
    ]


class TimedSources:
    """The sources, with the time spent in them."""

    def __init__(self, sources: Sequence[EnrichmentSource]) -> None:
        self.sources = sources
        self.seconds = 0.0

    def wrapped(self) -> list[EnrichmentSource]:
        outer = self

        class Timed:
            def __init__(self, source: Any) -> None:
                self.name = source.name
                self.source = source

            async def find(self, request: Any) -> Any:
                (found,) = await self.find_many([request])
                return found

            async def find_many(self, requests: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await self.source.find_many(requests)
                finally:
                    outer.seconds += time.perf_counter() - started

        return [Timed(source) for source in self.sources]  # type: ignore[misc]


async def run_jobs(args: argparse.Namespace, url: str, people: People) -> None:
    db = Database(url)
    try:
        principal = await create_principal(db)
        fields = Settings.model_fields
        settings = jobs.ProcessingSettings(
            batch_size=int(fields["job_batch_size"].default),
            job_lease=timedelta(seconds=float(fields["job_lease_seconds"].default)),
        )
        threshold = float(fields["enrichment_min_confidence"].default)
        timed = TimedSources([HistorySource(db, threshold), DirectorySource(db, threshold)])
        sources = timed.wrapped()
        rng = random.Random(args.seed)
        results = []
        for run in range(args.runs + 1):  # the first warms up
            contacts = job_contacts(rng, people, args.rows, 10 if run == 0 else args.contacts)
            async with db.unit_of_work() as session:
                submission = await submissions.submit(
                    session,
                    principal=principal,
                    kind="enrichment",
                    contacts=contacts,
                    scoring_type="lightning",
                    name=None,
                    now=utcnow(),
                )
            job_id = submission.opened.job_id
            accepted = submission.accepted
            async with db.read() as session:
                rows = await session.execute(
                    select(OutboxMessage.id, OutboxMessage.payload).where(
                        OutboxMessage.actor == PROCESS_JOB
                    )
                )
                outbox_id = next(i for i, p in rows if p.get("job_id") == job_id)
            timed.seconds = 0.0
            started = time.perf_counter()
            status = await jobs.process_job(
                db, job_id=job_id, outbox_id=outbox_id, settings=settings, sources=sources
            )
            seconds = time.perf_counter() - started
            async with db.read() as session:
                job = await session.get(Job, job_id)
                assert job is not None
                matched = len(
                    (
                        await session.scalars(
                            select(Contact.id).where(
                                Contact.job_id == job_id, Contact.enrichment_contact_id.is_not(None)
                            )
                        )
                    ).all()
                )
            if run == 0:
                continue
            results.append((seconds, timed.seconds))
            print(
                f"    job {run}: {accepted} contacts accepted, {matched} matched, status {status}: "
                f"processed in {ms(seconds)} (in the sources {ms(timed.seconds)})",
                flush=True,
            )
        print(
            f"median of {len(results)}: {ms(median_of([r[0] for r in results]))} per job of "
            f"{args.contacts} contacts (in the sources {ms(median_of([r[1] for r in results]))}; "
            "target < 1 s)"
        )
    finally:
        await db.dispose()


def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="dialscore-bench-enrich-"))
    try:
        started = time.perf_counter()
        people = People(random.Random(args.seed), args.rows)
        source = work / "directory.csv"
        generate(source, people, args.rows)
        print(f"generated {args.rows} directory rows in {time.perf_counter() - started:.1f} s")
        url = f"sqlite:///{(work / 'dialscore.db').as_posix()}"
        upgrade(url)
        report = import_directory(url, source)
        print(
            f"imported {report.imported} people in {report.seconds:.1f} s "
            f"({report.imported / report.seconds:,.0f} rows/s)",
            flush=True,
        )
        # As `dialscore serve` and `dialscore worker` set it.
        tune_garbage_collector()
        asyncio.run(asyncio.wait_for(run_jobs(args, url, people), args.timeout))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="directory rows (1000000)")
    parser.add_argument("--contacts", type=int, default=1000, help="contacts per job (1000)")
    parser.add_argument("--runs", type=int, default=3, help="jobs (3)")
    parser.add_argument("--timeout", type=float, default=900.0, help="limit for the jobs, s")
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    args = parser.parse_args()
    if not (1 <= args.contacts <= 1000 and 1 <= args.runs <= 20 and args.rows >= 1000):
        parser.error("--contacts 1..1000, --runs 1..20, --rows >= 1000")
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

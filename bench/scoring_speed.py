"""Scoring speed: phones per second of the pure engine, and the wall time of a 1000-contact
job processed embedded (SQLite), evidence queries included.

(a) Builds ``--phones`` distinct numbers on contacts of 1 to 4 numbers with the evidence of
    ``scoring_eval.py``'s world (number blocks, type hints, 0 to 12 reported calls, company
    lines, shared numbers), then parses and scores them all in this one process (one core):
    ``parse_contact_phones`` + ``score_parsed`` per contact, the parse cache cleared first so
    that every number is parsed afresh as in a job of new numbers. Also parse alone and score
    alone. Median of ``--repeats`` passes. Runs once for each of ``--phone-libraries``, in a
    process of its own with ``DIALSCORE_PHONE_LIBRARY`` set (D30: phonenumbers, and
    rphonenumbers when the fast extra is installed), then prints how many times faster the
    second is than the first.
(b) Creates a temporary SQLite database with the migrations, a client on the enterprise plan,
    and evidence tables of realistic size, filled with ``executemany``: every NPA-NXX block of
    the area codes used (and a fifth of them split into thousand-blocks), ``--dnc`` numbers on
    a do-not-call list, company lines, ``--history`` reported calls of other numbers and the
    job numbers' own past calls, and earlier contacts' numbers. Then, ``--runs`` times,
    submits ``--contacts`` new contacts with ``submissions.service.submit`` (as the API does,
    committed) and runs ``jobs.processing.process_job`` on the job directly, as the worker would
    once the outbox relay hands it over, until ``Finalized``. Prints per run the submission
    time, the processing time and, inside it, the time spent in ``scoring.service.score_items``
    (all batches), of which in ``evidence_for`` (the queries); then the medians, and the median
    time in each repository function that submission and processing called. It reads phones
    with the library ``DIALSCORE_PHONE_LIBRARY`` chooses (by default rphonenumbers when
    installed).

    python bench/scoring_speed.py [--phones 200000] [--contacts 1000] [--runs 5]
                                  [--phone-libraries phonenumbers,rphonenumbers]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import importlib.util
import inspect
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import select

from dialscore import phones as phone_module
from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import Principal
from dialscore.config import Settings
from dialscore.jobs import processing as jobs
from dialscore.jobs.service import PROCESS_JOB
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.migrations import upgrade
from dialscore.models import Job, OutboxMessage
from dialscore.phones import LIBRARY_CHOICES, LIBRARY_ENV, analyse
from dialscore.scoring import engine
from dialscore.scoring import service as scoring
from dialscore.scoring.numbers import ParsedPhone, parse_contact_phones
from dialscore.submissions import service as submissions
from scoring_eval import (
    DAY,
    NOW,
    US_AREA_CODES,
    SimContact,
    build_world,
)
from scoring_worlds import WORLD_A

SECRET = "bench-secret-key-that-is-long-enough-for-hs256"
WORLD = WORLD_A
T = TypeVar("T")
# Where processing time goes: every coroutine function of these modules is timed (the services
# call them through the module, so a wrapper set on the module is what they run).
TIMED_MODULES = (
    "dialscore.scoring.repository",
    "dialscore.jobs.repository",
    "dialscore.webhooks.service",
    "dialscore.outbox.messages",
)
# The line by which a process measuring (a) hands its figures to the one that started it.
ENGINE_FIGURES = "engine figures: "
# The figures of (a) compared between libraries: phones per second.
PARSE_AND_SCORE, PARSE_ONLY, SCORE_ONLY = "parse + score", "parse only", "score only"


def median_of(values: Sequence[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


# -- (a) the pure engine -------------------------------------------------------------------------


def world_of(rng: random.Random, phones: int) -> list[SimContact]:
    """Contacts carrying about ``phones`` distinct numbers in all (2.05 per contact)."""
    return build_world(rng, max(1, round(phones / 2.05)), WORLD)


def engine_throughput(contacts: Sequence[SimContact], repeats: int) -> dict[str, float]:
    """Prints and returns the phones per second of (a), parsing with this process's library."""
    fields = [c.fields for c in contacts]
    evidence = [{n.e164: n.evidence for n in c.numbers} for c in contacts]
    phones = sum(len(c.numbers) for c in contacts)
    with_calls = sum(1 for c in contacts for n in c.numbers if n.evidence.calls)
    calls = sum(len(n.evidence.calls) for c in contacts for n in c.numbers)
    library = f"{phone_module.LIBRARY} {phone_module.numbering.__version__}"
    print(
        f"(a) pure engine on {library}, one process: {phones} distinct phones on "
        f"{len(contacts)} contacts, {with_calls / phones:.0%} with reported calls "
        f"({calls / max(1, with_calls):.1f} each)"
    )

    def parse_and_score() -> None:
        for f, ev in zip(fields, evidence, strict=True):
            engine.score_parsed(parse_contact_phones(f), ev, NOW)

    def parse_only() -> None:
        for f in fields:
            parse_contact_phones(f)

    parsed: list[list[ParsedPhone]] = [parse_contact_phones(f) for f in fields]

    def score_only() -> None:
        for p, ev in zip(parsed, evidence, strict=True):
            engine.score_parsed(p, ev, NOW)

    cases: list[tuple[str, str, Callable[[], None], bool]] = [
        (PARSE_AND_SCORE, "numbers new to the parse cache", parse_and_score, True),
        (PARSE_ONLY, "numbers new to the parse cache", parse_only, True),
        (SCORE_ONLY, "numbers parsed before", score_only, False),
    ]
    figures: dict[str, float] = {}
    for name, condition, work, cold in cases:
        seconds = []
        for _ in range(repeats):
            if cold:
                analyse.cache_clear()
            gc.collect()
            started = time.perf_counter()
            work()
            seconds.append(time.perf_counter() - started)
        best = median_of(seconds)
        figures[name] = phones / best
        spread = f"{phones / max(seconds):,.0f}-{phones / min(seconds):,.0f}"
        label = f"{name}, {condition}"
        print(
            f"    {label:<45} {phones / best:>9,.0f} phones/s "
            f"(median of {repeats}: {best:.2f} s; passes {spread})"
        )
    return figures


def engine_child(args: argparse.Namespace) -> int:
    """(a) in this process, started by ``engine_by_library``: its figures on the last line."""
    figures = engine_throughput(world_of(random.Random(args.seed), args.phones), args.repeats)
    print(ENGINE_FIGURES + json.dumps({"library": phone_module.LIBRARY, "figures": figures}))
    return 0


def engine_by_library(args: argparse.Namespace, libraries: Sequence[str]) -> None:
    """(a) once for each library, each in a process of its own started with
    ``DIALSCORE_PHONE_LIBRARY`` set, one after the other; then how the last compares with the
    first."""
    measured: dict[str, dict[str, float]] = {}
    for library in libraries:
        if library != "auto" and importlib.util.find_spec(library) is None:
            print(f"    (a) on {library}: not installed (the fast extra: pip install -e '.[fast]')")
            continue
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--engine-child",
            f"--phones={args.phones}",
            f"--repeats={args.repeats}",
            f"--seed={args.seed}",
        ]
        try:
            child = subprocess.run(
                command,
                env={**os.environ, LIBRARY_ENV: library},
                stdout=subprocess.PIPE,
                text=True,
                timeout=args.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SystemExit(
                f"bench failed: (a) on {library} timed out after {args.timeout:.0f} s"
            ) from None
        lines = child.stdout.splitlines()
        for line in lines:
            if not line.startswith(ENGINE_FIGURES):
                print(line)
        sys.stdout.flush()
        if child.returncode != 0 or not lines or not lines[-1].startswith(ENGINE_FIGURES):
            # What went wrong is on stderr, which the process shares with this one.
            print(f"    (a) on {library} failed (exit {child.returncode}): see above")
            continue
        result = json.loads(lines[-1].removeprefix(ENGINE_FIGURES))
        measured[result["library"]] = result["figures"]
    names = list(measured)
    if len(names) >= 2:
        first, last = measured[names[0]], measured[names[-1]]
        print(
            f"    {names[-1]} against {names[0]}, phones/s: "
            + ", ".join(f"{name} x{last[name] / first[name]:.2f}" for name in first)
        )


# -- (b) a job, embedded -------------------------------------------------------------------------


@dataclass
class Timings:
    """Seconds spent in the scoring service's functions, per call, while a job runs."""

    calls: dict[str, list[float]] = field(default_factory=dict)

    def wrap(self, module: Any, name: str, label: str | None = None) -> None:
        original: Callable[..., Awaitable[Any]] = getattr(module, name)
        spent = self.calls.setdefault(label or name, [])

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                spent.append(time.perf_counter() - started)

        setattr(module, name, timed)

    def wrap_module_functions(self, modules: Sequence[str]) -> list[str]:
        """Times every coroutine function defined in these modules (those that exist)."""
        names = []
        for module_name in modules:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            for name, value in vars(module).copy().items():
                if inspect.iscoroutinefunction(value) and value.__module__ == module_name:
                    label = f"{module_name.split('.')[-2]}.{name}"
                    self.wrap(module, name, label)
                    names.append(label)
        return names

    def take(self, name: str) -> list[float]:
        spent = self.calls.get(name, [])
        taken = list(spent)
        spent.clear()
        return taken


def _stamp(at: float) -> str:
    """A Unix time as SQLAlchemy stores a UTC datetime in SQLite."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _company_key(contact: SimContact) -> str | None:
    return scoring.company_key(contact.fields)


def seed_evidence(
    path: Path,
    client_id: str,
    user_id: str,
    contacts: Sequence[SimContact],
    rng: random.Random,
    *,
    dnc: int,
    history: int,
) -> dict[str, int]:
    """Fills the evidence tables with executemany; the row count of each."""
    blocks: dict[str, str] = {}
    for npa in US_AREA_CODES:
        for nxx in range(200, 1000):
            prefix = f"{npa}{nxx}"
            blocks[prefix] = rng.choices(("landline", "wireless", "voip"), (60, 32, 8))[0]
            if rng.random() < 0.2:
                for x in range(10):
                    blocks[f"{prefix}{x}"] = rng.choices(("landline", "wireless"), (50, 50))[0]
    job_numbers = [n for c in contacts for n in c.numbers]
    for number in job_numbers:
        if number.evidence.block is not None:
            blocks[number.e164[2:9]] = number.evidence.block

    def random_us() -> int:
        return int(f"1{rng.choice(US_AREA_CODES)}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}")

    listed = {random_us() for _ in range(dnc)}
    listed |= {int(n.e164[1:]) for n in job_numbers if n.country == "US" and rng.random() < 0.03}

    lines: dict[str, str | None] = {f"+{random_us()}": None for _ in range(5000)}
    for number in job_numbers:
        if number.evidence.company_line:
            lines[number.e164] = number.evidence.directory_ivr_path

    # The world's calls are dated before its NOW; the job scores at the real time.
    shift = time.time() - NOW
    now = _stamp(NOW + shift)
    outcomes = ("connected", "voicemail", "no_answer", "busy", "gatekeeper", "wrong_number")
    other_client = str(uuid.uuid4())
    call_rows: list[tuple[Any, ...]] = []
    for _ in range(history):
        at = _stamp(NOW + shift - rng.uniform(0, 180) * DAY)
        owner = client_id if rng.random() < 0.5 else other_client
        call_rows.append(
            (owner, user_id, f"+{random_us()}", None, rng.choice(outcomes), None, at, now)
        )
    for number in job_numbers:
        for call in number.evidence.calls:
            at = _stamp(call.at + shift)
            call_rows.append(
                (client_id, user_id, number.e164, None, call.outcome, call.ivr_path, at, now)
            )

    # Earlier contacts of the client: background rows, and the colleagues who share a number.
    contact_rows: list[tuple[str, str, str, str | None, str]] = []
    for i in range(50_000):
        row = (str(uuid.uuid4()), f"+{random_us()}", client_id, f"name:co {i % 5000}", f"p {i}")
        contact_rows.append(row)
    for contact in contacts:
        company = _company_key(contact)
        for number in contact.numbers:
            for k in range(number.evidence.shared_with):
                contact_rows.append(
                    (str(uuid.uuid4()), number.e164, client_id, company, f"colleague {k}")
                )

    with sqlite3.connect(path, timeout=30) as conn:
        conn.executemany(
            "INSERT OR REPLACE INTO number_blocks (prefix, category, carrier) VALUES (?, ?, NULL)",
            blocks.items(),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO dnc_numbers (number, list_name) VALUES (?, 'national')",
            ((n,) for n in listed),
        )
        conn.executemany(
            "INSERT OR REPLACE INTO company_lines (number, company, ivr_path) VALUES (?, NULL, ?)",
            lines.items(),
        )
        conn.executemany(
            "INSERT INTO call_outcomes (client_id, user_id, number, contact_id, outcome, "
            "ivr_path, called_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            call_rows,
        )
        conn.executemany(
            "INSERT OR IGNORE INTO contact_numbers (contact_id, number, client_id, company_key, "
            "person_key) VALUES (?, ?, ?, ?, ?)",
            contact_rows,
        )
    conn.close()
    return {
        "number_blocks": len(blocks),
        "dnc_numbers": len(listed),
        "company_lines": len(lines),
        "call_outcomes": len(call_rows),
        "contact_numbers": len(contact_rows),
    }


async def create_principal(db: Database) -> Principal:
    async with db.unit_of_work() as session:
        _, user = await accounts.create_client(
            session, name="Bench", plan="enterprise", credits=Decimal(10**9), admin_email=None
        )
        key = await accounts.create_key(session, user_id=user.id, secret=SECRET)
    async with db.read() as session:
        return await accounts.authenticate(
            session, secret=SECRET, authorization=f"Bearer {key.api_key}", now=utcnow()
        )


async def submit(db: Database, principal: Principal, contacts: Sequence[SimContact]) -> str:
    async with db.unit_of_work() as session:
        submission = await submissions.submit(
            session,
            principal=principal,
            kind="scoring",
            contacts=[c.fields for c in contacts],
            scoring_type="lightning",
            name=None,
            now=utcnow(),
        )
    if submission.accepted != len(contacts) or submission.opened.job_id is None:
        raise RuntimeError(f"only {submission.accepted} of {len(contacts)} accepted")
    return submission.opened.job_id


async def process(
    db: Database,
    job_id: str,
    settings: jobs.ProcessingSettings,
    rate_scales: scoring.RateScales,
) -> None:
    async with db.read() as session:
        rows = await session.execute(
            select(OutboxMessage.id, OutboxMessage.payload).where(
                OutboxMessage.actor == PROCESS_JOB
            )
        )
        outbox_id = next(i for i, payload in rows if payload.get("job_id") == job_id)
    status = await jobs.process_job(
        db, job_id=job_id, outbox_id=outbox_id, settings=settings, rate_scales=rate_scales
    )
    async with db.read() as session:
        job = await session.get(Job, job_id)
        assert job is not None
        if status != "Finalized" or job.processed_count != job.accepted_count:
            raise RuntimeError(f"job ended {status} with {job.processed_count} processed")


async def embedded_job(args: argparse.Namespace, rng: random.Random) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="dialscore-bench-"))
    db: Database | None = None
    try:
        path = data_dir / "dialscore.db"
        url = f"sqlite:///{path.as_posix()}"
        upgrade(url)
        db = Database(url)
        principal = await create_principal(db)
        warmup = build_world(rng, 10, WORLD)
        runs = [build_world(rng, args.contacts, WORLD) for _ in range(args.runs)]
        started = time.perf_counter()
        sizes = seed_evidence(
            path,
            principal.client_id,
            principal.user_id,
            [c for run in runs for c in run],
            rng,
            dnc=args.dnc,
            history=args.history,
        )
        seeded = time.perf_counter() - started
        print(
            f"(b) embedded job, SQLite, phones read with {phone_module.LIBRARY}: "
            f"evidence seeded in {seeded:.1f} s: "
            + ", ".join(f"{name} {rows:,}" for name, rows in sizes.items())
        )

        fields = Settings.model_fields
        settings = jobs.ProcessingSettings(
            batch_size=int(fields["job_batch_size"].default),
            job_lease=timedelta(seconds=float(fields["job_lease_seconds"].default)),
        )
        timings = Timings()
        for name in ("score_items", "evidence_for", "index_numbers", "rate_scale"):
            timings.wrap(scoring, name)
        parts = timings.wrap_module_functions(TIMED_MODULES)

        # One process: the client's rate scale is measured by the first job (the warm-up)
        # and kept for the others, as a worker keeps it (P90).
        rate_scales = scoring.RateScales()
        await process(db, await submit(db, principal, warmup), settings, rate_scales)
        measured = timings.take("rate_scale")
        print(
            f"    warm-up job: the client's rate scale measured in {ms(sum(measured))} "
            "(kept by the process for a minute)"
        )
        for name in timings.calls:
            timings.take(name)

        spent: dict[str, list[float]] = {name: [] for name in parts}
        results: list[tuple[float, float, float, float, float]] = []
        for i, contacts in enumerate(runs, start=1):
            phones = sum(len(c.numbers) for c in contacts)
            started = time.perf_counter()
            job_id = await submit(db, principal, contacts)
            submitted = time.perf_counter()
            await process(db, job_id, settings, rate_scales)
            done = time.perf_counter()
            scored = timings.take("score_items")
            queries = sum(timings.take("evidence_for"))
            indexing = sum(timings.take("index_numbers"))
            for name in parts:
                spent[name].append(sum(timings.take(name)))
            results.append((submitted - started, done - submitted, sum(scored), queries, indexing))
            print(
                f"    run {i}: {len(contacts)} contacts, {phones} phones: "
                f"submit {ms(submitted - started)}, process {ms(done - submitted)} "
                f"(score_items {ms(sum(scored))} in {len(scored)} batches of up to "
                f"{settings.batch_size}, of which evidence queries {ms(queries)}; "
                f"indexing numbers {ms(indexing)})"
            )
        submit_s, process_s, score_s, query_s, index_s = (
            median_of([r[k] for r in results]) for k in range(5)
        )
        print(
            f"    median of {len(results)}: process {ms(process_s)} (score_items {ms(score_s)}: "
            f"evidence queries {ms(query_s)}, engine {ms(score_s - query_s)}; "
            f"indexing {ms(index_s)}); submit {ms(submit_s)}; "
            f"submit + process {ms(submit_s + process_s)}"
        )
        ranked = sorted(parts, key=lambda name: -median_of(spent[name]))
        print(
            "    median per job in each repository function, submission and processing (>= 1 ms): "
            + ", ".join(
                f"{name} {ms(median_of(spent[name]))}"
                for name in ranked
                if median_of(spent[name]) >= 0.0005
            )
        )
    finally:
        if db is not None:
            await db.dispose()
        shutil.rmtree(data_dir, ignore_errors=True)


async def bounded(work: Awaitable[T], seconds: float) -> T:
    try:
        return await asyncio.wait_for(work, seconds)
    except TimeoutError:
        raise SystemExit(f"bench failed: timed out after {seconds:.0f} s") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phones", type=int, default=200_000, help="(a) phones (200000)")
    parser.add_argument("--repeats", type=int, default=3, help="(a) passes (3)")
    parser.add_argument("--contacts", type=int, default=1000, help="(b) contacts per job (1000)")
    parser.add_argument("--runs", type=int, default=5, help="(b) jobs (5)")
    parser.add_argument("--dnc", type=int, default=100_000, help="(b) do-not-call numbers")
    parser.add_argument("--history", type=int, default=200_000, help="(b) other reported calls")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="limit of (b) and of each (a), s (600)"
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    parser.add_argument("--skip-engine", action="store_true", help="only (b)")
    parser.add_argument("--skip-job", action="store_true", help="only (a)")
    parser.add_argument(
        "--phone-libraries",
        default="phonenumbers,rphonenumbers",
        help="(a) runs on each, in this order, comma-separated (phonenumbers,rphonenumbers)",
    )
    # (a) in this process, on the library DIALSCORE_PHONE_LIBRARY chooses (engine_by_library).
    parser.add_argument("--engine-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    libraries = [name.strip() for name in args.phone_libraries.split(",") if name.strip()]
    if not libraries or not set(libraries) <= set(LIBRARY_CHOICES):
        parser.error(f"--phone-libraries takes names of {', '.join(LIBRARY_CHOICES)}")
    if not (1 <= args.contacts <= 1000) or not (1 <= args.runs <= 50):
        parser.error("--contacts must be 1..1000 and --runs 1..50")
    if not (1 <= args.phones <= 2_000_000) or not (1 <= args.repeats <= 20):
        parser.error("--phones must be 1..2000000 and --repeats 1..20")
    if args.engine_child:
        return engine_child(args)
    if not args.skip_engine:
        engine_by_library(args, libraries)
    if not args.skip_job:
        asyncio.run(bounded(embedded_job(args, random.Random(args.seed)), args.timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main())

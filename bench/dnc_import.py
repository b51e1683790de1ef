"""Do-not-call import throughput and the lookup cost per job, on the embedded SQLite database
(or on PostgreSQL with ``--postgres``).

Generates a do-not-call file of ``--lines`` lines (10 digits, areacode,number and +1/1 E.164,
a few other countries, about 2 % repeats and 1 % invalid lines) in a temporary directory, runs
``python -m dialscore migrate`` and ``python -m dialscore import dnc`` on a fresh
``DIALSCORE_DATA_DIR`` (with ``--postgres ADMIN_URL``: on a fresh database created there and
dropped at the end), and prints lines/s and numbers/s. Then measures what a scoring job of
2000 numbers (half of them listed) pays to learn which are listed: the query the scoring
repository makes, ``SELECT number, list_name FROM dnc_numbers WHERE number IN (…)`` in chunks
of 500, once through the bare driver and once through the service's own stack (SQLAlchemy's
async engine from ``dialscore.kit.db``).

With ``--registry``, instead: writes a full list of ``--numbers`` distinct numbers as the
National Do Not Call Registry's flat download has them (``areacode,number`` lines in order;
``--compression gzip|zip`` to compress it), imports it with ``import dnc --full`` into a fresh
embedded SQLite database (no server, no network), and prints numbers/s, the bar (200,000
numbers/s, issue 31) and the import's peak memory (the largest resident set of the command).

Every wait is bounded; the whole run stops after ``--timeout`` seconds. The temporary directory
(file and database) is removed at the end (``--keep-data`` keeps it).

    python bench/dnc_import.py [--lines 10000000] [--order random|sorted] [--jobs 50]
                               [--postgres postgresql://postgres@127.0.0.1:5432/postgres]
    python bench/dnc_import.py --registry [--numbers 10000000] [--compression none|gzip|zip]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from embedded import BenchError, Deadline, cli, server_env

JOB_NUMBERS = 2000
CHUNK = 500  # the scoring repository's IN-list size
SAMPLE_EVERY = 97  # keep every 97th listed number for the lookups
# Listed numbers get area codes 201-899; numbers known not to be listed get 900-999.
LISTED_NPA = (201, 899)
UNLISTED_NPA = (900, 999)
INVALID = ("12345", "0123456789", "415,555267", "phone: unknown", "+0441234567", "1-800-FLOWERS")


# -- the file ---------------------------------------------------------------------------------


def _national(rng: random.Random) -> int:
    """A random NANP national number (10 digits) in a listed area code."""
    npa = rng.randint(*LISTED_NPA)
    return npa * 10_000_000 + rng.randint(2_000_000, 9_999_999)


def _sorted_nationals(rng: random.Random, count: int) -> list[int]:
    """``count`` increasing national numbers, as a registry download lists them."""
    low = LISTED_NPA[0] * 10_000_000
    span = (LISTED_NPA[1] + 1) * 10_000_000 - low
    step = span // count
    numbers = []
    for i in range(count):
        number = low + i * step + rng.randrange(step)
        if number % 10_000_000 < 2_000_000:  # exchanges start with 2-9
            number += 2_000_000
        numbers.append(number)
    return numbers


def _line(rng: random.Random, national: int) -> str:
    pick = rng.random()
    text = str(national)
    if pick < 0.4:
        return text
    if pick < 0.75:
        return f"{text[:3]},{text[3:]}"
    if pick < 0.9:
        return f"+1{text}"
    if pick < 0.97:
        return f"1{text}"
    if pick < 0.99:
        return f"({text[:3]}) {text[3:6]}-{text[6:]}"
    return f'"{text[:3]}","{text[3:]}"'


def generate(path: Path, lines: int, order: str, rng: random.Random) -> list[int]:
    """Writes the file; returns a sample of its listed numbers (E.164 digits)."""
    sample: list[int] = []
    recent: list[int] = []
    ordered = _sorted_nationals(rng, lines) if order == "sorted" else None
    with path.open("w") as out:
        out.write("phone_number\n")
        batch: list[str] = []
        for i in range(lines - 1):
            pick = rng.random()
            if pick < 0.01:
                batch.append(rng.choice(INVALID))
            elif pick < 0.015:
                batch.append(f"+44 20 7{rng.randint(0, 999):03d} {rng.randint(0, 9999):04d}")
            elif pick < 0.035 and recent:
                batch.append(str(rng.choice(recent)))  # a repeat
            else:
                national = ordered[i] if ordered is not None else _national(rng)
                batch.append(_line(rng, national))
                if len(recent) < 1000:
                    recent.append(national)
                else:
                    recent[i % 1000] = national
                if i % SAMPLE_EVERY == 0:
                    sample.append(10_000_000_000 + national)
            if len(batch) == 100_000:
                out.write("\n".join(batch) + "\n")
                batch = []
        if batch:
            out.write("\n".join(batch) + "\n")
    return sample


# -- the import -------------------------------------------------------------------------------


def run_import(
    path: Path, env: dict[str, str], cwd: Path, deadline: Deadline, *options: str
) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dialscore", "import", "dnc", str(path), *options],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=max(1.0, deadline.left()),
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"import dnc failed: {done.stderr.strip() or done.stdout.strip()}")
    report: dict[str, Any] = json.loads(done.stdout)
    report["wall"] = time.perf_counter() - started
    return report


# -- a registry full list --------------------------------------------------------------------

REGISTRY_BAR = 200_000  # numbers/s on the embedded database (issue 31)
# Area codes 201-899, exchanges and lines 200-0000 to 999-9999: every number valid.
REGISTRY_NPAS = 699
REGISTRY_LOCALS = 8_000_000


def generate_registry(path: Path, numbers: int, compression: str, rng: random.Random) -> Path:
    """A full list of ``numbers`` distinct numbers in order, as ``areacode,number`` lines."""
    step = REGISTRY_NPAS * REGISTRY_LOCALS // numbers
    text = path.with_suffix(".txt")
    with text.open("w") as out:
        batch: list[str] = []
        for k in range(numbers):
            i = k * step + rng.randrange(step)
            batch.append(f"{201 + i // REGISTRY_LOCALS},{2_000_000 + i % REGISTRY_LOCALS}")
            if len(batch) == 100_000:
                out.write("\n".join(batch) + "\n")
                batch = []
        if batch:
            out.write("\n".join(batch) + "\n")
    if compression == "none":
        return text
    packed = path.with_suffix(".bin")  # the importer tells the format by its first bytes
    if compression == "gzip":
        with text.open("rb") as src, gzip.open(packed, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    else:
        with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(text, "dnc-full.txt")
    text.unlink()
    return packed


def run_registry(args: argparse.Namespace) -> None:
    deadline = Deadline(args.timeout)
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="dialscore-bench-dnc-registry-"))
    try:
        data_dir = work / "var"
        started = time.perf_counter()
        source = generate_registry(work / "dnc-full", args.numbers, args.compression, rng)
        size = source.stat().st_size
        print(
            f"generated a registry full list of {args.numbers:,} numbers "
            f"({args.compression}), {size / 2**20:.0f} MiB "
            f"in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        deadline.check("generating the file")
        env = server_env(data_dir)
        cli(["migrate"], env, work, deadline)
        report = run_import(source, env, work, deadline, "--full", "--list", "national")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
        seconds = report["seconds"]
        rate = report["numbers"] / seconds
        database_size = (data_dir / "dialscore.db").stat().st_size / 2**20
        print(
            f"import --full: {report['numbers']:,} numbers ({report['added']:,} added, "
            f"{report['invalid']} invalid, kind {report['kind']}, {report['compression']}) "
            f"in {seconds:.1f} s: {rate:,.0f} numbers/s "
            f"({'meets' if rate >= REGISTRY_BAR else 'BELOW'} the bar of {REGISTRY_BAR:,}); "
            f"{report['wall']:.1f} s for the whole command; peak memory {peak:.0f} MiB; "
            f"SQLite database {database_size:.0f} MiB",
            flush=True,
        )
        if report["numbers"] != args.numbers or report["added"] != args.numbers:
            raise BenchError(f"expected {args.numbers} numbers added: {report}")
    finally:
        if args.keep_data:
            print(f"data kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


# -- lookups ----------------------------------------------------------------------------------


def _chunks(numbers: list[int]) -> list[list[int]]:
    ordered = sorted(numbers)
    return [ordered[i : i + CHUNK] for i in range(0, len(ordered), CHUNK)]


def _driver_lookup(url: str) -> tuple[Callable[[list[int]], set[int]], Callable[[], None]]:
    """A job's lookup through the bare driver (sqlite3 or psycopg), and how to close it."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        lite = sqlite3.connect(f"file:{parsed.database}?mode=ro", uri=True)

        def lookup_sqlite(numbers: list[int]) -> set[int]:
            found: set[int] = set()
            for part in _chunks(numbers):
                marks = ",".join("?" * len(part))
                sql = f"SELECT number, list_name FROM dnc_numbers WHERE number IN ({marks})"
                found.update(number for number, _ in lite.execute(sql, part))
            return found

        return lookup_sqlite, lite.close
    pg = psycopg.connect(parsed.set(drivername="postgresql").render_as_string(False))

    def lookup_postgres(numbers: list[int]) -> set[int]:
        found: set[int] = set()
        for part in _chunks(numbers):
            marks = ",".join("%s" for _ in part)
            sql = f"SELECT number, list_name FROM dnc_numbers WHERE number IN ({marks})"
            found.update(number for number, _ in pg.execute(sql, part))
        pg.rollback()
        return found

    return lookup_postgres, pg.close


def MARKS(part: list[int]) -> str:
    return ",".join("?" * len(part))


def _job(sample: list[int], rng: random.Random) -> tuple[list[int], set[int]]:
    """2000 numbers to look up, and the half of them that is listed."""
    half = JOB_NUMBERS // 2
    listed = rng.sample(sample, half)
    unlisted = [
        10_000_000_000 + rng.randint(*UNLISTED_NPA) * 10_000_000 + rng.randint(0, 9_999_999)
        for _ in range(half)
    ]
    return listed + unlisted, set(listed)


def measure_driver(
    url: str, sample: list[int], jobs: int, rng: random.Random, deadline: Deadline
) -> list[float]:
    """Milliseconds per job through the bare driver; checks every listed number is found."""
    lookup, close = _driver_lookup(url)
    try:
        timings = []
        for _ in range(jobs):
            deadline.check("looking numbers up")
            numbers, listed = _job(sample, rng)
            started = time.perf_counter()
            found = lookup(numbers)
            timings.append((time.perf_counter() - started) * 1000)
            if found != listed:
                raise BenchError(f"lookup found {len(found)} numbers, expected {len(listed)}")
        return timings
    finally:
        close()


def measure_service_stack(
    url: str, sample: list[int], jobs: int, rng: random.Random, deadline: Deadline
) -> list[float]:
    """Milliseconds per job through SQLAlchemy's async engine, as a scoring job queries."""
    from sqlalchemy import select

    from dialscore.kit.db import Database
    from dialscore.models import DncNumber

    async def go() -> list[float]:
        db = Database(url)
        try:
            timings = []
            for _ in range(jobs):
                deadline.check("looking numbers up")
                numbers, listed = _job(sample, rng)
                started = time.perf_counter()
                found: set[int] = set()
                async with db.read() as session:
                    for part in _chunks(numbers):
                        query = select(DncNumber.number, DncNumber.list_name)
                        rows = await session.execute(query.where(DncNumber.number.in_(part)))
                        found.update(number for number, _ in rows)
                timings.append((time.perf_counter() - started) * 1000)
                if found != listed:
                    raise BenchError(f"lookup found {len(found)} numbers, expected {len(listed)}")
            return timings
        finally:
            await db.dispose()

    return asyncio.run(go())


def describe(timings: list[float]) -> str:
    return (
        f"median {statistics.median(timings):.2f} ms, first {timings[0]:.2f} ms, "
        f"max {max(timings):.2f} ms (n={len(timings)})"
    )


@contextmanager
def database(args: argparse.Namespace, data_dir: Path) -> Iterator[str | None]:
    """None for the embedded SQLite default, else a fresh PostgreSQL database's URL."""
    if not args.postgres:
        yield None
        return
    name = f"dialscore_bench_{uuid.uuid4().hex[:10]}"
    admin = make_url(args.postgres).set(drivername="postgresql")
    with psycopg.connect(admin.render_as_string(False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(False)
    finally:
        with psycopg.connect(admin.render_as_string(False), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(args: argparse.Namespace) -> None:
    deadline = Deadline(args.timeout)
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="dialscore-bench-dnc-"))
    try:
        data_dir = work / "var"
        source = work / "dnc.txt"
        started = time.perf_counter()
        sample = generate(source, args.lines, args.order, rng)
        if len(sample) < JOB_NUMBERS // 2:
            raise BenchError(f"only {len(sample)} sampled numbers: use more --lines")
        size = source.stat().st_size
        print(
            f"generated {args.lines} lines ({args.order} order), {size / 2**20:.0f} MiB "
            f"in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        deadline.check("generating the file")
        with database(args, data_dir) as postgres_url:
            env = server_env(data_dir, **({"DATABASE_URL": postgres_url} if postgres_url else {}))
            url = postgres_url or f"sqlite:///{data_dir / 'dialscore.db'}"
            cli(["migrate"], env, work, deadline)

            report = run_import(source, env, work, deadline)
            seconds = report["seconds"]
            where = "PostgreSQL" if postgres_url else "SQLite"
            if not postgres_url:
                where += f", database {(data_dir / 'dialscore.db').stat().st_size / 2**20:.0f} MiB"
            print(
                f"import: {report['read']} lines, {report['numbers']} numbers "
                f"({report['imported']} new, {report['alreadyListed']} repeats, "
                f"{report['invalid']} invalid) in {seconds:.1f} s: "
                f"{report['read'] / seconds:,.0f} lines/s, {report['numbers'] / seconds:,.0f} "
                f"numbers/s ({report['wall']:.1f} s for the whole command; {where})",
                flush=True,
            )

            job = (
                f"lookup per job of {JOB_NUMBERS} numbers ({JOB_NUMBERS // 2} listed, "
                f"{JOB_NUMBERS // CHUNK} queries of {CHUNK})"
            )
            timings = measure_driver(url, sample, args.jobs, rng, deadline)
            print(f"{job}, bare driver: {describe(timings)}", flush=True)
            timings = measure_service_stack(url, sample, args.jobs, rng, deadline)
            print(f"{job}, service stack: {describe(timings)}", flush=True)
    finally:
        if args.keep_data:
            print(f"data kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=10_000_000, help="lines (10000000)")
    parser.add_argument(
        "--order", choices=("random", "sorted"), default="random", help="number order (random)"
    )
    parser.add_argument("--jobs", type=int, default=50, help="lookup jobs (50)")
    parser.add_argument("--timeout", type=float, default=900.0, help="overall limit, s (900)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the data")
    parser.add_argument("--postgres", help="admin URL of a PostgreSQL server to measure instead")
    parser.add_argument("--keep-data", action="store_true", help="keep the file and database")
    parser.add_argument(
        "--registry", action="store_true", help="import a registry full list instead (--full)"
    )
    parser.add_argument(
        "--numbers", type=int, default=10_000_000, help="numbers of the full list (10000000)"
    )
    parser.add_argument(
        "--compression", choices=("none", "gzip", "zip"), default="none", help="of the full list"
    )
    args = parser.parse_args()
    if args.lines < 100_000 or args.jobs < 1:
        parser.error("--lines must be at least 100000 and --jobs at least 1")
    if not 1000 <= args.numbers <= REGISTRY_NPAS * REGISTRY_LOCALS // 2:
        parser.error("--numbers must be between 1000 and 2796000000")
    if args.registry and args.postgres:
        parser.error("--registry measures the embedded database only")
    try:
        if args.registry:
            run_registry(args)
            return 0
        run(args)
    except (BenchError, subprocess.TimeoutExpired) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

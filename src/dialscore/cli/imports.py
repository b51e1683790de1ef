"""``dialscore import …``: load number blocks, do-not-call lists, company lines and the
enrichment directory from files; each prints one JSON object on stdout, with a progress bar on
stderr when it is a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from dialscore.cli.output import emit, fail, prepare_database, service_settings

if TYPE_CHECKING:
    from dialscore.kit import bulkload
    from dialscore.kit.linefiles import LineCounts
    from dialscore.scoring import loaders

imports = typer.Typer(
    help=(
        "Import scoring evidence (number blocks, do-not-call lists, company lines) and the "
        "enrichment directory"
    ),
    no_args_is_help=True,
)

T = TypeVar("T")
FileArgument = Annotated[
    Path, typer.Argument(help="The file to import", show_default=False, resolve_path=True)
]


@contextmanager
def _progress_bar(what: str) -> Iterator[bulkload.Progress]:
    """A progress callback that draws a bar on stderr only when stderr is a terminal, so that
    a captured stderr holds nothing but a possible error."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from dialscore.kit import bulkload

    console = Console(stderr=True)
    if not console.is_terminal:
        yield bulkload.no_progress
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"{what}: reading", total=None)

        def update(phase: str, done: int, total: int) -> None:
            bar.update(task, description=f"{what}: {phase}", completed=done, total=total or None)

        yield update


def _run(path: Path, what: str, load: Callable[[str, bulkload.Progress], T]) -> T:
    """Checks the file, migrates the embedded database (or checks PostgreSQL's schema), and
    runs ``load`` with the database URL and a progress callback; user errors exit with 1."""
    import sqlite3

    import psycopg

    from dialscore.kit.linefiles import FileFormatError

    if not path.exists():
        fail(f"no such file: {path}")
    if not path.is_file():
        fail(f"not a file: {path}")
    settings = service_settings()
    prepare_database(settings)
    try:
        with _progress_bar(what) as progress:
            return load(settings.resolved_database_url, progress)
    except FileFormatError as exc:
        fail(f"{path}: {exc}")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    except (sqlite3.Error, psycopg.Error) as exc:
        fail(f"database error: {exc}")
    raise AssertionError("unreachable: fail() exits")


def _lines(counts: LineCounts) -> dict[str, Any]:
    return {
        "read": counts.lines,
        "skipped": counts.skipped,
        "invalid": counts.invalid,
        "invalidExamples": [r.describe() for r in counts.rejections],
    }


def _timing(seconds: float, done: int) -> dict[str, Any]:
    return {
        "seconds": round(seconds, 3),
        "perSecond": round(done / seconds) if seconds > 0 else 0,
    }


@imports.command("dnc")
def dnc(
    file: FileArgument,
    list_name: Annotated[
        str, typer.Option("--list", help="The do-not-call list the numbers are on")
    ] = "national",
    remove: Annotated[
        bool, typer.Option("--remove", help="Take the file's numbers off the list (plain files)")
    ] = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="The file is a full list: it replaces the list's numbers in its area codes",
        ),
    ] = False,
    file_date: Annotated[
        str | None,
        typer.Option(
            "--file-date",
            metavar="YYYY-MM-DD",
            help="The file's date, when the file does not say it (else its modification time)",
        ),
    ] = None,
) -> None:
    """Apply a do-not-call file to a list: add its numbers, take off those a change list marks
    for deletion (or all of them with --remove), or with --full replace the list's numbers
    in the file's area codes by the file's.

    Flat text, one number a line: 10 digits (NANP), areacode,number, 1 and 10 digits, or
    +E.164; a change list's lines carry an add or delete mark (A or D) beside the number.
    Blank lines, # comments and a header line are skipped. Or the registry's XML. Plain, gzip
    or zip. Each import is recorded with the file's date."""
    from datetime import date

    from dialscore.scoring import dncload

    name = list_name.strip()
    if not name or len(name) > dncload.MAX_LIST_NAME:
        fail(f"--list needs a name of 1 to {dncload.MAX_LIST_NAME} characters")
    if full and remove:
        fail("--full and --remove exclude each other: a full list replaces the list")
    stated: date | None = None
    if file_date is not None:
        try:
            stated = date.fromisoformat(file_date.strip())
        except ValueError:
            fail(f"--file-date needs a date as YYYY-MM-DD, not {file_date!r}")
    report = _run(
        file,
        "do-not-call",
        lambda url, progress: dncload.import_dnc(
            url,
            file,
            list_name=name,
            remove=remove,
            full=full,
            file_date=stated,
            progress=progress,
        ),
    )
    emit(
        {
            "file": str(file),
            "list": report.list_name,
            "kind": report.kind,
            "format": report.format,
            "compression": report.compression,
            "fileDate": report.file_date.isoformat() if report.file_date else None,
            "fileDateSource": report.file_date_source,
            "appliedAt": report.applied_at.isoformat() if report.applied_at else None,
            "remove": report.remove,
            **_lines(report.counts),
            "numbers": report.counts.accepted,
            "deletions": report.counts.deletions,
            "added": report.imported,
            "imported": report.imported,
            "alreadyListed": report.already_listed,
            "removed": report.removed,
            "notListed": report.not_listed,
            **_timing(report.seconds, report.counts.accepted),
        }
    )


def _upserted(file: Path, report: loaders.UpsertReport) -> dict[str, Any]:
    return {
        "file": str(file),
        **_lines(report.counts),
        "rows": report.counts.accepted,
        "imported": report.imported,
        "updated": report.updated,
        "unchanged": report.unchanged,
        **_timing(report.seconds, report.counts.accepted),
    }


@imports.command("number-blocks")
def number_blocks(file: FileArgument) -> None:
    """Add NANP number blocks (NPA-NXX, NPA-NXX-X) with their carrier category from a CSV file.

    Header: prefix,category[,carrier] or npa,nxx[,x],category[,carrier]. Categories:
    wireless (mobile, cellular), landline (wireline, fixed, ILEC, CLEC), voip (IPES).
    A block already known takes the file's category and carrier."""
    from dialscore.scoring import loaders

    report = _run(
        file,
        "number blocks",
        lambda url, progress: loaders.import_number_blocks(url, file, progress=progress),
    )
    emit(_upserted(file, report))


@imports.command("company-lines")
def company_lines(file: FileArgument) -> None:
    """Add companies' main lines from a CSV file with the header number,company,ivrPath.

    Numbers without a country code are read as US numbers; ivrPath is the keys that reach a
    person (empty when unknown). A line already known takes the file's company and ivrPath."""
    from dialscore.scoring import loaders

    report = _run(
        file,
        "company lines",
        lambda url, progress: loaders.import_company_lines(url, file, progress=progress),
    )
    emit(_upserted(file, report))


@imports.command("directory")
def directory(file: FileArgument) -> None:
    """Add or update the people of the enrichment directory from a CSV or JSON Lines file.

    Columns (CSV header or JSON keys): id (optional, stable record id), firstName, lastName,
    email, linkedInUrl, company, website, companyLinkedInUrl, title, and phones as
    phone,phoneType,phone2,phone2Type,… (any number), mobilePhone, directPhone, hqPhone, or
    phones ("number:type;number:type"; in JSON a list of {number, type}). Numbers without a
    country code are read as US numbers; invalid ones are dropped and counted.

    A row needs an email, a LinkedIn URL, or a first and last name with a company. Records
    are known again by id, else by their LinkedIn profile, else email, else name and
    company: a re-import updates them and adds no duplicates. Files ending in .jsonl,
    .ndjson or .json are JSON Lines, .csv files CSV; others by their first character."""
    from dialscore.enrichment import directory as people

    report = _run(
        file,
        "directory",
        lambda url, progress: people.import_directory(url, file, progress=progress),
    )
    counts = report.counts
    emit(
        {
            "file": str(file),
            "format": report.format,
            **_lines(counts),
            "rows": counts.accepted,
            "imported": report.imported,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "phones": counts.phones,
            "invalidPhones": counts.invalid_phones,
            "invalidPhoneExamples": [r.describe() for r in counts.phone_rejections],
            "rowsWithoutPhones": counts.rows_without_phones,
            "ignoredColumns": list(counts.ignored_columns),
            **_timing(report.seconds, counts.accepted),
        }
    )

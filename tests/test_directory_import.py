"""The directory import: its reading of phones, blocks of lines (quoted fields across
them, worker processes), the loader on SQLite and PostgreSQL, and ``dialscore import
directory`` run as a real command, checked against the rows in the database."""

# The cli fixture comes from tests.test_imports, and tests take it as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import hashlib
import io
import json
import multiprocessing
import sqlite3
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from dialscore.enrichment import directory
from dialscore.enrichment.directory import blocks, importer, pool, sqlite_writer
from dialscore.enrichment.directory.columns import COLUMNS
from dialscore.enrichment.directory.companies import company_table_rows
from dialscore.enrichment.directory.parsing import parse_block
from dialscore.enrichment.directory.rows import phone_e164
from dialscore.identity import companies as identity_companies
from dialscore.identity import keys as identity_keys
from dialscore.identity.keys import Person, lookup_keys
from dialscore.kit.db import sync_url
from dialscore.kit.linefiles import FileFormatError
from dialscore.migrations import upgrade
from dialscore.models import DirectoryPerson
from tests.test_imports import Cli, cli, rows_of  # noqa: F401  (cli: the fixture)


def digest(kind: str, key: str) -> str:
    """A derived record id, as the import documents it."""
    return f"{kind}:" + hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def phones_of(value: Any) -> Any:
    """The phones column as Python (SQLite hands back its JSON text)."""
    return json.loads(value) if isinstance(value, str) else value


# -- phones -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "e164"),
    [
        ("(415) 555-2671", "+14155552671"),
        ("415-555-2671", "+14155552671"),
        ("415.555.2671", "+14155552671"),
        ("415 555 2671", "+14155552671"),
        ("4155552671", "+14155552671"),
        ("1-415-555-2671", "+14155552671"),
        ("14155552671", "+14155552671"),
        ("+1 (415) 555-2671", "+14155552671"),
        ("+14155552671", "+14155552671"),
        ("+44 20 7946 0000", "+442079460000"),
        ("+49 30 12345678", "+493012345678"),
        ("0044 20 7946 0000", None),  # not an international prefix from the US
        ("011 44 20 7946 0000", "+442079460000"),
        ("12345", None),
        ("555-0100", None),
        ("(115) 555-2671", None),
        ("0155552671", None),
        ("n/a", None),
        ("+1 415 555 2671 ext 12", None),
        ("415-555-2671 x12", None),
    ],
)
def test_phones_in_e164_with_us_as_default(text: str, e164: str | None) -> None:
    number, reason = phone_e164(text)
    assert number == e164
    assert bool(reason) is (e164 is None)
    if e164 is None and "x" in text:
        assert reason == "a number with an extension"


# -- blocks -----------------------------------------------------------------------------------

QUOTED = (
    "# exported 2026-11-22\r\n"
    "id,firstName,lastName,email,company,title,phone\r\n"
    'a1,Ann,Lee,ann@acme.com,"Acme, Inc.","Head of\r\nSales, ""EMEA""",4155552671\r\n'
    "\r\n"
    'a2,Bob,Ray,bob@acme.com,Acme,"a title\nwith\nthree lines",2125557188\r\n'
    "a3,Cy,Oh,,,,\r\n"  # invalid: nothing to match by
    'a4,Di,"Lu",di@acme.com,Acme,"x",6175552142\r\n'
    "a5,Ed,Wu,ed@acme.com,Acme,plain,+44 20 7946 0000"  # no final line feed
)


def parsed_rows(data: bytes, block_bytes: int) -> tuple[list[Any], directory.DirectoryCounts]:
    parser = pool.BlockParser(blocks.LineReader(io.BytesIO(data), "csv"), block_bytes)
    rows: list[Any] = []
    counts = directory.DirectoryCounts()
    for result, _ in parser.results(0):
        counts.add(result.counts)
        rows += result.unpacked()
    return rows, counts


@pytest.mark.parametrize("block_bytes", [1, 7, 33, 64, 1 << 20])
def test_blocks_never_cut_a_quoted_field(block_bytes: int) -> None:
    data = QUOTED.encode()
    whole, whole_counts = parsed_rows(data, 1 << 20)
    rows, counts = parsed_rows(data, block_bytes)
    assert rows == whole
    assert [row[0] for row in rows] == ["a1", "a2", "a4", "a5"]
    assert rows[0][5] == "Acme, Inc." and rows[0][8] == 'Head of\r\nSales, "EMEA"'
    assert rows[1][8] == "a title\nwith\nthree lines"
    assert (counts.lines, counts.skipped, counts.invalid, counts.accepted) == (11, 3, 1, 4)
    assert counts == whole_counts
    assert [r.line for r in counts.rejections] == [9]  # after two records of several lines


def test_an_unterminated_quote_runs_to_the_end_of_the_file() -> None:
    data = b'id,email,title\nx1,x@acme.com,"open\nx2,y@acme.com,never closed\n'
    rows, counts = parsed_rows(data, 8)
    assert [row[0] for row in rows] == ["x1"]
    assert rows[0][8] == "open\nx2,y@acme.com,never closed"  # values are trimmed
    assert counts.accepted == 1


def test_a_line_longer_than_the_limit_is_a_file_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "MAX_LINE_BYTES", 100)
    with pytest.raises(FileFormatError, match="longer than"):
        parsed_rows(b"id,email\n" + b"x" * 300 + b"\n", 16)


# -- the loader -------------------------------------------------------------------------------


def people_csv(count: int) -> str:
    lines = ["id,firstName,lastName,email,company,notes,phone,phoneType"]
    for i in range(count):
        title = f'"line one\nline {i}"' if i % 7 == 0 else "plain"
        lines.append(f"p{i},Ann{i},Lee,ann{i}@acme.com,Acme,{title},+1415555{i % 10000:04d},cell")
    return "\n".join(lines) + "\n"


def table(url: str) -> list[tuple[Any, ...]]:
    return rows_of(
        url,
        "SELECT id, first_name, email_key, last_name_key, phones FROM directory_people ORDER BY id",
    )


def test_the_workers_large_memos_give_the_same_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an import's parse workers do first: the company and host memos widened, the
    keys unchanged (the memos are restored after the test)."""
    key_memos = ("_company_identity", "_stored_company_key", "_company_page")
    memos = [(identity_keys, name) for name in key_memos]
    memos += [(identity_companies, name) for name in ("_host", "_company_host")]
    for module, name in memos:
        monkeypatch.setattr(module, name, getattr(module, name))
    record = ("Ann", "Lee", "ann@acme.com", None, "Acme, Inc.", "https://www.acme.com/", None)
    before = identity_keys.record_key_values(*record)
    identity_keys.use_large_memos()
    for module, name in memos:
        assert getattr(module, name).cache_info().maxsize == identity_keys.LARGE_MEMO
    assert identity_keys.record_key_values(*record) == before
    assert identity_keys._company_identity.cache_info().misses == 1


def test_workers_and_blocks_give_the_rows_of_one_pass(database_url: str, tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text(people_csv(300))
    seen: list[int] = []

    def progress(phase: str, done: int, total: int) -> None:
        assert phase == "reading" and total == path.stat().st_size
        seen.append(done)

    one = directory.import_directory(database_url, path, workers=0, progress=progress)
    assert (one.counts.accepted, one.imported, one.counts.ignored_columns) == (300, 300, ("notes",))
    assert seen == sorted(seen) and seen[-1] == path.stat().st_size
    expected = table(database_url)
    assert len(expected) == 300
    assert phones_of(expected[0][4]) == [{"number": "+14155550000", "type": "mobile"}]

    # Again in blocks of 256 bytes, parsed in a worker process, in batches of 50.
    again = directory.import_directory(
        database_url, path, workers=1, block_bytes=256, batch_rows=50
    )
    assert (again.imported, again.updated, again.unchanged) == (0, 0, 300)
    assert again.counts == one.counts
    assert table(database_url) == expected


def test_the_model_reads_the_rows_the_loader_writes(database_url: str, tmp_path: Path) -> None:
    path = tmp_path / "people.jsonl"
    path.write_text(
        json.dumps(
            {
                "firstName": "Zoë",
                "lastName": "Müller",
                "email": "Zoe.Muller@Acme.de",
                "phones": [{"number": "+49 30 12345678", "type": "Direct Dial"}],
            }
        )
        + "\n"
    )
    before = datetime.now(UTC)
    directory.import_directory(database_url, path)
    engine = create_engine(sync_url(database_url))
    try:
        with Session(engine) as session:
            (person,) = session.scalars(select(DirectoryPerson)).all()
    finally:
        engine.dispose()
    assert person.id == digest("em", "zoe.muller@acme.de")
    assert (person.first_name, person.last_name, person.last_name_key) == (
        "Zoë",
        "Müller",
        "muller",
    )
    assert person.phones == [{"number": "+493012345678", "type": "direct"}]
    assert person.updated_at.tzinfo is not None
    assert before.replace(microsecond=0) <= person.updated_at <= datetime.now(UTC)


def test_an_id_given_again_in_a_file_takes_the_later_row(database_url: str, tmp_path: Path) -> None:
    path = tmp_path / "twice.csv"
    path.write_text("id,email,title\nx,a@acme.com,first\ny,b@acme.com,other\nx,a@acme.com,second\n")
    report = directory.import_directory(database_url, path)
    assert (report.imported, report.updated, report.unchanged) == (2, 1, 0)
    assert rows_of(database_url, "SELECT id, title FROM directory_people ORDER BY id") == [
        ("x", "second"),
        ("y", "other"),
    ]


INDEXES = ["ix_directory_people_company", "ix_directory_people_email",
           "ix_directory_people_linkedin", "ux_directory_people_id"]  # fmt: skip


def indexes(url: str) -> list[str]:
    """The indexes the directory has (SQLite)."""
    return [
        name
        for (name,) in rows_of(
            url,
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = "
            "'directory_people' AND sql IS NOT NULL ORDER BY name",
        )
    ]


def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(url)
    return url


def test_an_import_into_an_empty_directory_builds_the_indexes_at_its_end(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path)
    assert indexes(url) == INDEXES
    path = tmp_path / "people.csv"
    path.write_text(people_csv(300))
    seen: list[list[str]] = []

    def progress(phase: str, done: int, total: int) -> None:
        seen.append(indexes(url))

    directory.import_directory(url, path, batch_rows=50, progress=progress)
    # Written without them, in batches; built before the import returns.
    assert seen[0] == []
    assert indexes(url) == INDEXES
    plan = rows_of(
        url, "EXPLAIN QUERY PLAN SELECT id FROM directory_people WHERE email_key = 'a@acme.com'"
    )
    assert "ix_directory_people_email" in str(plan)

    # A directory with people keeps them while it is written.
    seen.clear()
    directory.import_directory(url, path, batch_rows=50, progress=progress)
    assert seen and all(indexes == INDEXES for indexes in seen)


def test_a_failed_import_leaves_the_indexes(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    path = tmp_path / "people.csv"
    path.write_text("ann@acme.com,Acme\n")  # no header
    with pytest.raises(FileFormatError):
        directory.import_directory(url, path)
    assert indexes(url) == INDEXES


def test_an_import_builds_the_indexes_an_import_stopped_midway_left_unbuilt(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path)
    path = tmp_path / "people.csv"
    path.write_text(people_csv(20))
    directory.import_directory(url, path)
    rows_of(url, "DROP INDEX ix_directory_people_email")  # as a killed import leaves it
    assert indexes(url) == [INDEXES[0], *INDEXES[2:]]
    report = directory.import_directory(url, path)
    assert (report.imported, report.unchanged) == (0, 20)
    assert indexes(url) == INDEXES


def test_an_import_settles_the_ids_an_import_stopped_midway_left_twice(tmp_path: Path) -> None:
    """An import into an empty directory appends every row and settles the records given
    again at its end; killed before, it leaves them twice, without the ids' index. The next
    import keeps the later row of each (as the killed one would have) and builds it."""
    url = sqlite_url(tmp_path)
    path = tmp_path / "people.csv"
    path.write_text(people_csv(20))
    directory.import_directory(url, path)
    columns = ", ".join(name for name in COLUMNS if name != "title")
    with sqlite3.connect(tmp_path / "fresh.db") as conn:
        conn.execute("DROP INDEX ux_directory_people_id")
        conn.execute(
            f"INSERT INTO directory_people ({columns}, title, updated_at) SELECT {columns}, "
            "'later', updated_at FROM directory_people WHERE id IN ('p3', 'p7')"
        )
    assert rows_of(url, "SELECT count(*) FROM directory_people") == [(22,)]
    report = directory.import_directory(url, path)
    assert (report.imported, report.updated, report.unchanged) == (0, 2, 18)
    assert indexes(url) == INDEXES
    assert rows_of(url, "SELECT count(*), count(DISTINCT id) FROM directory_people") == [(20, 20)]


COMPANIES_CSV = (
    "id,firstName,lastName,email,company,website,companyLinkedInUrl\n"
    # Summit: two people at each of two domains (the first in order wins), one at a third.
    "s1,A,A,,Summit,summit.io,\ns2,B,B,,Summit,summit.io,\n"
    "s3,C,C,,Summit,summit.com,\ns4,D,D,,Summit,summit.com,\ns5,E,E,,Summit,summit.net,\n"
    # Acme: one domain only.
    "a1,F,F,,Acme,acme.com,\n"
    # A page shown as often with a name alone as with a domain alone: the name first.
    "g1,G,G,,Globex,,linkedin.com/company/globex\n"
    "g2,H,H,h@globex.com,,,linkedin.com/company/globex\n"
    # A page most of whose people show a name and a domain.
    "i1,I,I,,Initech,initech.com,linkedin.com/company/initech\n"
    "i2,J,J,,Initech,initech.com,linkedin.com/company/initech\n"
    "i3,K,K,,Initech,,linkedin.com/company/initech\n"
    # A page alone, with nothing to tell its company by.
    "p1,L,L,l@gmail.com,,,linkedin.com/company/hooli\n"
)
COMPANY_TABLES = (
    [("summit", "summit.com", 2)],
    [("globex", "globex", None, 1), ("initech", "initech", "initech.com", 2)],
)


def company_tables(url: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    return (
        rows_of(url, "SELECT name_key, domain, people FROM directory_company_domains ORDER BY 1"),
        rows_of(
            url,
            "SELECT page, name_key, domain, people FROM directory_company_pages ORDER BY 1",
        ),
    )


def test_the_company_tables_counted_as_parsed_or_in_the_table(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "companies.csv"
    path.write_text(COMPANIES_CSV)
    # Into an empty directory: on SQLite, from the companies counted while parsing (the
    # table is not counted).
    with monkeypatch.context() as patch:
        if database_url.startswith("sqlite"):
            patch.setattr(sqlite_writer, "COMPANY_TABLES_SQL", ("SELECT not_counted",))
        directory.import_directory(database_url, path)
    assert company_tables(database_url) == COMPANY_TABLES
    # Into one with these people: counted in the table.
    report = directory.import_directory(database_url, path)
    assert report.unchanged == 12
    assert company_tables(database_url) == COMPANY_TABLES
    parsed = parse_block("csv", None, 1, path.read_bytes(), True)
    assert company_table_rows(parsed.companies) == COMPANY_TABLES


@pytest.mark.parametrize("batch_rows", [4, 50_000])
def test_a_record_given_again_has_its_company_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int
) -> None:
    url = sqlite_url(tmp_path)
    path = tmp_path / "companies.csv"
    # The last Summit person again, now at summit.io: Summit's domains are three to two;
    # and an Initech person again, the same.
    path.write_text(
        COMPANIES_CSV + "s5,E,E,,Summit,summit.io,\ni3,K,K,,Initech,,linkedin.com/company/initech\n"
    )
    monkeypatch.setattr(sqlite_writer, "COMPANY_TABLES_SQL", ("SELECT not_counted",))
    report = directory.import_directory(url, path, batch_rows=batch_rows)
    assert (report.imported, report.updated, report.unchanged) == (12, 1, 1)
    assert company_tables(url) == ([("summit", "summit.io", 3)], COMPANY_TABLES[1])


def test_a_reimport_sets_the_keys_of_the_records_it_changes(
    database_url: str, tmp_path: Path
) -> None:
    """A changed record's keys follow its values, and a key that no longer is what the
    values give (as after a change to how keys are made) is made again, while a record
    that did not change keeps its index entries."""
    path = tmp_path / "people.csv"
    path.write_text(people_csv(30))
    directory.import_directory(database_url, path)
    stale = "UPDATE directory_people SET email_key = 'stale@acme.com' WHERE id = 'p5'"
    if database_url.startswith("sqlite"):
        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as conn:
            conn.execute(stale)
    else:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(stale)
    path.write_text(people_csv(30).replace("ann3@acme.com", "ann.three@acme.com"))
    report = directory.import_directory(database_url, path)
    assert (report.imported, report.updated, report.unchanged) == (0, 2, 28)
    found = rows_of(
        database_url,
        "SELECT id, email_key FROM directory_people WHERE email_key IN "
        "('ann.three@acme.com', 'ann3@acme.com', 'ann5@acme.com', 'stale@acme.com') ORDER BY id",
    )
    assert found == [("p3", "ann.three@acme.com"), ("p5", "ann5@acme.com")]


def test_the_keys_set_apart_are_the_lookup_indexes_columns() -> None:
    assert sqlite_writer.lookup_keys() == (
        "email_key", "linkedin_key", "last_name_key", "company_key", "first_initial"
    )  # fmt: skip


# -- chunks the workers parse and write (SQLite) ----------------------------------------------


def directory_state(url: str) -> tuple[Any, ...]:
    """Every column of every record (not when it was written), and the company tables."""
    records = rows_of(url, f"SELECT {', '.join(COLUMNS)} FROM directory_people ORDER BY id")
    return records, company_tables(url)


def counted(report: directory.DirectoryReport) -> tuple[Any, ...]:
    return report.counts, report.imported, report.updated, report.unchanged


def repeating_csv(count: int) -> str:
    """People whose records come again: some in the next line (in the same chunk), some at
    the end of the file (in another), changed or not; some titles over two lines."""
    lines = ["id,firstName,lastName,email,company,website,title,phone"]

    def person(i: int, company: int, title: str) -> str:
        return (
            f"p{i},Ann{i},Lee,ann{i}@acme{company}.com,Acme {company},acme{company}.com,"
            f"{title},+1415555{i % 10000:04d}"
        )

    for i in range(count):
        lines.append(person(i, i % 13, f'"line one\nline {i}"' if i % 9 == 0 else "plain"))
        if i % 50 == 7:
            lines.append(person(i, i % 13, "changed at once"))
    for i in range(0, count, 37):
        lines.append(person(i, (i + 1) % 13, "moved") if i % 2 else person(i, i % 13, "plain"))
    lines.append(",Bo,Ek,,Initech,,no id,2125557188")  # known by name and company
    return "\n".join(lines) + "\n"


class StartedPool(ProcessPoolExecutor):
    """A pool that answers a worker's first task only once it has run: the import goes on
    with its workers started (forked, all start at the first task), where a loaded machine
    could start them only after this process had read the whole small file itself."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        if fn is pool._ready:
            future.result(timeout=60)
        return future


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers forked from the test at once and started before the import goes on, so that
    they take the chunks from the start (from a server that starts meanwhile, or on a loaded
    machine, this process could read the whole small file)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    monkeypatch.setattr(pool, "worker_context", lambda: multiprocessing.get_context("fork"))
    monkeypatch.setattr(pool, "ProcessPoolExecutor", StartedPool)


def worker_chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows of each chunk a worker wrote, as the importing process hears of them."""
    seen: list[int] = []
    written = pool.Tally.written

    def spy(tally: Any, chunk: Any) -> None:
        seen.append(chunk.counts.accepted)
        written(tally, chunk)

    monkeypatch.setattr(pool.Tally, "written", spy)
    return seen


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.usefixtures("forked")
def test_workers_write_their_chunks_as_one_pass_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    path = tmp_path / "people.csv"
    path.write_text(repeating_csv(600))
    (tmp_path / "one").mkdir()
    (tmp_path / "chunks").mkdir()
    one, url = sqlite_url(tmp_path / "one"), sqlite_url(tmp_path / "chunks")
    expected = directory.import_directory(one, path, workers=0, batch_rows=50)
    assert (expected.imported, expected.updated, expected.unchanged) == (601, 21, 8)
    chunks = worker_chunks(monkeypatch)
    report = directory.import_directory(url, path, workers=workers, block_bytes=128, batch_rows=50)
    # The workers write nearly every row: this process only those of its first blocks.
    assert len(chunks) > 10 and sum(chunks) > 200
    assert counted(report) == counted(expected)
    assert directory_state(url) == directory_state(one)
    assert indexes(url) == INDEXES

    # Again, into a directory that has them.
    expected = directory.import_directory(one, path, workers=0, batch_rows=50)
    report = directory.import_directory(url, path, workers=workers, block_bytes=128, batch_rows=50)
    assert counted(report) == counted(expected)
    assert directory_state(url) == directory_state(one)


@pytest.mark.usefixtures("forked")
def test_a_chunk_cut_through_a_quoted_field_is_parsed_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quote inside an unquoted field fools the count of quotes that chooses where chunks
    end: a chunk can end inside a quoted field. Its worker hands it back, and the importing
    process parses the rest of the file itself, joining blocks as it must."""
    lines = ["id,email,title"]
    for i in range(120):
        lines += [f'a{i},a{i}@acme.com,5" screen', f'b{i},b{i}@acme.com,"two', 'lines"']
        lines += [f'c{i},c{i}@acme.com,7" tablet', f"d{i},d{i}@acme.com,plain"]
    path = tmp_path / "quotes.csv"
    path.write_text("\n".join(lines) + "\n")
    (tmp_path / "one").mkdir()
    (tmp_path / "chunks").mkdir()
    one, url = sqlite_url(tmp_path / "one"), sqlite_url(tmp_path / "chunks")
    expected = directory.import_directory(one, path, workers=0)
    assert expected.imported == 480
    starts: list[int] = []

    class Reader(blocks.LineReader):
        def __init__(self, handle: Any, kind: str, position: int = 0, line: int = 1) -> None:
            starts.append(position)
            super().__init__(handle, kind, position, line)

    monkeypatch.setattr(importer, "LineReader", Reader)
    monkeypatch.setattr(pool, "LineReader", Reader)
    report = directory.import_directory(url, path, workers=2, block_bytes=64)
    assert starts[0] == 0 and starts[1:] and starts[-1] > 0  # a chunk handed back
    assert counted(report) == counted(expected)
    assert directory_state(url) == directory_state(one)
    titles = rows_of(url, "SELECT title FROM directory_people WHERE id IN ('a0', 'b7')")
    assert sorted(titles) == [('5" screen',), ("two\nlines",)]


@pytest.mark.usefixtures("forked")
def test_a_file_error_in_a_workers_chunk_keeps_the_chunks_before_it(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    path = tmp_path / "people.csv"
    # The last line, without a line feed, is the final chunk; its quoted field is longer than
    # the csv module reads.
    path.write_text(people_csv(300) + 'x1,Al,Bo,al@acme.com,Acme,"' + "x" * 200_000 + '"')
    with pytest.raises(FileFormatError, match="field larger than field limit"):
        directory.import_directory(url, path, workers=2, block_bytes=256, batch_rows=50)
    assert rows_of(url, "SELECT count(*) FROM directory_people") == [(300,)]
    assert indexes(url) == INDEXES


def test_only_a_database_in_a_file_is_written_by_the_workers(tmp_path: Path) -> None:
    """Workers open the database themselves: an in-memory one would be their own."""
    assert sqlite_writer.on_disk(sqlite3.connect(tmp_path / "file.db"))
    assert not sqlite_writer.on_disk(sqlite3.connect(":memory:"))


def test_workers_are_forked_only_from_a_process_of_one_thread() -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    stop = threading.Event()
    if threading.active_count() == 1:
        assert pool.worker_context().get_start_method() == "fork"
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert pool.worker_context().get_start_method() == "forkserver"
    finally:
        stop.set()
        other.join()


# -- the command, on SQLite and PostgreSQL -----------------------------------------------------

CSV_FILE = (
    "id,First Name,last_name,Email,LinkedIn URL,Company,Website,Company LinkedIn URL,Title,"
    "phone,phoneType,phone2,phone2Type,mobilePhone,Notes\n"
    # 2: an id, every field; the mobile number is the first phone again, kept once
    "crm-1,José,García-López,Jose.Garcia+crm@Acme.com,https://uk.linkedin.com/in/jose-garcia/?trk=x,"
    '"Acme, Inc.",https://www.acme.com/,https://www.linkedin.com/company/acme/,CTO,'
    "(415) 555-2671,Cell,+44 20 7946 0000,work,415-555-2671,vip\n"
    "# 3: a comment\n"
    "\n"
    # 5: no id, a LinkedIn profile: its id is the profile's
    ",Ann,Lee,,linkedin.com/in/ann-lee-7,Globex,,,,2125557188,,,,,\n"
    # 6: no id, an email
    ",Bob,Ray,bob.ray@globex.com,,Globex,,,,,,,,,\n"
    # 7: no id, a name and company; the phone is not one
    ",Cleo,O'Brien,,,Initech LLC,,,,12345,mobile,,,,\n"
    # 8: nothing to match by
    ",Dee,,,,,,,,6175552142,,,,,\n"
    # 9: a title longer than its column
    f"crm-9,Eve,Li,eve@acme.com,,Acme,,,{'x' * 301},,,,,,\n"
)


def test_csv_import_keys_phones_reimport_and_update(cli: Cli) -> None:
    path = cli.file("people.csv", CSV_FILE)
    first = cli.ok("import", "directory", path)
    assert (first["file"], first["format"]) == (str(Path(path).resolve()), "csv")
    assert (first["read"], first["skipped"], first["rows"], first["invalid"]) == (9, 3, 4, 2)
    assert (first["imported"], first["updated"], first["unchanged"]) == (4, 0, 0)
    assert [(e["line"], e["reason"][:16]) for e in first["invalidExamples"]] == [
        (8, "cannot be matche"),
        (9, "title is longer "),
    ]
    assert (first["phones"], first["invalidPhones"], first["rowsWithoutPhones"]) == (5, 1, 2)
    assert first["invalidPhoneExamples"] == [
        {"line": 7, "text": "12345", "reason": "not a valid phone number"}
    ]
    assert first["ignoredColumns"] == ["Notes"]
    assert first["seconds"] >= 0 and first["perSecond"] >= 0

    query = (
        "SELECT id, first_name, last_name, email, company, title, phones, email_key, "
        "linkedin_key, last_name_key, updated_at FROM directory_people ORDER BY first_name"
    )
    rows = cli.rows(query)
    assert [row[0] for row in rows] == [
        digest("li", "ann-lee-7"),
        digest("em", "bob.ray@globex.com"),
        digest("nc", "cleo|obrien|name:initech"),
        "crm-1",
    ]
    ann, bob, cleo, jose = rows
    assert jose[1:6] == ("José", "García-López", "Jose.Garcia+crm@Acme.com", "Acme, Inc.", "CTO")
    assert phones_of(jose[6]) == [
        {"number": "+14155552671", "type": "mobile"},
        {"number": "+442079460000", "type": "direct"},
    ]
    assert phones_of(ann[6]) == [{"number": "+12125557188", "type": None}]
    assert phones_of(cleo[6]) == [] and phones_of(bob[6]) == []
    for row in rows:
        keys = lookup_keys(Person(first_name=row[1], last_name=row[2], email=row[3]))
        assert row[9] == keys.last_name
    assert jose[7:10] == ("jose.garcia@acme.com", "jose-garcia", "garcialopez")
    assert ann[7:10] == (None, "ann-lee-7", "lee")
    assert cleo[7:10] == (None, None, "obrien")

    again = cli.ok("import", "directory", path)
    assert (again["imported"], again["updated"], again["unchanged"]) == (0, 0, 4)
    assert cli.rows(query) == rows  # unchanged records keep their updated_at

    # A new title for José and another legal suffix for Initech: updates, same records.
    changed = cli.file(
        "changed.csv", CSV_FILE.replace(",CTO,", ",CEO,").replace("Initech LLC", "Initech Inc.")
    )
    third = cli.ok("import", "directory", changed)
    assert (third["imported"], third["updated"], third["unchanged"]) == (0, 2, 2)
    after = cli.rows(query)
    assert [row[0] for row in after] == [row[0] for row in rows]
    assert after[3][5] == "CEO" and after[2][4] == "Initech Inc."
    assert after[3][10] > jose[10] and after[0][10] == ann[10]


def test_json_lines_import(cli: Cli) -> None:
    records: list[Any] = [
        {
            "id": 41,
            "firstName": "Cleo",
            "lastName": "Diaz",
            "linkedInUrl": "https://de.linkedin.com/in/cl%C3%A9o-diaz/",
            "company": "Initech",
            "phones": [{"number": "+16175552142", "type": "HQ"}, "(212) 555-7188", {"number": ""}],
            "phone2": "+44 20 7946 0000",
            "phone2Type": "mobile",
            "source": "fair 2026",
        },
        {"firstName": "Dan", "lastName": "Ek", "email": "dan@globex.com", "phones": []},
        {"firstName": ["Eve"], "email": "eve@globex.com"},
        [1, 2],
    ]
    text = "\n".join(json.dumps(r) for r in records) + "\n\nnot json\n"
    path = cli.file("people.jsonl", text)
    report = cli.ok("import", "directory", path)
    assert report["format"] == "jsonl"
    assert (report["read"], report["skipped"], report["rows"], report["invalid"]) == (6, 1, 2, 3)
    assert [(e["line"], e["reason"]) for e in report["invalidExamples"]] == [
        (3, "firstName must be a string"),
        (4, "not a JSON object"),
        (6, "not a JSON object"),
    ]
    assert report["ignoredColumns"] == ["source"]
    rows = cli.rows("SELECT id, linkedin_key, phones FROM directory_people ORDER BY id")
    assert rows[0][:2] == ("41", "cléo-diaz")
    assert phones_of(rows[0][2]) == [
        {"number": "+16175552142", "type": "hq"},
        {"number": "+12125557188", "type": None},
        {"number": "+442079460000", "type": "mobile"},
    ]
    assert rows[1][0] == digest("em", "dan@globex.com") and phones_of(rows[1][2]) == []

    again = cli.ok("import", "directory", path)
    assert (again["imported"], again["updated"], again["unchanged"]) == (0, 0, 2)
    assert cli.rows("SELECT count(*) FROM directory_people") == [(2,)]


def test_phones_as_one_column(cli: Cli) -> None:
    path = cli.file(
        "people.txt",  # no telling suffix: read by its first character
        "email,phones\nann@acme.com,+14155552671:mobile;(212) 555-7188;bad:direct;:hq\n",
    )
    report = cli.ok("import", "directory", path)
    assert (report["format"], report["rows"], report["invalidPhones"]) == ("csv", 1, 1)
    (row,) = cli.rows("SELECT phones FROM directory_people")
    assert phones_of(row[0]) == [
        {"number": "+14155552671", "type": "mobile"},
        {"number": "+12125557188", "type": None},
    ]


def test_directory_import_errors(cli: Cli) -> None:
    missing = str(cli.cwd / "missing.csv")
    assert f"no such file: {missing}" in cli.error("import", "directory", missing)
    assert "not a file" in cli.error("import", "directory", str(cli.cwd))
    headless = cli.file("headless.csv", "name,phone\nAnn Lee,4155552671\n")
    assert "firstName, lastName and company" in cli.error("import", "directory", headless)
    comments = cli.file("comments.csv", "# nothing here\n\n")
    assert "needs a header" in cli.error("import", "directory", comments)
    array = cli.file("people.json", '[{"email": "ann@acme.com"}]\n')
    assert "JSON Lines" in cli.error("import", "directory", array)
    assert cli.rows("SELECT count(*) FROM directory_people") == [(0,)]

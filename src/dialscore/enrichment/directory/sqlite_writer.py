"""Writing the directory to SQLite: upserts a batch at a time, an import into an empty directory
appended without indexes (built at its end, its records given again settled there), and the
company tables."""

from __future__ import annotations

import json
import os
import sqlite3
from array import array
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from itertools import groupby, pairwise
from operator import itemgetter
from zlib import crc32

from sqlalchemy import Table

from dialscore.enrichment.directory.columns import COLUMNS, TABLE, VALUE_COLUMNS
from dialscore.enrichment.directory.companies import (
    COMPANY_DOMAINS_SQL,
    COMPANY_PAGES_SQL,
    COMPANY_TABLES_SQL,
    CompanyCounts,
    CompanyTableRows,
)
from dialscore.enrichment.directory.rows import Row
from dialscore.kit.bulkload import sqlite_transaction

ID_INDEX = "ux_directory_people_id"
_EMAIL_KEY_AT = COLUMNS.index("email_key")


def _sqlite_timestamp(now: datetime) -> str:
    # SQLAlchemy's layout of a naive UTC datetime on SQLite.
    return now.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


def _email_order(row: Row) -> str:
    return row[_EMAIL_KEY_AT] or ""


class SqliteWriter:
    """Upserts batches of rows with distinct ids, counting new, changed and unchanged ones;
    the records it adds or changes take ``now`` as their ``updated_at``. Into an empty
    directory (``deferred``: no indexes until the end), it appends them, and
    ``resolve_repeated_ids`` settles the records given again."""

    def __init__(self, lite: sqlite3.Connection, now: datetime, *, deferred: bool = False) -> None:
        self.lite = lite
        self.deferred = deferred
        self.imported = self.updated = self.unchanged = 0
        # Of a deferred import, the companies of the records that rows given again replaced.
        self.replaced: CompanyCounts = {}
        # Of a deferred import, each batch's first rowid and its ids' checksums.
        self.appended: list[tuple[int, array[int]]] = []
        # Whether most of the last batch was new records.
        self.mostly_new = False
        # The email and LinkedIn indexes are written at random: a roomy cache for them.
        lite.execute("PRAGMA cache_size=-131072")
        changed = (
            "(" + ", ".join(f"{TABLE}.{c}" for c in VALUE_COLUMNS) + ") IS NOT ("
            + ", ".join(f"excluded.{c}" for c in VALUE_COLUMNS) + ")"
        )  # fmt: skip
        # The time is a literal of our own making: nothing to bind for it on every row.
        self.append = (
            f"INSERT INTO {TABLE} ({', '.join(COLUMNS)}, updated_at) "
            f"VALUES ({', '.join('?' for _ in COLUMNS)}, '{_sqlite_timestamp(now)}') "
        )
        # A changed record's columns but the indexed keys: SQLite rewrites an index entry
        # whenever its column is set, even to the same value, which made every change cost
        # three index updates. The keys are set after, where they differ, on the rows a
        # trigger notes (the trigger is this connection's own).
        indexed = lookup_keys()
        plain = [c for c in (*VALUE_COLUMNS, "updated_at") if c not in indexed]
        self.upsert = (
            f"{self.append} ON CONFLICT (id) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in plain)
            + f" WHERE {changed}"
        )
        keys, marks = ", ".join(indexed), ", ".join("?" for _ in indexed)
        self.set_keys = (
            f"UPDATE {TABLE} SET ({keys}) = ({marks}) WHERE id = ? AND ({keys}) IS NOT ({marks})"
        )
        self.keys_of = itemgetter(*(COLUMNS.index(key) for key in indexed))
        if not deferred:
            lite.execute("CREATE TEMP TABLE IF NOT EXISTS directory_changed (row)")
            lite.execute(
                "CREATE TEMP TRIGGER IF NOT EXISTS directory_changed AFTER UPDATE OF "
                f"{', '.join(plain)} ON main.{TABLE} "
                "BEGIN INSERT INTO directory_changed VALUES (new.rowid); END"
            )

    def write(self, rows: list[Row]) -> None:
        lite = self.lite
        if self.mostly_new:
            # New records go into the email index in its order (300 000 new people into a
            # directory of a million: 15.8-16.0 s against 16.5-16.8). Known ones are read,
            # and written when changed, where they are stored, in file order (a million
            # again: 17.6-18.3 s against 19.3-19.7 in email order).
            rows.sort(key=_email_order)
        with sqlite_transaction(lite):
            # A new row takes a rowid above the largest (we hold the write lock), while an
            # updated one keeps its own: the rows above the old largest are the new.
            (top,) = lite.execute(f"SELECT coalesce(max(rowid), 0) FROM {TABLE}").fetchone()
            if self.deferred:
                self._append(rows, top)
                added, updated = len(rows), 0
            else:
                changed = lite.executemany(self.upsert, rows).rowcount
                (added,) = lite.execute(
                    f"SELECT count(*) FROM {TABLE} WHERE rowid > ?", (top,)
                ).fetchone()
                updated = changed - added
                if updated:
                    self._set_keys(rows)
        self.imported += added
        self.updated += updated
        self.unchanged += len(rows) - added - updated
        self.mostly_new = not self.deferred and 2 * added > len(rows)

    def _set_keys(self, rows: list[Row]) -> None:
        """Sets the indexed keys of the records the upsert changed, where they differ."""
        changed = self.lite.execute(
            f"SELECT id FROM {TABLE} WHERE rowid IN (SELECT row FROM directory_changed)"
        ).fetchall()
        self.lite.execute("DELETE FROM directory_changed")
        by_id = {row[0]: row for row in rows}
        params = []
        for (record_id,) in changed:
            keys = self.keys_of(by_id[record_id])
            params.append((*keys, record_id, *keys))
        self.lite.executemany(self.set_keys, params)

    def _append(self, rows: list[Row], top: int) -> None:
        """Appends rows to a directory without indexes: they take the rowids after ``top``,
        in order (this connection holds the write lock)."""
        self.lite.executemany(self.append, rows)
        # A row's id is never None.
        checksums = [crc32(row[0].encode()) for row in rows]  # type: ignore[union-attr]
        self.appended.append((top + 1, array("I", checksums)))


def on_disk(lite: sqlite3.Connection) -> bool:
    """Whether the database is a file that other processes can open too."""
    return bool(lite.execute("PRAGMA database_list").fetchone()[2])


# -- indexes ----------------------------------------------------------------------------------


def _table() -> Table:
    """``directory_people`` as the model declares it."""
    from dialscore.models import DirectoryPerson

    table = DirectoryPerson.__table__
    assert isinstance(table, Table)
    return table


def _indexes() -> list[tuple[str, str]]:
    """(name, ``CREATE INDEX IF NOT EXISTS``) of each of ``directory_people``'s indexes (the
    ids' unique one and the lookup ones), as the model declares them, for SQLite."""
    from sqlalchemy.dialects import sqlite
    from sqlalchemy.schema import CreateIndex

    dialect = sqlite.dialect()
    return [
        (str(index.name), str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))
        for index in sorted(_table().indexes, key=lambda index: str(index.name))
    ]


@cache
def lookup_keys() -> tuple[str, ...]:
    """The columns the lookup indexes hold, in the table's order of them (COLUMNS)."""
    indexed = {
        column.name for index in _table().indexes if not index.unique for column in index.columns
    }
    return tuple(name for name in COLUMNS if name in indexed)


# Of the rows of each id, all but the last one, by rowid.
_EARLIER_ROWS = (
    f"SELECT rowid FROM (SELECT rowid, row_number() OVER (PARTITION BY id ORDER BY rowid DESC) "
    f"AS later FROM {TABLE}) AS versions WHERE later > 1"
)


def _create_index(lite: sqlite3.Connection, name: str, create: str) -> None:
    """Creates an index; the ids' unique one after removing, of the rows an import that
    ended before settling them left with one id, all but the last."""
    if name != ID_INDEX:
        lite.execute(create)
        return
    try:
        lite.execute(create)
    except sqlite3.IntegrityError:
        lite.execute(f"DELETE FROM {TABLE} WHERE rowid IN ({_EARLIER_ROWS})")
        lite.execute(create)


@contextmanager
def indexes_deferred(lite: sqlite3.Connection) -> Iterator[bool]:
    """Drops the indexes of an empty directory and builds them when the import ends, however
    it ends: built once after the rows, they cost 3-4 µs a row, kept up to date row by row
    5-7 (the ids' one more: its keys come at random). Builds any an earlier import stopped
    before building. Yields whether it dropped them."""
    with sqlite_transaction(lite):
        (empty,) = lite.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {TABLE})").fetchone()
        for name, create in _indexes():
            if empty:
                lite.execute(f'DROP INDEX IF EXISTS "{name}"')
            else:
                _create_index(lite, name, create)
    try:
        yield bool(empty)
    finally:
        if empty:
            # Sorted in runs of a few MiB, by as many threads as there are cores (up to
            # four): on two cores, a million rows' indexes took 4.0-4.5 s against 6.4-7.7
            # in one thread with a large cache.
            lite.execute(f"PRAGMA threads = {min(4, os.cpu_count() or 1)}")
            lite.execute("PRAGMA cache_size = -4096")
            with sqlite_transaction(lite):
                for name, create in _indexes():
                    _create_index(lite, name, create)


# -- records given again in an import into an empty directory ---------------------------------


class RepeatedIds:
    """The ids an import into an empty directory appended, by their checksums, as its
    batches are written: which rows may give a record again."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, array[int]]] = []
        self.seen: set[int] = set()
        self.repeated: set[int] = set()

    def add(self, batches: list[tuple[int, array[int]]]) -> None:
        """Adds batches of (first rowid, ids' checksums)."""
        for first, checksums in batches:
            self.batches.append((first, checksums))
            fresh = set(checksums)
            if len(fresh) < len(checksums):
                self.repeated.update(c for c, rows in Counter(checksums).items() if rows > 1)
            self.repeated |= fresh & self.seen
            self.seen |= fresh

    @property
    def rows(self) -> int:
        """How many rows were appended."""
        return sum(len(checksums) for _, checksums in self.batches)

    def rowids(self) -> list[int]:
        """The rowids of the rows whose ids' checksums came more than once."""
        if not self.repeated:
            return []
        repeated = self.repeated
        return [
            first + at
            for first, checksums in self.batches
            for at, checksum in enumerate(checksums)
            if checksum in repeated
        ]


def resolve_repeated_ids(writer: SqliteWriter, rowids: list[int]) -> None:
    """Of the records an import into an empty directory appended more than once (a record
    given again later in the file), keeps the last row, counts each later one as an update
    of the one before it (unchanged when the same), and notes the companies of the rows it
    removes. ``rowids``: the rows whose ids may have come more than once."""
    if not rowids:
        return
    lite = writer.lite
    earlier: list[int] = []
    with sqlite_transaction(lite):
        found = lite.execute(
            f"SELECT rowid, id, {', '.join(VALUE_COLUMNS)} FROM {TABLE} "
            "WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY id, rowid",
            (json.dumps(rowids),),
        ).fetchall()
        for _, versions in groupby(found, key=itemgetter(1)):
            for before, after in pairwise(versions):
                earlier.append(before[0])
                writer.imported -= 1
                if before[2:] == after[2:]:
                    writer.unchanged += 1
                else:
                    writer.updated += 1
                company = tuple(before[-3:])
                writer.replaced[company] = writer.replaced.get(company, 0) + 1
        lite.execute(
            f"DELETE FROM {TABLE} WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(earlier),),
        )


def write_company_tables(
    lite: sqlite3.Connection, parsed: Future[CompanyTableRows] | None, appended: int
) -> None:
    """Makes the company tables: from the rows worked out from the companies counted as the
    file was parsed (``parsed``) when the directory holds those rows alone (an import into
    an empty one, which appended ``appended`` rows and no other import wrote to), else by
    counting the table."""
    with sqlite_transaction(lite):
        # Rowids number the rows appended to a table that was empty from 1; those of records
        # given again are gone, but never the last row.
        (top,) = lite.execute(f"SELECT coalesce(max(rowid), 0) FROM {TABLE}").fetchone()
        if parsed is None or top != appended:
            for statement in COMPANY_TABLES_SQL:
                lite.execute(statement)
            return
        domains, pages = parsed.result()
        lite.execute(COMPANY_DOMAINS_SQL[0])
        lite.executemany(
            "INSERT INTO directory_company_domains (name_key, domain, people) VALUES (?, ?, ?)",
            domains,
        )
        lite.execute(COMPANY_PAGES_SQL[0])
        lite.executemany(
            "INSERT INTO directory_company_pages (page, name_key, domain, people) "
            "VALUES (?, ?, ?, ?)",
            pages,
        )

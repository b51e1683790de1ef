"""Migrations that change a table keep its rows, up and down, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from alembic import command

from dialscore.migrations import alembic_config, upgrade
from tests.conftest import DATABASES
from tests.processes import fresh_postgres_database
from tests.test_imports import rows_of


@pytest.fixture(params=DATABASES)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of its own, not yet migrated."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'migrated.db'}"
        return
    with fresh_postgres_database() as url:
        yield url


def execute(url: str, sql: str) -> None:
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(sql)
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


LOOKUP_INDEXES = ["ix_directory_people_company", "ix_directory_people_email",
                  "ix_directory_people_linkedin"]  # fmt: skip


def named_indexes(url: str) -> list[str]:
    """directory_people's indexes but the primary key's, by name."""
    if url.startswith("sqlite"):
        found = rows_of(url, "PRAGMA index_list(directory_people)")
        return sorted(row[1] for row in found if row[3] == "c")
    found = rows_of(url, "SELECT indexname FROM pg_indexes WHERE tablename = 'directory_people'")
    return sorted(row[0] for row in found if row[0] != "directory_people_pkey")


def primary_key(url: str) -> list[str]:
    if url.startswith("sqlite"):
        return [row[1] for row in rows_of(url, "PRAGMA table_info(directory_people)") if row[5]]
    return [
        row[0]
        for row in rows_of(
            url,
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'directory_people'::regclass "
            "AND i.indisprimary",
        )
    ]


def test_directory_ids_unique_by_an_index_instead_of_the_primary_key(empty_url: str) -> None:
    url = empty_url
    upgrade(url, "0008")
    execute(
        url,
        "INSERT INTO directory_people (id, phones, updated_at, email_key, company_key, "
        "first_initial, last_name_key) VALUES "
        "('b', '[]', '2026-11-01 00:00:00', 'b@acme.com', 'acme', 'b', 'lee'), "
        "('a', '[]', '2026-11-01 00:00:00', 'a@acme.com', 'acme', 'a', 'lee')",
    )
    people = "SELECT id, email_key FROM directory_people ORDER BY id"
    before = rows_of(url, people)
    assert primary_key(url) == ["id"]
    assert named_indexes(url) == LOOKUP_INDEXES

    upgrade(url)
    assert rows_of(url, people) == before
    assert primary_key(url) == []
    assert named_indexes(url) == [*LOOKUP_INDEXES, "ux_directory_people_id"]
    with pytest.raises(Exception, match=r"(?i)unique"):
        execute(url, "INSERT INTO directory_people (id, phones, updated_at) VALUES ('a', '[]', "
                "'2026-11-01 00:00:00')")  # fmt: skip

    command.downgrade(alembic_config(url), "0008")
    assert rows_of(url, people) == before
    assert primary_key(url) == ["id"]
    assert named_indexes(url) == LOOKUP_INDEXES
    upgrade(url)
    assert rows_of(url, people) == before

"""Migrations that change a table keep its rows, up and down, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from dialscore.kit.db import sync_url
from dialscore.migrations import alembic_config, upgrade
from dialscore.models import Base
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


def sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return [tuple(r) for r in conn.execute(statement).fetchall()]
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []


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
    sql(
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
        sql(url, "INSERT INTO directory_people (id, phones, updated_at) VALUES ('a', '[]', "
                "'2026-11-01 00:00:00')")  # fmt: skip

    command.downgrade(alembic_config(url), "0008")
    assert rows_of(url, people) == before
    assert primary_key(url) == ["id"]
    assert named_indexes(url) == LOOKUP_INDEXES
    upgrade(url)
    assert rows_of(url, people) == before


# -- 0011: contact-number keys from identity --------------------------------------------------


def _dummy(column: sa.Column[Any]) -> Any:
    """A value of the column's type, for a required column the test does not care about."""
    kind = column.type
    if isinstance(kind, sa.JSON):
        return {}
    if isinstance(kind, sa.Boolean):
        return False
    if isinstance(kind, sa.Integer | sa.Numeric):
        return 0
    if isinstance(kind, sa.DateTime):
        return datetime(2026, 11, 1, tzinfo=UTC)
    return "x"


def insert_rows(conn: sa.Connection, table_name: str, rows: list[dict[str, Any]]) -> None:
    """Rows of the table as the database has it, the required columns not given filled."""
    table = sa.Table(table_name, sa.MetaData(), autoload_with=conn)
    required = [c for c in table.columns if not c.nullable and c.server_default is None]
    full = [{**{c.name: _dummy(c) for c in required if c.name not in row}, **row} for row in rows]
    conn.execute(table.insert(), full)


# A contact's fields, its keys as scoring wrote them before 0011, and as identity gives them.
REKEYED = [
    ({"firstName": "Zoë", "lastName": "O'Brien", "companyAccount": "Widgets & Sons Pty Ltd"},
     ("name:widgets sons", "zoe o brien"), ("name:widgets and sons", "zoe obrien")),
    ({"firstName": "Bob", "website": "https://www.linkedin.com/company/acme-inc"},
     ("domain:linkedin.com", "bob"), ("page:acme-inc", "bob")),
    ({"firstName": "Ann", "lastName": "Lee", "email": "Ann@Acme.com"},
     ("domain:acme.com", "ann lee"), ("domain:acme.com", "ann lee")),
    ({"lastName": "Ørsted", "companyInfo": {"companyAccount": "The Acme Company"}},
     (None, "rsted"), ("name:acme", "orsted")),
]  # fmt: skip
NUMBERS = "SELECT contact_id, number, company_key, person_key FROM contact_numbers"


def test_contact_number_keys_are_recomputed_from_identity(empty_url: str) -> None:
    url = empty_url
    upgrade(url, "0010")
    engine = sa.create_engine(sync_url(url))
    # More contacts than one batch of the migration, so that it pages through them.
    many = [({"firstName": f"P{i}", "companyAccount": "Acme Inc."}, ("name:acme", f"p{i}"),
             ("name:acme", f"p{i}")) for i in range(1005)]  # fmt: skip
    people = REKEYED + many
    ids = [f"c{i:05}" for i in range(len(people))]
    try:
        with engine.begin() as conn:
            insert_rows(conn, "clients", [{"id": "client", "plan_name": "free"}])
            insert_rows(conn, "users", [{"id": "user", "client_id": "client"}])
            insert_rows(conn, "jobs", [{"id": "job", "client_id": "client", "user_id": "user"}])
            insert_rows(
                conn,
                "contacts",
                [
                    {"id": i, "job_id": "job", "client_id": "client", "ordinal": n, "fields": f}
                    for n, (i, (f, _, _)) in enumerate(zip(ids, people, strict=True))
                ],
            )
            rows = [
                {"contact_id": i, "number": number, "client_id": "client",
                 "company_key": old[0], "person_key": old[1]}
                for i, (_, old, _) in zip(ids, people, strict=True)
                for number in ("+14155552671", "+14155552672")
            ]  # fmt: skip
            # The numbers of a contact no longer stored keep their keys.
            rows.append({"contact_id": "gone", "number": "+14155552671", "client_id": "client",
                         "company_key": "name:x", "person_key": "x y"})  # fmt: skip
            insert_rows(conn, "contact_numbers", rows)
    finally:
        engine.dispose()

    def expected(version: int) -> list[tuple[Any, ...]]:
        found = [
            (i, number, *keys[version])
            for i, keys in zip(ids, people, strict=True)
            for number in ("+14155552671", "+14155552672")
        ]
        return sorted([*found, ("gone", "+14155552671", "name:x", "x y")])

    before, after = expected(1), expected(2)
    assert sorted(rows_of(url, NUMBERS)) == before
    upgrade(url, "0011")
    assert sorted(rows_of(url, NUMBERS)) == after
    command.downgrade(alembic_config(url), "0010")
    assert sorted(rows_of(url, NUMBERS)) == before
    upgrade(url, "0011")
    assert sorted(rows_of(url, NUMBERS)) == after


# -- migration 0010 --------------------------------------------------------------------------


def outbox_indexes(url: str) -> list[str]:
    if url.startswith("sqlite"):
        return sorted(r[1] for r in sql(url, "PRAGMA index_list(outbox)") if r[3] == "c")
    found = sql(url, "SELECT indexname FROM pg_indexes WHERE tablename = 'outbox'")
    return sorted(r[0] for r in found if r[0] != "outbox_pkey")


def outbox_columns(url: str) -> list[str]:
    if url.startswith("sqlite"):
        return [r[1] for r in sql(url, "PRAGMA table_info(outbox)")]
    return [
        r[0]
        for r in sql(
            url,
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'outbox' "
            "ORDER BY ordinal_position",
        )
    ]


ROWS = "SELECT id, actor, payload, attempts FROM outbox ORDER BY id"


def test_migration_0010_adds_the_failed_state_and_keeps_the_rows(empty_url: str) -> None:
    url = empty_url
    upgrade(url, "0009")
    sql(
        url,
        "INSERT INTO outbox (actor, payload, available_at, attempts, created_at) VALUES "
        "('process_job', '{\"job_id\": \"a\"}', '2026-11-01 00:00:00', 0, "
        "'2026-11-01 00:00:00'), "
        "('process_job', '{\"job_id\": \"b\"}', '2026-11-01 00:00:00', 12, "
        "'2026-11-01 00:00:00')",
    )
    before = sql(url, ROWS)
    assert outbox_indexes(url) == ["ix_outbox_available"]

    upgrade(url)
    assert sql(url, ROWS) == before
    assert outbox_columns(url)[-2:] == ["last_error", "failed_at"]
    assert outbox_indexes(url) == ["ix_outbox_due"]
    assert sql(url, "SELECT count(*) FROM outbox WHERE failed_at IS NULL") == [(2,)]
    sql(url, "UPDATE outbox SET failed_at = '2026-11-02 00:00:00', last_error = 'boom' "
        "WHERE attempts = 12")  # fmt: skip

    command.downgrade(alembic_config(url), "0009")
    after = sql(url, ROWS)
    # The work set aside goes back to the queue, its attempts reset; the rest is unchanged.
    assert after == [before[0], (*before[1][:3], 0)]
    assert "failed_at" not in outbox_columns(url)
    assert outbox_indexes(url) == ["ix_outbox_available"]
    upgrade(url)
    assert sql(url, ROWS) == after


KEY_ROWS = "SELECT user_id, scope, key, request_hash FROM idempotency_keys ORDER BY id"


def test_migration_0013_scopes_stored_keys_by_their_answers(empty_url: str) -> None:
    url = empty_url
    upgrade(url, "0012")
    answers = {
        "score": '{"data": {}, "credits": {"costPerPhone": 0.05}, "error": null}',
        "enrich": '{"data": {}, "credits": {"costPerContact": 1}, "error": null}',
        "calls": '{"data": {}, "error": null}',
    }
    sql(url, "INSERT INTO idempotency_keys (user_id, key, request_hash, status_code, response, "
        "created_at) VALUES " + ", ".join(
            f"('u', '{key}', 'h', 200, '{answer}', '2026-11-01 00:00:00')"
            for key, answer in answers.items()
        ))  # fmt: skip

    upgrade(url)
    assert sql(url, KEY_ROWS) == [
        ("u", "contacts/score", "score", "h"),
        ("u", "contacts/enrich", "enrich", "h"),
        ("u", "calls", "calls", "h"),
    ]
    # A key is now unique per user and operation.
    sql(url, "INSERT INTO idempotency_keys (user_id, scope, key, request_hash, status_code, "
        "response, created_at) VALUES ('u', 'calls', 'score', 'h2', 200, '{}', "
        "'2026-11-01 00:00:00')")  # fmt: skip

    command.downgrade(alembic_config(url), "0012")
    # One answer per user and key, the first stored.
    assert sql(url, "SELECT key, request_hash FROM idempotency_keys ORDER BY id") == [
        ("score", "h"),
        ("enrich", "h"),
        ("calls", "h"),
    ]
    upgrade(url)
    assert [row[1] for row in sql(url, KEY_ROWS)] == ["contacts/score", "contacts/enrich", "calls"]


def test_migration_0015_keeps_uploaded_files_byte_for_byte(empty_url: str) -> None:
    url = empty_url
    upgrade(url)
    engine = sa.create_engine(sync_url(url))
    # Every byte value, and more than a page or a TOAST chunk holds.
    data = bytes(range(256)) * 4096
    insert = sa.text(
        "INSERT INTO uploads (id, user_id, client_id, filename, state, file, meta, summaries, "
        "created_at, updated_at) VALUES (:id, 'u', 'c', 'leads.csv', :state, :file, "
        "'{\"mapping\": null}', '{}', '2026-11-01 00:00:00', '2026-11-01 00:00:00')"
    )
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO clients (id, name, plan_name, overrides, credits, "
                                 "created_at) VALUES ('c', 'Acme', 'team', '{}', 0, "
                                 "'2026-11-01 00:00:00')"))  # fmt: skip
            conn.execute(sa.text("INSERT INTO users (id, client_id, email, role, created_at) "
                                 "VALUES ('u', 'c', 'a@acme.example', 'admin', "
                                 "'2026-11-01 00:00:00')"))  # fmt: skip
            conn.execute(insert, {"id": "a", "state": "waiting", "file": data})
        with engine.connect() as conn:
            stored = conn.execute(sa.text("SELECT file FROM uploads")).scalar_one()
        assert bytes(stored) == data
        # Only the three states a start goes through.
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(insert, {"id": "b", "state": "lost", "file": None})
    finally:
        engine.dispose()

    command.downgrade(alembic_config(url), "0014")
    assert sql(url, "SELECT count(*) FROM users") == [(1,)]
    with pytest.raises((sqlite3.OperationalError, psycopg.errors.UndefinedTable)):
        sql(url, "SELECT count(*) FROM uploads")
    upgrade(url)
    assert sql(url, "SELECT count(*) FROM uploads") == [(0,)]


# -- 0016: the score report's indexes ---------------------------------------------------------


def indexes_of(url: str, table: str) -> set[str]:
    engine = sa.create_engine(sync_url(url))
    try:
        with engine.connect() as conn:
            return {index["name"] or "" for index in sa.inspect(conn).get_indexes(table)}
    finally:
        engine.dispose()


def test_migration_0016_indexes_scored_contacts_and_calls_by_time(empty_url: str) -> None:
    url = empty_url
    upgrade(url, "0016")
    assert "ix_contacts_user_scored" in indexes_of(url, "contacts")
    assert "ix_call_outcomes_client_called" in indexes_of(url, "call_outcomes")
    command.downgrade(alembic_config(url), "0015")
    assert "ix_contacts_user_scored" not in indexes_of(url, "contacts")
    assert "ix_call_outcomes_client_called" not in indexes_of(url, "call_outcomes")
    assert "ix_call_outcomes_client_number" in indexes_of(url, "call_outcomes")


def test_the_models_are_what_the_migrations_make(empty_url: str) -> None:
    """Tables, columns, types and indexes of the newest migration are the models': a model
    changed without a migration (or the reverse) is found here, on both databases."""
    url = empty_url
    upgrade(url)
    engine = sa.create_engine(sync_url(url))
    try:
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert differences == []


# -- 0018: delivery bodies that may be removed ------------------------------------------------

DELIVERY_ROWS = (
    "SELECT id, kind, user_id, event_type, payload, state, attempts FROM webhook_deliveries "
    "ORDER BY id"
)


def test_migration_0018_lets_a_delivery_lose_its_body_and_keeps_the_rows(empty_url: str) -> None:
    url = empty_url
    upgrade(url, "0017")
    sql(url, "INSERT INTO webhook_deliveries (id, kind, user_id, event_type, payload, "
        "timestamp_ms, state, attempts, available_at, created_at, completed_at) VALUES "
        "('a', 'callback', 'u', 'contact.callback', '{\"firstName\": \"Ann\"}', 1, "
        "'delivered', 1, '2026-11-01 00:00:00', '2026-11-01 00:00:00', "
        "'2026-11-01 00:00:01'), "
        "('b', 'callback', 'u', 'contact.callback', '{\"firstName\": \"Bo\"}', 1, "
        "'pending', 0, '2026-11-01 00:00:00', '2026-11-01 00:00:00', NULL)")  # fmt: skip
    before = sql(url, DELIVERY_ROWS)

    upgrade(url)
    assert sql(url, DELIVERY_ROWS) == before
    assert "ix_webhook_deliveries_body_kept" in indexes_of(url, "webhook_deliveries")
    sql(url, "UPDATE webhook_deliveries SET payload = NULL, body_removed_at = "
        "'2026-12-01 00:00:01', body_removed_reason = 'retention' WHERE id = 'a'")  # fmt: skip
    assert sql(url, "SELECT id FROM webhook_deliveries WHERE payload IS NULL") == [("a",)]

    command.downgrade(alembic_config(url), "0017")
    # The body removed does not come back: an empty payload holds its place.
    after = sql(url, DELIVERY_ROWS)
    assert after[1] == before[1]
    assert after[0][:4] == before[0][:4] and after[0][5:] == before[0][5:]
    assert after[0][4] in ("{}", {})
    assert "ix_webhook_deliveries_body_kept" not in indexes_of(url, "webhook_deliveries")
    upgrade(url)
    assert sql(url, DELIVERY_ROWS) == after


# -- 0019: a subscription's own delivery rate --------------------------------------------------


def subscription_columns(url: str) -> set[str]:
    if url.startswith("sqlite"):
        return {row[1] for row in sql(url, "PRAGMA table_info(webhook_subscriptions)")}
    found = sql(
        url,
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'webhook_subscriptions'",
    )
    return {row[0] for row in found}


def test_migration_0019_adds_the_subscription_rate_and_takes_it_away(empty_url: str) -> None:
    url = empty_url
    upgrade(url, "0018")
    assert "rate_limit" not in subscription_columns(url)
    # SQLite copies the table (batch mode): its rows must come along. PostgreSQL adds the
    # column in place (and would need a client and a user for a row).
    rows = "SELECT id, name, url, status FROM webhook_subscriptions ORDER BY id"
    if url.startswith("sqlite"):
        sql(url, "INSERT INTO webhook_subscriptions (id, client_id, user_id, name, url, "
            "event_types, status, secret_ciphertext, created_at, updated_at) VALUES "
            "('s', 'c', 'u', 'CRM', 'https://hooks.example/in', '[\"job.completed\"]', "
            "'active', 'sealed', '2026-11-01 00:00:00', '2026-11-01 00:00:00')")  # fmt: skip
    before = sql(url, rows)
    upgrade(url, "0019")
    assert "rate_limit" in subscription_columns(url)
    assert sql(url, rows) == before
    assert sql(url, "SELECT rate_limit FROM webhook_subscriptions") == [(None,)] * len(before)
    command.downgrade(alembic_config(url), "0018")
    assert "rate_limit" not in subscription_columns(url)
    assert "secret_rotated_at" in subscription_columns(url)
    assert sql(url, rows) == before


def test_migration_0028_is_not_undone_while_it_keeps_contacts(tmp_path: Path) -> None:
    """Contacts kept as submitted exist nowhere else (P218): the downgrade waits for a worker
    to write their rows. (On SQLite, whose migrations do not enforce the job's foreign key.)"""
    url = f"sqlite:///{tmp_path / 'kept.db'}"
    upgrade(url)
    sql(url, "INSERT INTO contact_intake (job_id, first_ordinal, contacts) VALUES ('j', 1, '[]')")
    with pytest.raises(RuntimeError, match="not written as contact rows yet"):
        command.downgrade(alembic_config(url), "0027")
    assert sql(url, "SELECT job_id FROM contact_intake") == [("j",)]
    sql(url, "DELETE FROM contact_intake")
    command.downgrade(alembic_config(url), "0027")
    assert sql(url, "SELECT name FROM sqlite_master WHERE name = 'contact_intake'") == []

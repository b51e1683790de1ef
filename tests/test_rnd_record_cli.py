"""``dialscore admin rnd-queries`` (P195), run as a real command on the embedded SQLite default
and on a PostgreSQL database migrated with ``dialscore migrate``: a client's record of Reassigned
Numbers Database queries as one JSON object or as CSV, and what it says of a bad client or
``--since``."""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from tests.processes import (
    DATABASES,
    base_env,
    cli_error,
    cli_json,
    fresh_postgres_database,
    run_cli,
)
from tests.test_reassigned_numbers import KEPT, NO_DATA, REASSIGNED
from tests.test_rnd_record import insert, row
from tests.test_scoring_report import stamp


@dataclass(frozen=True)
class Operator:
    """The ``dialscore`` command on one data directory and database, and that database."""

    env: dict[str, str]
    cwd: Path
    url: str

    def ok(self, *args: str) -> dict[str, Any]:
        return cli_json(list(args), env=self.env, cwd=self.cwd)

    def error(self, *args: str) -> str:
        return cli_error(list(args), env=self.env, cwd=self.cwd)

    def insert(self, rows: list[dict[str, Any]]) -> None:
        async def go() -> None:
            db = Database(self.url)
            try:
                await insert(db, rows)
            finally:
                await db.dispose()

        asyncio.run(go())


@pytest.fixture(params=DATABASES)
def operator(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Operator]:
    """SQLite: nothing prepared (the command migrates the embedded database itself).
    PostgreSQL: a fresh database brought up to date with ``dialscore migrate``."""
    data_dir = tmp_path / "var"
    if request.param == "sqlite":
        yield Operator(base_env(data_dir), tmp_path, f"sqlite:///{data_dir / 'dialscore.db'}")
        return
    with fresh_postgres_database() as url:
        env = base_env(data_dir, DATABASE_URL=url)
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        yield Operator(env, tmp_path, url)


def cli_row(client_id: str, number: str, asked_at: datetime, answer: str) -> dict[str, Any]:
    return {**row(client_id, number, 0, answer), "asked_at": asked_at}


def test_the_operator_prints_a_clients_record(operator: Operator) -> None:
    client_id = operator.ok("admin", "create-client", "--name", "Acme")["clientId"]
    other_id = operator.ok("admin", "create-client", "--name", "Other")["clientId"]
    now = utcnow().replace(microsecond=0)
    old, recent = now - timedelta(days=200), now - timedelta(days=1)
    operator.insert(
        [
            cli_row(client_id, KEPT, recent, "no"),
            cli_row(client_id, REASSIGNED, old, "yes"),
            cli_row(other_id, REASSIGNED, recent, "no_data"),
            cli_row(client_id, NO_DATA, recent + timedelta(seconds=1), "none"),
        ]
    )
    shown = operator.ok("admin", "rnd-queries", "--client", client_id)
    # 90 days back by default, in the order asked.
    assert set(shown) == {"clientId", "since", "count", "queries"}
    assert (shown["clientId"], shown["count"]) == (client_id, 2)
    assert [(q["number"], q["answer"]) for q in shown["queries"]] == [
        (KEPT, "no"),
        (NO_DATA, "none"),
    ]
    assert shown["queries"][0] == {
        "number": KEPT,
        "consentDate": "2025-03-01",
        "askedAt": stamp(recent),
        "answer": "no",
        "jobId": "3c0f6a54-8a4e-4d8e-9a53-2f0f3f1f9b21",
        "contactId": "8eae9198-9ae2-45c0-81f5-fef55bebecb4",
    }
    since = (now - timedelta(days=365)).date().isoformat()
    everything = operator.ok("admin", "rnd-queries", "--client", client_id, "--since", since)
    assert everything["since"] == f"{since}T00:00:00Z"
    assert [q["number"] for q in everything["queries"]] == [REASSIGNED, KEPT, NO_DATA]

    printed = run_cli(
        ["admin", "rnd-queries", "--client", client_id, "--since", since, "--csv"],
        env=operator.env,
        cwd=operator.cwd,
    )
    assert printed.returncode == 0, printed.describe()
    lines = printed.stdout.splitlines()
    assert lines[0] == "number,consentDate,askedAt,answer,jobId,contactId"
    assert list(csv.DictReader(io.StringIO(printed.stdout))) == [
        {k: "" if v is None else v for k, v in q.items()} for q in everything["queries"]
    ]

    empty = run_cli(
        ["admin", "rnd-queries", "--client", other_id, "--since", "2099-01-01", "--csv"],
        env=operator.env,
        cwd=operator.cwd,
    )
    assert (empty.returncode, empty.stdout) == (
        0,
        "number,consentDate,askedAt,answer,jobId,contactId\n",
    )


def test_the_operator_is_told_of_a_bad_client_or_since(operator: Operator) -> None:
    client_id = operator.ok("admin", "create-client", "--name", "Acme")["clientId"]
    missing = "00000000-0000-4000-8000-000000000000"
    assert operator.error("admin", "rnd-queries", "--client", missing) == (
        f"no client with id {missing}"
    )
    told = operator.error("admin", "rnd-queries", "--client", client_id, "--since", "yesterday")
    assert told.startswith("--since must be an ISO 8601 date")

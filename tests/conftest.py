"""Fixtures: every API test runs against SQLite and PostgreSQL, with the real worker."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, sync_playwright

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit.db import Database
from dialscore.migrations import upgrade
from tests.support import ROOMY_TIERS, Tenant, make_tenant, plan_tiers, settle, state_of

if TYPE_CHECKING:
    from tests.browser import Team

PG_ADMIN_URL = os.environ.get(
    "DIALSCORE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
DATABASES = os.environ.get("DIALSCORE_TEST_DATABASES", "sqlite,postgresql").split(",")
SECRET = "test-secret-key-that-is-long-enough-for-hs256"
KEPT_TABLES = {"plans", "alembic_version"}


def _pg_url(database: str) -> str:
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    return f"{base}/{database}"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    name = f"dialscore_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = _pg_url(name)
    upgrade(url)
    yield url
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


def _empty_postgres(url: str) -> None:
    """Deletes the rows a test wrote (in one transaction, foreign keys unchecked while it
    runs) and restarts the sequences it drew from: TRUNCATE takes some milliseconds a table,
    a quarter of a second for all of them, where a test writes a few rows to a few."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
            if row[0] not in KEPT_TABLES
        ]
        written = " UNION ALL ".join(
            f"SELECT '{name}' WHERE EXISTS (SELECT FROM \"{name}\")" for name in tables
        )
        filled = [row[0] for row in conn.execute(written).fetchall()] if tables else []
        drawn = conn.execute(
            "SELECT sequence.relname, owner.relname FROM pg_class sequence"
            " JOIN pg_depend ON pg_depend.objid = sequence.oid"
            " AND pg_depend.deptype IN ('a', 'i')"
            " JOIN pg_class owner ON owner.oid = pg_depend.refobjid"
            " JOIN pg_sequences ON pg_sequences.sequencename = sequence.relname"
            " WHERE sequence.relkind = 'S' AND pg_sequences.last_value IS NOT NULL"
        ).fetchall()
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")
            for name in filled:
                conn.execute(f'DELETE FROM "{name}"')
            for sequence, owner in drawn:
                if owner not in KEPT_TABLES:
                    conn.execute(f'ALTER SEQUENCE "{sequence}" RESTART')


@pytest.fixture(params=DATABASES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        path = tmp_path / "dialscore.db"
        template: Path = request.getfixturevalue("sqlite_template")
        shutil.copyfile(template, path)
        yield f"sqlite:///{path}"
    else:
        url: str = request.getfixturevalue("postgres_url")
        _empty_postgres(url)
        yield url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "var",
        secret_key=SECRET,
        redis_url=None,
        relay_poll_seconds=0.05,
        # The worker's threads stop within one poll: 15-25 ms each test's end, not 60-100.
        worker_poll_ms=10,
        worker_threads=2,
        _env_file=None,  # type: ignore[call-arg]
    )


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings, run_worker=True)
    # Unauthenticated requests count per address with the free plan's tiers (D25), and every
    # test calls from one address: roomy tiers unless a test sets its own.
    async with (
        application.router.lifespan_context(application),
        plan_tiers(state_of(application).db, "free", ROOMY_TIERS),
    ):
        yield application
        # Every test's work must finish: settle() fails when the outbox does not empty.
        await settle(application)


@pytest.fixture
def db(app: FastAPI) -> Database:
    return state_of(app).db


@pytest.fixture
async def api(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.fixture
async def tenant(db: Database) -> Tenant:
    return await make_tenant(db, SECRET)


# -- the web app in a real browser ------------------------------------------------------------


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    from tests.browser import start_team  # it needs this module's SECRET

    live, team = start_team(tmp_path_factory.mktemp("web"))
    with live:
        yield team


@pytest.fixture(scope="module")
def chromium(team: Team) -> Iterator[Browser]:
    # Started after the team's service, and only for the modules that use it.
    from tests.browser import CHROMIUM

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


@pytest.fixture
def page(team: Team, chromium: Browser) -> Iterator[Page]:
    """A page of a new browser context (no cookies), on the team's service."""
    context = chromium.new_context(base_url=team.base_url)
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()

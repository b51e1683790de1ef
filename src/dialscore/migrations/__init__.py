"""Alembic migrations, run programmatically against SQLite or PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from dialscore.kit.db import sync_url

HERE = Path(__file__).parent


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.set_main_option("sqlalchemy.url", sync_url(url).replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    if url.startswith("sqlite"):
        _ensure_sqlite_dir(url)
    command.upgrade(alembic_config(url), revision)


def pending_revisions(url: str) -> bool:
    """True when the database is not at the newest revision."""
    script = ScriptDirectory.from_config(alembic_config(url))
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as conn:
            current = set(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()
    return current != set(script.get_heads())


def _ensure_sqlite_dir(url: str) -> None:
    from sqlalchemy.engine import make_url

    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)

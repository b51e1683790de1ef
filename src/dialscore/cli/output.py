"""How commands report: one JSON object on stdout, errors as {error} on stderr.

The command modules import what a command needs when it runs, inside the command:
``dialscore --help`` and a mistyped option answer at once, without loading the web
framework, the database layer or the password hasher (tests/test_cli_imports.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from dialscore.config import Settings
    from dialscore.kit.db import Database

T = TypeVar("T")

DATA_DIR_ENV = "DIALSCORE_DATA_DIR"


def emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")


def fail(message: str, code: int = 1) -> None:
    sys.stderr.write(json.dumps({"error": message}) + "\n")
    raise typer.Exit(code)


def run_with_db(action: Callable[[Database, Settings], Awaitable[T]]) -> T:
    """Runs ``action`` against the configured database, migrated first when embedded."""
    import asyncio

    from dialscore.kit.db import Database
    from dialscore.kit.errors import ApiError

    settings = service_settings()
    prepare_database(settings)

    async def go() -> T:
        db = Database(settings.resolved_database_url)
        try:
            return await action(db, settings)
        finally:
            await db.dispose()

    try:
        return asyncio.run(go())
    except ApiError as exc:
        fail(exc.message)
        raise  # unreachable: fail() exits


def prepare_database(settings: Settings) -> None:
    """Migrates the embedded database; on PostgreSQL, insists that ``migrate`` was run."""
    from dialscore.migrations import pending_revisions, upgrade

    url = settings.resolved_database_url
    if settings.is_sqlite:
        upgrade(url)
    elif pending_revisions(url):
        fail("the database schema is not up to date: run 'dialscore migrate' first")


def service_settings() -> Settings:
    """The settings of a command that works on an existing service's data (``admin``,
    ``import``): says on a terminal which database it uses, and refuses to make a new data
    directory that nobody named (P87)."""
    from sqlalchemy.engine import make_url

    from dialscore.config import get_settings

    settings = get_settings()
    data_dir = settings.data_dir.resolve()
    needs_dir = settings.is_sqlite or not settings.secret_key
    named = "data_dir" in settings.model_fields_set
    missing = (data_dir / "dialscore.db") if settings.is_sqlite else (data_dir / "secret_key")
    if needs_dir and not named and not missing.exists():
        what = "database" if settings.is_sqlite else "secret key"
        fail(
            f"no dialscore {what} in {data_dir} (the default ./var of the current directory): "
            "one made here would not be the running service's, and API keys made with it "
            "would answer 401 there. Run the command in the service's directory, or name its "
            f"data directory: 'dialscore --data-dir PATH {_command()}' or {DATA_DIR_ENV}=PATH. "
            "'dialscore serve' makes the data directory of a new service."
        )
    if sys.stderr.isatty():
        url = make_url(settings.resolved_database_url).render_as_string(hide_password=True)
        sys.stderr.write(f"dialscore: database {url} (data directory {data_dir})\n")
    return settings


def _command() -> str:
    """The command's group, as typed (``admin …``)."""
    return f"{sys.argv[1]} ..." if len(sys.argv) > 1 else "..."

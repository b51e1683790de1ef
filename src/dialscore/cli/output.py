"""How commands report: one JSON object on stdout, errors as {error} on stderr."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import typer

from dialscore.config import Settings, get_settings
from dialscore.kit.db import Database
from dialscore.kit.errors import ApiError

T = TypeVar("T")


def emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")


def fail(message: str, code: int = 1) -> None:
    sys.stderr.write(json.dumps({"error": message}) + "\n")
    raise typer.Exit(code)


def run_with_db(action: Callable[[Database, Settings], Awaitable[T]]) -> T:
    """Runs ``action`` against the configured database, migrated first when embedded."""
    settings = get_settings()
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

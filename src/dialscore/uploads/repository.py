"""Every query of uploaded contact lists."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.db import changed_rows
from dialscore.models import Upload
from dialscore.uploads.schemas import STARTED, STARTING, WAITING


async def add(session: AsyncSession, upload: Upload) -> None:
    session.add(upload)
    await session.flush()


async def owned(session: AsyncSession, *, upload_id: str, user_id: str) -> Upload | None:
    """The user's upload of that id (its file and rejected rows left unloaded)."""
    found = await session.scalars(
        select(Upload).where(Upload.id == upload_id, Upload.user_id == user_id)
    )
    return found.first()


async def file_of(session: AsyncSession, upload_id: str) -> bytes | None:
    found: bytes | None = await session.scalar(select(Upload.file).where(Upload.id == upload_id))
    return found


async def rejected_csv_of(session: AsyncSession, upload_id: str) -> str | None:
    found: str | None = await session.scalar(
        select(Upload.rejected_csv).where(Upload.id == upload_id)
    )
    return found


async def set_mapping(
    session: AsyncSession, *, upload_id: str, mapping: list[str], now: datetime
) -> bool:
    """Keeps a waiting upload's mapping; whether it was still waiting. Summaries worked out
    for another mapping go: none would be read again."""
    result = await session.execute(
        update(Upload)
        .where(Upload.id == upload_id, Upload.state == WAITING)
        .values(meta={"mapping": mapping}, summaries={}, updated_at=now)
    )
    return changed_rows(result) == 1


async def set_summaries(
    session: AsyncSession, *, upload_id: str, summaries: dict[str, Any]
) -> None:
    await session.execute(
        update(Upload)
        .where(Upload.id == upload_id, Upload.state == WAITING)
        .values(summaries=summaries)
    )


async def claim(session: AsyncSession, *, upload_id: str, now: datetime) -> bool:
    """Moves a waiting upload to starting; whether this call did. Of concurrent calls, one
    changes the row: the others wait on its lock (or the database's write lock), then find it
    no longer waiting."""
    result = await session.execute(
        update(Upload)
        .where(Upload.id == upload_id, Upload.state == WAITING, Upload.file.is_not(None))
        .values(state=STARTING, updated_at=now)
    )
    return changed_rows(result) == 1


async def unclaim(session: AsyncSession, *, upload_id: str, now: datetime) -> None:
    await session.execute(
        update(Upload)
        .where(Upload.id == upload_id, Upload.state == STARTING)
        .values(state=WAITING, updated_at=now)
    )


async def finish(
    session: AsyncSession,
    *,
    upload_id: str,
    meta: dict[str, Any],
    rejected_csv: str | None,
    now: datetime,
) -> bool:
    """Marks a starting upload started, its file dropped; whether it was starting."""
    result = await session.execute(
        update(Upload)
        .where(Upload.id == upload_id, Upload.state == STARTING)
        .values(
            state=STARTED,
            file=None,
            meta=meta,
            rejected_csv=rejected_csv,
            summaries={},
            updated_at=now,
        )
    )
    return changed_rows(result) == 1


async def delete_unchanged_since(session: AsyncSession, before: datetime) -> int:
    """Deletes the uploads last changed at or before ``before``; how many."""
    result = await session.execute(delete(Upload).where(Upload.updated_at <= before))
    return changed_rows(result)


async def delete_of_job(session: AsyncSession, *, user_id: str, job_id: str) -> int:
    """Deletes the user's uploads that started the job; how many."""
    result = await session.execute(
        delete(Upload).where(Upload.user_id == user_id, Upload.meta["job_id"].as_string() == job_id)
    )
    return changed_rows(result)

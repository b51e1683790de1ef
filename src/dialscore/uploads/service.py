"""The use cases of uploaded contact lists: keep one, read it back for its owner, keep the
choices made at each step, claim its start once whatever the instance, and forget it.

Every step reads the database, so a reload, or the next request served by another instance,
finds the upload as the last step left it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.clock import canonical_uuid, new_id
from dialscore.kit.errors import Conflict
from dialscore.models import Upload as UploadRow
from dialscore.uploads import repository as repo
from dialscore.uploads.schemas import KEEP, STARTED, WAITING, State, Upload


def _upload(row: UploadRow) -> Upload:
    # The table's check constraint holds it to one of the three.
    state = cast(State, row.state)
    return Upload(
        id=row.id,
        filename=row.filename,
        state=state,
        meta={**row.meta, "filename": row.filename, "started": state == STARTED},
        summaries=dict(row.summaries),
        updated_at=row.updated_at,
    )


async def create(
    session: AsyncSession,
    *,
    user_id: str,
    client_id: str,
    filename: str,
    data: bytes,
    now: datetime,
) -> Upload:
    """Keeps a file just sent, waiting for its mapping, in the caller's transaction."""
    row = UploadRow(
        id=new_id(),
        user_id=user_id,
        client_id=client_id,
        filename=filename,
        state=WAITING,
        file=data,
        meta={"mapping": None},
        rejected_csv=None,
        summaries={},
        created_at=now,
        updated_at=now,
    )
    await repo.add(session, row)
    return _upload(row)


async def own(
    session: AsyncSession, *, user_id: str, upload_id: str, now: datetime
) -> Upload | None:
    """The user's own upload; None for anyone else's, for one forgotten or due to be, and for
    an id no upload could have."""
    canonical = canonical_uuid(upload_id)
    if canonical != upload_id:
        return None
    row = await repo.owned(session, upload_id=upload_id, user_id=user_id)
    if row is None or row.updated_at <= now - KEEP:
        return None
    return _upload(row)


async def file_of(session: AsyncSession, upload: Upload) -> bytes | None:
    """The file as it was sent; None once its job started."""
    return await repo.file_of(session, upload.id)


async def rejected_csv(session: AsyncSession, upload: Upload) -> str | None:
    """The rows starting left out, as a CSV; None when it left none out."""
    return await repo.rejected_csv_of(session, upload.id)


async def choose_mapping(
    session: AsyncSession, upload: Upload, mapping: list[str], *, now: datetime
) -> bool:
    """Keeps the mapping of a waiting upload; False when it is waiting no more."""
    return await repo.set_mapping(session, upload_id=upload.id, mapping=mapping, now=now)


async def keep_summary(
    session: AsyncSession, upload: Upload, key: str, summary: dict[str, Any]
) -> None:
    """Keeps what the action page worked out for ``key``. Two pages keeping one each at once
    may keep only one of them: the other is worked out again when next asked for."""
    summaries = {**upload.summaries, key: summary}
    await repo.set_summaries(session, upload_id=upload.id, summaries=summaries)


async def claim_start(session: AsyncSession, upload: Upload, *, now: datetime) -> bytes | None:
    """Claims the start of a waiting upload: its file when this call claimed it, None when
    another did first or it is no longer waiting. The caller commits the claim at once, in
    a transaction of its own, before it makes the job; until ``finish_start`` or
    ``give_back``, no other request can claim it."""
    if not await repo.claim(session, upload_id=upload.id, now=now):
        return None
    return await repo.file_of(session, upload.id)


async def give_back(session: AsyncSession, upload: Upload, *, now: datetime) -> None:
    """Puts back a claimed upload whose start failed, to be started again."""
    await repo.unclaim(session, upload_id=upload.id, now=now)


async def finish_start(
    session: AsyncSession,
    upload: Upload,
    *,
    started: dict[str, Any],
    rejected_csv: str | None,
    now: datetime,
) -> None:
    """Marks a claimed upload started in the transaction that makes its job, with what the
    page that says so shows (``started``: the job's id and counts), and drops its file."""
    meta = {"mapping": upload.meta.get("mapping"), **started}
    if not await repo.finish(
        session, upload_id=upload.id, meta=meta, rejected_csv=rejected_csv, now=now
    ):
        raise Conflict("the upload was not being started")


async def forget_expired(session: AsyncSession, *, now: datetime) -> int:
    """Deletes the uploads unchanged for a day; how many."""
    return await repo.delete_unchanged_since(session, now - KEEP)


async def forget_of_job(session: AsyncSession, *, user_id: str, job_id: str) -> int:
    """Deletes the upload a job was started from, if it is still kept (P132); how many."""
    return await repo.delete_of_job(session, user_id=user_id, job_id=job_id)

"""Every query of the submissions domain: stored idempotent responses."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.models import IdempotencyRecord


async def find_idempotent(
    session: AsyncSession, *, user_id: str, key: str
) -> IdempotencyRecord | None:
    return (
        await session.scalars(
            select(IdempotencyRecord).where(
                IdempotencyRecord.user_id == user_id, IdempotencyRecord.key == key
            )
        )
    ).first()


async def drop_idempotent(session: AsyncSession, record_id: int) -> None:
    await session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.id == record_id))


def save_idempotent(
    session: AsyncSession,
    *,
    user_id: str,
    key: str,
    request_hash: str,
    response: dict[str, Any],
    now: datetime,
) -> None:
    session.add(
        IdempotencyRecord(
            user_id=user_id,
            key=key,
            request_hash=request_hash,
            status_code=200,
            response=response,
            created_at=now,
        )
    )

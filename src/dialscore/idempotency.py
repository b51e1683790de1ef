"""Idempotency-Key (D10, P9): a request repeated with the same key by the same user to the same
operation within the time to live gets the first answer back, and nothing is done twice. The
same key sent to another operation is another key (P76)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import Header
from pydantic import AfterValidator
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.db import changed_rows
from dialscore.kit.errors import Conflict
from dialscore.models import IdempotencyRecord

MAX_KEY_LENGTH = 255
# Printable ASCII, not only spaces (P74).
PRINTABLE_KEY = r"^[ -~]*[!-~][ -~]*$"


def _usable_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.strip():
        raise ValueError("must not be blank")
    # P74: header values arrive as Latin-1; a key is compared and stored as ASCII text.
    if not all(" " <= char <= "~" for char in value):
        raise ValueError("must contain only printable ASCII characters")
    return value


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_KEY_LENGTH,
        description="Repeat the same request with the same key within 24 hours to get the "
        "first answer back without anything being done again",
        # A blank key, or one with other than printable ASCII, is refused (below): documented,
        # not checked twice.
        json_schema_extra={"pattern": PRINTABLE_KEY},
    ),
    AfterValidator(_usable_key),
]


def request_hash(body: Any, scope: str) -> str:
    """The fingerprint of a request to one operation (``scope``, its name): a key reused with
    another body is refused (P9)."""
    canonical = json.dumps(
        {"endpoint": scope, "body": body}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    # A body may hold lone surrogates that its records are rejected for (P74): they are
    # hashed as they came, every other string as its UTF-8.
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Once:
    """One user's key for one request to one operation (``scope``), and how long its first
    answer is kept."""

    user_id: str
    scope: str
    key: str
    request_hash: str
    ttl: timedelta


async def replay(session: AsyncSession, once: Once, *, now: datetime) -> dict[str, Any] | None:
    """The stored first answer to this key, if still valid; 409 when the key was used with
    another request. An expired answer is dropped, so the key can be used again."""
    record = (
        await session.scalars(
            select(IdempotencyRecord).where(
                IdempotencyRecord.user_id == once.user_id,
                IdempotencyRecord.scope == once.scope,
                IdempotencyRecord.key == once.key,
            )
        )
    ).first()
    if record is None:
        return None
    if record.created_at <= now - once.ttl:
        await session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.id == record.id))
        await session.flush()
        return None
    if record.request_hash != once.request_hash:
        raise Conflict("this Idempotency-Key was already used with a different request")
    return record.response


async def forget_expired(session: AsyncSession, *, before: datetime) -> int:
    """Deletes the answers stored before ``before`` (past their time to live: ``replay``
    would drop them anyway); how many."""
    result = await session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at <= before)
    )
    return changed_rows(result)


async def answer_once(
    session: AsyncSession,
    once: Once | None,
    *,
    now: datetime,
    answer: Callable[[], Awaitable[dict[str, Any]]],
) -> tuple[dict[str, Any], bool]:
    """Commits the unit of work of a request made with or without a key: the answer and
    whether it replays an earlier one.

    With a key, a stored answer is returned without calling ``answer``; otherwise the new
    answer is stored with the work it describes, in one transaction. Of concurrent requests
    with one key, one commits (the key is unique per user and operation) and the others replay
    it. Only a successful answer is stored: an error raised by ``answer`` stores nothing, so
    the client can fix its cause and retry with the same key (P9)."""
    if once is not None:
        stored = await replay(session, once, now=now)
        if stored is not None:
            return stored, True
    body = await answer()
    if once is None:
        await session.commit()
        return body, False
    session.add(
        IdempotencyRecord(
            user_id=once.user_id,
            scope=once.scope,
            key=once.key,
            request_hash=once.request_hash,
            status_code=200,
            response=body,
            created_at=now,
        )
    )
    try:
        await session.commit()
    except IntegrityError:
        # A concurrent request with the same key committed first: answer as it did.
        await session.rollback()
        stored = await replay(session, once, now=now)
        if stored is None:
            raise
        return stored, True
    return body, False

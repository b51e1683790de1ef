"""Every query of signing in."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.db import changed_rows
from dialscore.models import Client, PasswordLink, Plan, SignInFailure, User, WebSession


async def user_by_email(session: AsyncSession, email: str) -> User | None:
    found = await session.scalars(select(User).where(User.email == email))
    return found.first()


async def session_rows(
    session: AsyncSession, token_hash: str
) -> tuple[WebSession, User, Client, Plan] | None:
    row = (
        await session.execute(
            select(WebSession, User, Client, Plan)
            .join(User, User.id == WebSession.user_id)
            .join(Client, Client.id == User.client_id)
            .join(Plan, Plan.name == Client.plan_name)
            .where(WebSession.token_hash == token_hash)
        )
    ).first()
    return None if row is None else (row[0], row[1], row[2], row[3])


async def recent_failures(session: AsyncSession, key: str, since: datetime) -> list[datetime]:
    """When ``key`` failed since ``since``, oldest first."""
    found = await session.scalars(
        select(SignInFailure.failed_at)
        .where(SignInFailure.key == key, SignInFailure.failed_at >= since)
        .order_by(SignInFailure.failed_at)
    )
    return list(found)


def add_failure(session: AsyncSession, key: str, at: datetime) -> None:
    session.add(SignInFailure(key=key, failed_at=at))


async def forget_failures(session: AsyncSession, key: str, before: datetime | None = None) -> None:
    """Forgets ``key``'s failures (those before ``before`` only, when given)."""
    query = delete(SignInFailure).where(SignInFailure.key == key)
    if before is not None:
        query = query.where(SignInFailure.failed_at < before)
    await session.execute(query)


async def revoke_sessions(session: AsyncSession, user_id: str, now: datetime) -> None:
    await session.execute(
        update(WebSession)
        .where(WebSession.user_id == user_id, WebSession.revoked_at.is_(None))
        .values(revoked_at=now)
    )


async def password_link(session: AsyncSession, token_hash: str) -> PasswordLink | None:
    found = await session.scalars(select(PasswordLink).where(PasswordLink.token_hash == token_hash))
    return found.first()


async def mark_seen(session: AsyncSession, session_id: str, now: datetime) -> None:
    await session.execute(
        update(WebSession).where(WebSession.id == session_id).values(last_seen_at=now)
    )


async def forget_expired(
    session: AsyncSession, *, now: datetime, idle: timedelta, failures_since: datetime
) -> dict[str, int]:
    """Deletes what can no longer be used or counted: sessions revoked, past their lifetime or
    idle for ``idle``; password links used or expired; failed sign-ins before
    ``failures_since``. How many of each."""
    sessions = await session.execute(
        delete(WebSession).where(
            or_(
                WebSession.revoked_at.is_not(None),
                WebSession.expires_at <= now,
                WebSession.last_seen_at <= now - idle,
            )
        )
    )
    links = await session.execute(
        delete(PasswordLink).where(
            or_(PasswordLink.used_at.is_not(None), PasswordLink.expires_at <= now)
        )
    )
    failures = await session.execute(
        delete(SignInFailure).where(SignInFailure.failed_at < failures_since)
    )
    return {
        "sessions": changed_rows(sessions),
        "password_links": changed_rows(links),
        "sign_in_failures": changed_rows(failures),
    }

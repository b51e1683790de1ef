"""Every query of signing in."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

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

"""Every query of the version 1 domain: the users' callback secrets."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.models import User


async def user_exists(session: AsyncSession, user_id: str) -> bool:
    return (await session.scalar(select(User.id).where(User.id == user_id))) is not None


async def sealed_callback_secret(session: AsyncSession, user_id: str) -> str | None:
    return await session.scalar(select(User.callback_secret_ciphertext).where(User.id == user_id))


async def set_callback_secret_if_missing(session: AsyncSession, user_id: str, sealed: str) -> None:
    """Stores ``sealed`` unless the user has a secret already: of concurrent first uses,
    one writes and the others read its secret."""
    await session.execute(
        update(User)
        .where(User.id == user_id, User.callback_secret_ciphertext.is_(None))
        .values(callback_secret_ciphertext=sealed)
    )

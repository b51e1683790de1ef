"""Every query of the rate-limit domain."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.models import Plan


async def plan_tiers(session: AsyncSession, name: str) -> tuple[int, int, int] | None:
    stmt = select(Plan.per_second, Plan.per_minute, Plan.per_day).where(Plan.name == name)
    row = (await session.execute(stmt)).first()
    return None if row is None else (row[0], row[1], row[2])

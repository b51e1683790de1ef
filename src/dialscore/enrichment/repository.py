"""Every query of the enrichment domain: candidates by lookup key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.enrichment.matching import Keys
from dialscore.models import Contact, DirectoryPerson

# A common last name can have many namesakes; the matcher sees at most this many.
MAX_CANDIDATES = 200


async def directory_candidates(session: AsyncSession, keys: Keys) -> Sequence[DirectoryPerson]:
    conditions = []
    if keys.email:
        conditions.append(DirectoryPerson.email_key == keys.email)
    if keys.linkedin:
        conditions.append(DirectoryPerson.linkedin_key == keys.linkedin)
    if keys.last_name:
        conditions.append(DirectoryPerson.last_name_key == keys.last_name)
    if not conditions:
        return []
    rows = await session.scalars(
        select(DirectoryPerson).where(or_(*conditions)).limit(MAX_CANDIDATES)
    )
    return rows.all()


async def history_candidates(
    session: AsyncSession, client_id: str, contact_id: str, keys: Keys
) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """The client's other scored contacts that share the email or the last name."""
    conditions = []
    if keys.email:
        conditions.append(func.lower(Contact.email) == keys.email)
    if keys.last_name:
        conditions.append(Contact.last_name_key == keys.last_name)
    if keys.linkedin:
        conditions.append(Contact.linkedin_url.contains(keys.linkedin))
    if not conditions:
        return []
    rows = await session.execute(
        select(Contact.id, Contact.fields, Contact.phones)
        .where(
            Contact.client_id == client_id,
            Contact.id != contact_id,
            Contact.state == "scored",
            or_(*conditions),
        )
        .order_by(Contact.created_at.desc())
        .limit(MAX_CANDIDATES)
    )
    return [(cid, fields, phones) for cid, fields, phones in rows]

"""A client's keys and users as its administrator manages them (the web app's API keys and
Users pages, the operator's list of users): views, roles, deactivation, the ledger."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import repository as repo
from dialscore.accounts.schemas import ROLES
from dialscore.accounts.service import find_user, get_client, spent_this_month
from dialscore.kit.clock import utcnow
from dialscore.kit.errors import BadRequest, NotFound
from dialscore.kit.pagination import PageRequest
from dialscore.models import ApiKey, CreditLedgerEntry, User

KeyStatus = Literal["active", "revoked", "expired"]


@dataclass(frozen=True)
class KeyView:
    key_id: str
    label: str | None
    owner_email: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    status: KeyStatus
    # A deactivated user's keys answer 401 whatever their own status.
    owner_deactivated: bool
    # P201: None when the key has no monthly credit limit.
    monthly_credit_limit: Decimal | None = None
    spent_this_month: Decimal = Decimal(0)


def key_status(key: ApiKey, now: datetime) -> KeyStatus:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active"


async def list_keys(session: AsyncSession, *, client_id: str, now: datetime) -> list[KeyView]:
    return [
        KeyView(
            key.id,
            key.label,
            owner.email,
            key.created_at,
            key.last_used_at,
            key.expires_at,
            key_status(key, now),
            owner.deactivated_at is not None,
            key.monthly_credit_limit,
            spent_this_month(key, repo.spending_month(now)),
        )
        for key, owner in await repo.client_keys(session, client_id)
    ]


async def client_key(session: AsyncSession, *, client_id: str, key_id: str) -> KeyView:
    """One key of a client; another client's key is not found (D1)."""
    now = utcnow()
    for view in await list_keys(session, client_id=client_id, now=now):
        if view.key_id == key_id:
            return view
    raise NotFound(f"no API key with id {key_id}")


async def list_users(session: AsyncSession, *, client_id: str) -> list[User]:
    """The client's users by email; 404 for a client that does not exist (each has its admin)."""
    users = await repo.client_users(session, client_id)
    if not users:
        await get_client(session, client_id)
    return users


async def client_user(session: AsyncSession, *, client_id: str, user_id: str) -> User:
    """One user of a client; another client's user is not found (D1)."""
    user = await find_user(session, user_id=user_id)
    if user.client_id != client_id:
        raise NotFound(f"no user with id {user_id}")
    return user


async def set_role(
    session: AsyncSession, *, client_id: str, user_id: str, role: str, acting_user_id: str
) -> User:
    if role not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}")
    user = await client_user(session, client_id=client_id, user_id=user_id)
    if user.id == acting_user_id and role != user.role:
        raise BadRequest("you cannot change your own role; ask another administrator")
    user.role = role
    return user


async def deactivate_user(
    session: AsyncSession, *, client_id: str, user_id: str, acting_user_id: str, now: datetime
) -> User:
    """Marks a user deactivated: their keys answer 401 from now on. Ending their web sessions
    is the caller's part (signin.service.deactivate_user does both)."""
    user = await client_user(session, client_id=client_id, user_id=user_id)
    if user.id == acting_user_id:
        raise BadRequest("you cannot deactivate yourself; ask another administrator")
    if user.deactivated_at is None:
        user.deactivated_at = now
    return user


async def reactivate_user(
    session: AsyncSession, *, client_id: str, user_id: str, now: datetime
) -> tuple[User, int]:
    """Undoes a deactivation: the user may sign in again, and their keys that are neither
    revoked nor expired answer again; the user and how many keys that is."""
    user = await client_user(session, client_id=client_id, user_id=user_id)
    user.deactivated_at = None
    keys = await repo.client_keys(session, client_id)
    live = sum(1 for key, owner in keys if owner.id == user.id and key_status(key, now) == "active")
    return user, live


async def ledger(
    session: AsyncSession, *, client_id: str, page: PageRequest
) -> tuple[list[CreditLedgerEntry], int]:
    """One page of the client's credit ledger, newest first, and the number of entries."""
    return await repo.ledger_page(session, client_id, page.offset, page.limit)

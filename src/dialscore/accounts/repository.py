"""Every query of the accounts domain."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import case, func, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.clock import utcnow
from dialscore.kit.db import Credits
from dialscore.models import ApiKey, Client, CreditLedgerEntry, Plan, User


async def principal_rows(
    session: AsyncSession, key_id: str
) -> tuple[ApiKey, User, Client, Plan] | None:
    stmt = (
        select(ApiKey, User, Client, Plan)
        .join(User, User.id == ApiKey.user_id)
        .join(Client, Client.id == ApiKey.client_id)
        .join(Plan, Plan.name == Client.plan_name)
        .where(ApiKey.id == key_id)
    )
    row = (await session.execute(stmt)).first()
    if row is None:
        return None
    return row[0], row[1], row[2], row[3]


async def get_plan(session: AsyncSession, name: str) -> Plan | None:
    return await session.get(Plan, name)


async def list_plan_names(session: AsyncSession) -> list[str]:
    return list((await session.scalars(select(Plan.name).order_by(Plan.name))).all())


async def get_client(session: AsyncSession, client_id: str) -> Client | None:
    return await session.get(Client, client_id)


async def get_user(session: AsyncSession, user_id: str) -> User | None:
    return await session.get(User, user_id)


async def get_user_by_email(session: AsyncSession, email: str) -> User | None:
    return (await session.scalars(select(User).where(User.email == email))).first()


async def get_key(session: AsyncSession, key_id: str) -> ApiKey | None:
    return await session.get(ApiKey, key_id)


async def balance(session: AsyncSession, client_id: str) -> Decimal | None:
    return (await session.scalars(select(Client.credits).where(Client.id == client_id))).first()


async def debit_if_covered(
    session: AsyncSession, client_id: str, amount: Decimal
) -> Decimal | None:
    """Takes ``amount`` in one statement when the balance covers it; the new balance, or None.

    The condition and the subtraction are one UPDATE, so concurrent debits can never take
    the balance below zero on either database."""
    stmt = (
        update(Client)
        .where(Client.id == client_id, Client.credits >= amount)
        .values(credits=Client.credits - amount)
        .returning(Client.credits)
    )
    return (await session.execute(stmt)).scalars().first()


def spending_month(at: datetime) -> str:
    """The UTC calendar month a key's spending is counted in: "2026-11" (P201)."""
    return at.astimezone(UTC).strftime("%Y-%m")


async def spend_from_key(
    session: AsyncSession, key_id: str, amount: Decimal, month: str
) -> Decimal | None:
    """Counts ``amount`` against the key's spending of ``month`` in one statement when its
    monthly limit (if any) allows it; what it has spent this month then, or None when the
    limit does not allow it (or there is no such key). A count of an earlier month starts
    again at zero. The condition and the addition are one UPDATE, so concurrent charges can
    never take a key past its limit on either database (P201)."""
    spent = case(
        (ApiKey.spent_month == month, ApiKey.spent_this_month),
        else_=literal(Decimal(0), Credits()),
    )
    stmt = (
        update(ApiKey)
        .where(
            ApiKey.id == key_id,
            or_(
                ApiKey.monthly_credit_limit.is_(None),
                spent + literal(amount, Credits()) <= ApiKey.monthly_credit_limit,
            ),
        )
        .values(spent_this_month=spent + literal(amount, Credits()), spent_month=month)
        .returning(ApiKey.spent_this_month)
    )
    return (await session.execute(stmt)).scalars().first()


async def credit(session: AsyncSession, client_id: str, amount: Decimal) -> Decimal | None:
    stmt = (
        update(Client)
        .where(Client.id == client_id)
        .values(credits=Client.credits + amount)
        .returning(Client.credits)
    )
    return (await session.execute(stmt)).scalars().first()


def add_ledger_entry(
    session: AsyncSession,
    *,
    client_id: str,
    delta: Decimal,
    balance_after: Decimal,
    reason: str,
    user_id: str | None = None,
    job_id: str | None = None,
    key_id: str | None = None,
) -> None:
    session.add(
        CreditLedgerEntry(
            client_id=client_id,
            user_id=user_id,
            job_id=job_id,
            key_id=key_id,
            delta=delta,
            balance_after=balance_after,
            reason=reason,
            created_at=utcnow(),
        )
    )


# -- the web app's lists ----------------------------------------------------------------------


async def client_keys(session: AsyncSession, client_id: str) -> list[tuple[ApiKey, User]]:
    """Every key of a client with its owner, newest first."""
    rows = await session.execute(
        select(ApiKey, User)
        .join(User, User.id == ApiKey.user_id)
        .where(ApiKey.client_id == client_id)
        .order_by(ApiKey.created_at.desc(), ApiKey.id)
    )
    return [(row[0], row[1]) for row in rows]


async def client_users(session: AsyncSession, client_id: str) -> list[User]:
    found = await session.scalars(
        select(User).where(User.client_id == client_id).order_by(User.email)
    )
    return list(found)


async def mark_key_used(
    session: AsyncSession, key_id: str, now: datetime, before: datetime
) -> None:
    """Sets ``last_used_at`` unless it is already at or after ``before``: one UPDATE, so that
    concurrent requests write it once."""
    await session.execute(
        update(ApiKey)
        .where(
            ApiKey.id == key_id,
            or_(ApiKey.last_used_at.is_(None), ApiKey.last_used_at < before),
        )
        .values(last_used_at=now)
    )


async def ledger_page(
    session: AsyncSession, client_id: str, offset: int, limit: int
) -> tuple[list[CreditLedgerEntry], int]:
    """One page of a client's credit ledger, newest first, and how many entries it has."""
    where = CreditLedgerEntry.client_id == client_id
    total = await session.scalar(select(func.count()).select_from(CreditLedgerEntry).where(where))
    found = await session.scalars(
        select(CreditLedgerEntry)
        .where(where)
        .order_by(CreditLedgerEntry.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return list(found), total or 0


# -- refunds (P202) ---------------------------------------------------------------------------


async def job_charge(
    session: AsyncSession, client_id: str, job_id: str
) -> CreditLedgerEntry | None:
    """The ledger row that charged the job when it was submitted (its first debit), if any."""
    found = await session.scalars(
        select(CreditLedgerEntry)
        .where(
            CreditLedgerEntry.client_id == client_id,
            CreditLedgerEntry.job_id == job_id,
            CreditLedgerEntry.delta < 0,
        )
        .order_by(CreditLedgerEntry.id)
        .limit(1)
    )
    return found.first()


async def unspend_from_key(
    session: AsyncSession, key_id: str, amount: Decimal, month: str
) -> Decimal | None:
    """Takes ``amount`` off what the key has spent in ``month``, never below zero, in one
    statement; what it has spent then, or None when its count is of another month (or there
    is no such key), which is then left alone."""
    given_back = literal(amount, Credits())
    left = case(
        (ApiKey.spent_this_month > given_back, ApiKey.spent_this_month - given_back),
        else_=literal(Decimal(0), Credits()),
    )
    stmt = (
        update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.spent_month == month)
        .values(spent_this_month=left)
        .returning(ApiKey.spent_this_month)
    )
    return (await session.execute(stmt)).scalars().first()

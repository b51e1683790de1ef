"""Every query of the accounts domain."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.clock import utcnow
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
) -> None:
    session.add(
        CreditLedgerEntry(
            client_id=client_id,
            user_id=user_id,
            job_id=job_id,
            delta=delta,
            balance_after=balance_after,
            reason=reason,
            created_at=utcnow(),
        )
    )

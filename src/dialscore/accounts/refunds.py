"""Giving back part of a job's charge (P202): its own ledger row, the balance, and the
spending the charge counted against its API key's monthly limit (P201)."""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_DOWN, Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import repository as repo

# Credits are exact to 1/10,000 of a credit (P15).
CREDIT_STEP = Decimal("0.0001")


def refund_amount(charged: Decimal, units: int, of: int) -> Decimal:
    """What ``units`` of the ``of`` units a charge of ``charged`` credits paid for cost.

    The charge is the price of one unit, which has at most four decimals, times ``of`` (D9):
    the price is the charge divided by ``of``, exactly, and the refund that price times
    ``units``, computed as ``charged * units / of`` so that no rounded price is multiplied.
    Should a charge ever not divide evenly, the amount is rounded down to 1/10,000: a refund
    never gives back more than was paid."""
    units = min(units, of)
    if units <= 0:
        return Decimal(0)
    return (charged * units / of).quantize(CREDIT_STEP, rounding=ROUND_DOWN)


async def refund(
    session: AsyncSession,
    *,
    client_id: str,
    job_id: str,
    units: int,
    of: int,
    reason: str,
    now: datetime,
) -> Decimal:
    """Gives back what the job's charge paid for ``units`` of the ``of`` units it charged, in
    the caller's transaction; the credits given back (0 when the job was charged nothing).

    The refund is a ledger row of its own (positive, with the job, the user and the API key
    of the charge) and credits the balance. When the charge was made with an API key in the
    month of ``now`` (UTC) and the key still counts that month, the amount also comes off what
    the key has spent this month (never below zero), so that it does not count against the
    key's monthly limit. The caller makes sure that a job is refunded once."""
    charge = await repo.job_charge(session, client_id, job_id)
    if charge is None:
        return Decimal(0)
    amount = refund_amount(-charge.delta, units, of)
    if amount <= 0:
        return Decimal(0)
    balance = await repo.credit(session, client_id, amount)
    if balance is None:
        return Decimal(0)  # the client is gone: no balance to give back to
    repo.add_ledger_entry(
        session,
        client_id=client_id,
        user_id=charge.user_id,
        job_id=job_id,
        key_id=charge.key_id,
        delta=amount,
        balance_after=balance,
        reason=reason,
    )
    month = repo.spending_month(now)
    if charge.key_id is not None and repo.spending_month(charge.created_at) == month:
        await repo.unspend_from_key(session, charge.key_id, amount, month)
    return amount

"""The dispatcher's queries: which deliveries are due, their leases while they are sent, and
the attempts' outcomes recorded in groups (P105)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Select,
    Text,
    and_,
    bindparam,
    case,
    cast,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.db import table_of
from dialscore.models import (
    Client,
    Plan,
    User,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)
from dialscore.webhooks.schemas import CALLBACK, CONTACT_SCORED, JOB_COMPLETED, TEST_EVENT

# The tables themselves: the dispatcher's statements are built once, in SQLAlchemy Core, and
# run with their parameters. A statement made from the ORM's classes at each run is built,
# keyed and run through the ORM anew each time: about a third of the CPU of claiming and
# recording (0.62-0.67x after, bench/delivery_bookkeeping.py).
_DELIVERIES = table_of(WebhookDelivery)
_SUBSCRIPTIONS = table_of(WebhookSubscription)
_USERS = table_of(User)
_CLIENTS = table_of(Client)
_PLANS = table_of(Plan)


def due(now: datetime | BindParameter[datetime]) -> ColumnElement[bool]:
    """A delivery due at ``now``: pending, its time come, and not leased (or its lease
    lapsed: its worker died)."""
    table = _DELIVERIES.c
    return and_(
        table.state == "pending",
        table.available_at <= now,
        or_(table.leased_until.is_(None), table.leased_until <= now),
    )


_ANY_DUE = select(_DELIVERIES.c.id).where(due(bindparam("now"))).limit(1)


async def any_due(session: AsyncSession, *, now: datetime) -> bool:
    return (await session.scalar(_ANY_DUE, {"now": now})) is not None


class Candidate(NamedTuple):
    """A due delivery: what choosing among them needs, and what sending it needs (its
    envelope's parts and its sealed signing secret: the subscription's, or for a callback
    its user's callback secret). A row of the claim's query, in its order."""

    delivery_id: str
    user_id: str
    event_type: str
    url: str
    # The plan's webhook rate, and the client's own values that may replace it.
    plan_rate: int
    overrides: dict[str, Any]
    kind: str
    # As stored: JSON text.
    payload_json: str
    timestamp_ms: int
    attempts: int
    first_attempt_at: datetime | None
    created_at: datetime
    sealed: str | None
    # A subscription's secret before its last rotation, and when that was (P121); None for a
    # callback and a subscription never rotated.
    previous_sealed: str | None
    rotated_at: datetime | None
    # The subscription's own deliveries per second (P141), None for none and for a callback.
    subscription_rate: float | None = None
    subscription_id: str | None = None
    # The lease of a worker that stopped renewing it (P161); None for a delivery not held.
    lapsed_lease: datetime | None = None

    @property
    def endpoint_key(self) -> str | None:
        """The rate key of a subscription with a rate of its own (P141); None for one
        without and for a callback."""
        if self.subscription_rate is None or self.subscription_id is None:
            return None
        return f"subscription:{self.subscription_id}"

    @property
    def rate(self) -> float:
        """The owner's deliveries per second: its client's own, else its plan's."""
        return float(self.overrides.get("webhook_rate", self.plan_rate))


def _candidates(*, skip_locked: bool) -> Select[Any]:
    """Due deliveries of active subscriptions and due callbacks, in the order they fell due,
    at most ``limit`` (``now`` and ``limit`` bound at each run); locked for the transaction,
    those another worker's claim has locked skipped (``skip_locked``, PostgreSQL), or not
    locked at all (SQLite, where a write takes the whole database).

    A job.completed waits while contact events of its job to the same subscription are
    still pending, so receivers get it after them."""
    delivery, subscription = _DELIVERIES.c, _SUBSCRIPTIONS.c
    earlier = _DELIVERIES.alias("earlier").c
    contact_events_pending = exists(
        select(earlier.id).where(
            earlier.job_id == delivery.job_id,
            earlier.subscription_id == delivery.subscription_id,
            earlier.event_type == CONTACT_SCORED,
            earlier.state == "pending",
        )
    )
    sealed = case(
        (delivery.kind == CALLBACK, _USERS.c.callback_secret_ciphertext),
        else_=subscription.secret_ciphertext,
    )
    owners = (
        _DELIVERIES.outerjoin(_SUBSCRIPTIONS, subscription.id == delivery.subscription_id)
        .join(_USERS, _USERS.c.id == delivery.user_id)
        .join(_CLIENTS, _CLIENTS.c.id == _USERS.c.client_id)
        .join(_PLANS, _PLANS.c.name == _CLIENTS.c.plan_name)
    )
    stmt = (
        select(
            delivery.id,
            delivery.user_id,
            delivery.event_type,
            func.coalesce(delivery.target_url, subscription.url),
            _PLANS.c.webhook_rate,
            _CLIENTS.c.overrides,
            delivery.kind,
            cast(delivery.payload, Text),
            delivery.timestamp_ms,
            delivery.attempts,
            delivery.first_attempt_at,
            delivery.created_at,
            sealed,
            subscription.previous_secret_ciphertext,
            subscription.secret_rotated_at,
            subscription.rate_limit,
            delivery.subscription_id,
            delivery.leased_until,
        )
        .select_from(owners)
        .where(
            due(bindparam("now")),
            or_(
                delivery.kind == CALLBACK,
                subscription.status == "active",
                delivery.event_type == TEST_EVENT,
            ),
            ~and_(delivery.event_type == JOB_COMPLETED, contact_events_pending),
        )
        .order_by(delivery.available_at, delivery.id)
        .limit(bindparam("limit"))
    )
    return stmt.with_for_update(skip_locked=True, of=_DELIVERIES) if skip_locked else stmt


_CANDIDATES = {locking: _candidates(skip_locked=locking) for locking in (False, True)}


async def due_candidates(
    session: AsyncSession, *, now: datetime, limit: int, skip_locked: bool
) -> list[Candidate]:
    """Due deliveries of active subscriptions and due callbacks, in the order they fell due
    (one a dead worker held keeps its place, P161), locked for this transaction (those
    another worker's claim has locked skipped, ``skip_locked``); see ``_candidates``."""
    rows = await session.execute(_CANDIDATES[skip_locked], {"now": now, "limit": limit})
    return [Candidate(*row) for row in rows.all()]


_IDS: BindParameter[Any] = bindparam("ids", expanding=True)
_LEASE = (
    update(_DELIVERIES).where(_DELIVERIES.c.id.in_(_IDS)).values(leased_until=bindparam("until"))
)
_MOVE_LEASES = (
    update(_DELIVERIES)
    .where(
        _DELIVERIES.c.id.in_(_IDS),
        _DELIVERIES.c.state == "pending",
        _DELIVERIES.c.leased_until == bindparam("held"),
    )
    .values(leased_until=bindparam("to"))
)


async def lease(session: AsyncSession, delivery_ids: list[str], *, until: datetime) -> None:
    """Leases the chosen deliveries until ``until``."""
    if delivery_ids:
        await session.execute(_LEASE, {"ids": delivery_ids, "until": until})


async def extend_leases(
    session: AsyncSession, delivery_ids: list[str], *, held: datetime, until: datetime
) -> None:
    """Moves the lease of deliveries in flight from ``held`` to ``until`` (the dispatcher's
    heartbeat). A delivery whose attempt was recorded meanwhile is no longer leased and is
    left alone."""
    await _move_leases(session, delivery_ids, held=held, to=until)


async def release(session: AsyncSession, delivery_ids: list[str], *, held: datetime) -> None:
    """Ends the lease of claimed deliveries that were not sent, or whose send was cut short:
    due again at once, in their place, for whichever worker claims next; no attempt is
    recorded. Those whose lease is no longer ``held`` (their attempt was recorded) are left
    alone."""
    await _move_leases(session, delivery_ids, held=held, to=None)


async def _move_leases(
    session: AsyncSession, delivery_ids: list[str], *, held: datetime, to: datetime | None
) -> None:
    """Moves the lease of the pending deliveries among ``delivery_ids`` still leased until
    ``held`` to ``to`` (None: no lease)."""
    if delivery_ids:
        await session.execute(_MOVE_LEASES, {"ids": delivery_ids, "held": held, "to": to})


async def fail_undeliverable(
    session: AsyncSession, delivery_id: str, *, error: str, now: datetime
) -> None:
    await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id == delivery_id)
        .values(state="failed", completed_at=now, last_error=error, leased_until=None)
    )


@dataclass(frozen=True)
class AttemptRecord:
    """An attempt to store, and its delivery's state after it."""

    delivery_id: str
    number: int
    status_code: int | None
    duration_ms: int
    error: str | None
    attempted_at: datetime
    state: str
    available_at: datetime
    first_attempt_at: datetime
    completed_at: datetime | None
    # The subscription it was sent to, for its endpoint's health (P160); None for a callback.
    subscription_id: str | None = None


_RECORD = (
    update(_DELIVERIES)
    .where(_DELIVERIES.c.id == bindparam("b_id"), _DELIVERIES.c.state == "pending")
    .values(
        attempts=bindparam("b_number"),
        first_attempt_at=bindparam("b_first"),
        last_status_code=bindparam("b_status"),
        last_error=bindparam("b_error"),
        state=bindparam("b_state"),
        available_at=bindparam("b_available"),
        completed_at=bindparam("b_completed"),
        leased_until=None,
    )
)


_PENDING_LOCKED = (
    select(_DELIVERIES.c.id)
    .where(_DELIVERIES.c.id.in_(_IDS), _DELIVERIES.c.state == "pending")
    .order_by(_DELIVERIES.c.id)
    .with_for_update()
)
_ATTEMPTS = table_of(WebhookAttempt)


async def record_attempts(session: AsyncSession, records: Sequence[AttemptRecord]) -> int:
    """Stores attempts and their deliveries' new states, in one statement of each kind; a
    delivery that is gone or no longer pending (its subscription deleted, its job erased) is
    skipped. How many were stored.

    The deliveries still pending are locked first, in id order (PostgreSQL): one cancelled
    meanwhile (P132) is then either recorded before it is cancelled or skipped whole, never
    given an attempt once cancelled, and the cancellation, which locks in the same order,
    cannot deadlock with this."""
    ids = [r.delivery_id for r in records]
    alive = set((await session.scalars(_PENDING_LOCKED, {"ids": ids})).all())
    kept = [r for r in records if r.delivery_id in alive]
    if not kept:
        return 0
    await session.execute(
        _RECORD,
        [
            {
                "b_id": r.delivery_id,
                "b_number": r.number,
                "b_first": r.first_attempt_at,
                "b_status": r.status_code,
                "b_error": r.error,
                "b_state": r.state,
                "b_available": r.available_at,
                "b_completed": r.completed_at,
            }
            for r in kept
        ],
    )
    await session.execute(
        insert(_ATTEMPTS),
        [
            {
                "delivery_id": r.delivery_id,
                "number": r.number,
                "status_code": r.status_code,
                "duration_ms": r.duration_ms,
                "error": r.error,
                "attempted_at": r.attempted_at,
            }
            for r in kept
        ],
    )
    return len(kept)

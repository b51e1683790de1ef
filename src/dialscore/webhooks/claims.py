"""The dispatcher's queries: which deliveries are due, their leases while they are sent, and
the attempts' outcomes recorded in groups (P105)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
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
from sqlalchemy.orm import aliased

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


def due(now: datetime) -> ColumnElement[bool]:
    """A delivery due at ``now``: pending, its time come, and not leased (or its lease
    lapsed: its worker died)."""
    return and_(
        WebhookDelivery.state == "pending",
        WebhookDelivery.available_at <= now,
        or_(WebhookDelivery.leased_until.is_(None), WebhookDelivery.leased_until <= now),
    )


async def any_due(session: AsyncSession, *, now: datetime) -> bool:
    stmt = select(WebhookDelivery.id).where(due(now)).limit(1)
    return (await session.scalar(stmt)) is not None


@dataclass(frozen=True)
class Candidate:
    """A due delivery: what choosing among them needs, and what sending it needs (its
    envelope's parts and its sealed signing secret: the subscription's, or for a callback
    its user's callback secret)."""

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


async def due_candidates(
    session: AsyncSession, *, now: datetime, limit: int, skip_locked: bool
) -> list[Candidate]:
    """Due deliveries of active subscriptions and due callbacks, in the order they fell due
    (one a dead worker held keeps its place, P161), locked for this transaction (those
    another worker's claim has locked skipped, ``skip_locked``).

    A job.completed waits while contact events of its job to the same subscription are
    still pending, so receivers get it after them."""
    earlier = aliased(WebhookDelivery)
    contact_events_pending = exists(
        select(earlier.id).where(
            earlier.job_id == WebhookDelivery.job_id,
            earlier.subscription_id == WebhookDelivery.subscription_id,
            earlier.event_type == CONTACT_SCORED,
            earlier.state == "pending",
        )
    )
    sealed = case(
        (WebhookDelivery.kind == CALLBACK, User.callback_secret_ciphertext),
        else_=WebhookSubscription.secret_ciphertext,
    )
    stmt = (
        select(
            WebhookDelivery.id,
            WebhookDelivery.user_id,
            WebhookDelivery.event_type,
            func.coalesce(WebhookDelivery.target_url, WebhookSubscription.url),
            Plan.webhook_rate,
            Client.overrides,
            WebhookDelivery.kind,
            cast(WebhookDelivery.payload, Text),
            WebhookDelivery.timestamp_ms,
            WebhookDelivery.attempts,
            WebhookDelivery.first_attempt_at,
            WebhookDelivery.created_at,
            sealed,
            WebhookSubscription.previous_secret_ciphertext,
            WebhookSubscription.secret_rotated_at,
            WebhookSubscription.rate_limit,
            WebhookDelivery.subscription_id,
            WebhookDelivery.leased_until,
        )
        .outerjoin(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
        .join(User, User.id == WebhookDelivery.user_id)
        .join(Client, Client.id == User.client_id)
        .join(Plan, Plan.name == Client.plan_name)
        .where(
            due(now),
            or_(
                WebhookDelivery.kind == CALLBACK,
                WebhookSubscription.status == "active",
                WebhookDelivery.event_type == TEST_EVENT,
            ),
            ~and_(WebhookDelivery.event_type == JOB_COMPLETED, contact_events_pending),
        )
        .order_by(WebhookDelivery.available_at, WebhookDelivery.id)
        .limit(limit)
    )
    if skip_locked:
        stmt = stmt.with_for_update(skip_locked=True, of=WebhookDelivery)
    return [Candidate(*row) for row in (await session.execute(stmt)).all()]


async def lease(session: AsyncSession, delivery_ids: list[str], *, until: datetime) -> None:
    """Leases the chosen deliveries until ``until``."""
    if delivery_ids:
        await session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id.in_(delivery_ids))
            .values(leased_until=until)
        )


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
        await session.execute(
            update(WebhookDelivery)
            .where(
                WebhookDelivery.id.in_(delivery_ids),
                WebhookDelivery.state == "pending",
                WebhookDelivery.leased_until == held,
            )
            .values(leased_until=to)
        )


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


_DELIVERIES = table_of(WebhookDelivery)
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


async def record_attempts(session: AsyncSession, records: Sequence[AttemptRecord]) -> int:
    """Stores attempts and their deliveries' new states, in one statement of each kind; a
    delivery that is gone or no longer pending (its subscription deleted, its job erased) is
    skipped. How many were stored.

    The deliveries still pending are locked first, in id order (PostgreSQL): one cancelled
    meanwhile (P132) is then either recorded before it is cancelled or skipped whole, never
    given an attempt once cancelled, and the cancellation, which locks in the same order,
    cannot deadlock with this."""
    ids = [r.delivery_id for r in records]
    alive = set(
        (
            await session.scalars(
                select(WebhookDelivery.id)
                .where(WebhookDelivery.id.in_(ids), WebhookDelivery.state == "pending")
                .order_by(WebhookDelivery.id)
                .with_for_update()
            )
        ).all()
    )
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
        insert(table_of(WebhookAttempt)),
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

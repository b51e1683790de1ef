"""Every query of the webhooks domain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    and_,
    delete,
    func,
    insert,
    null,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.db import changed_rows, table_of
from dialscore.models import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)


def add_subscription(session: AsyncSession, subscription: WebhookSubscription) -> None:
    session.add(subscription)


async def subscription_of_user(
    session: AsyncSession, subscription_id: str, user_id: str
) -> WebhookSubscription | None:
    return (
        await session.scalars(
            select(WebhookSubscription).where(
                WebhookSubscription.id == subscription_id,
                WebhookSubscription.user_id == user_id,
            )
        )
    ).first()


async def subscriptions_of_user(
    session: AsyncSession, user_id: str
) -> Sequence[WebhookSubscription]:
    return (
        await session.scalars(
            select(WebhookSubscription)
            .where(WebhookSubscription.user_id == user_id)
            .order_by(WebhookSubscription.created_at, WebhookSubscription.id)
        )
    ).all()


async def rotate_secret(
    session: AsyncSession, subscription_id: str, *, sealed: str, now: datetime
) -> None:
    """Makes ``sealed`` the subscription's secret and the one it had its previous secret, in
    one statement: of two rotations at once, the later one keeps the earlier one's secret."""
    await session.execute(
        update(WebhookSubscription)
        .where(WebhookSubscription.id == subscription_id)
        .values(
            previous_secret_ciphertext=WebhookSubscription.secret_ciphertext,
            secret_ciphertext=sealed,
            secret_rotated_at=now,
            updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )


async def active_listeners(session: AsyncSession, user_id: str, event_type: str) -> list[str]:
    """Ids of the user's active subscriptions that listen to ``event_type``."""
    rows = await session.execute(
        select(WebhookSubscription.id, WebhookSubscription.event_types).where(
            WebhookSubscription.user_id == user_id, WebhookSubscription.status == "active"
        )
    )
    return [sid for sid, types in rows.all() if event_type in types]


async def delete_subscription(session: AsyncSession, subscription_id: str) -> None:
    deliveries = select(WebhookDelivery.id).where(
        WebhookDelivery.subscription_id == subscription_id
    )
    await session.execute(delete(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(deliveries)))
    await session.execute(
        delete(WebhookDelivery).where(WebhookDelivery.subscription_id == subscription_id)
    )
    await session.execute(
        delete(WebhookSubscription).where(WebhookSubscription.id == subscription_id)
    )


async def due_at_once(session: AsyncSession, subscription_id: str, *, now: datetime) -> None:
    """Makes the subscription's pending deliveries waiting for a later attempt due ``now``;
    their attempts and retry window are kept."""
    await session.execute(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.subscription_id == subscription_id,
            WebhookDelivery.state == "pending",
            WebhookDelivery.available_at > now,
        )
        .values(available_at=now)
        .execution_options(synchronize_session=False)
    )


async def insert_deliveries(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Inserts delivery rows (column names to values) in one statement, into the table rather
    than through the mapped class, as ``insert_contacts`` does its rows."""
    if rows:
        await session.execute(insert(table_of(WebhookDelivery)), rows)


async def deliveries_page(
    session: AsyncSession, subscription_id: str, *, offset: int, limit: int
) -> tuple[Sequence[WebhookDelivery], int, dict[str, list[WebhookAttempt]]]:
    condition = WebhookDelivery.subscription_id == subscription_id
    total = await session.scalar(select(func.count()).select_from(WebhookDelivery).where(condition))
    deliveries = (
        await session.scalars(
            select(WebhookDelivery)
            .where(condition)
            .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id)
            .offset(offset)
            .limit(limit)
        )
    ).all()
    attempts: dict[str, list[WebhookAttempt]] = {d.id: [] for d in deliveries}
    if deliveries:
        rows = await session.scalars(
            select(WebhookAttempt)
            .where(WebhookAttempt.delivery_id.in_(list(attempts)))
            .order_by(WebhookAttempt.delivery_id, WebhookAttempt.number)
        )
        for attempt in rows.all():
            attempts[attempt.delivery_id].append(attempt)
    return deliveries, int(total or 0), attempts


async def delivery_of(
    session: AsyncSession, subscription_id: str, delivery_id: str
) -> WebhookDelivery | None:
    return (
        await session.scalars(
            select(WebhookDelivery).where(
                WebhookDelivery.id == delivery_id,
                WebhookDelivery.subscription_id == subscription_id,
            )
        )
    ).first()


async def attempts_of(session: AsyncSession, delivery_id: str) -> list[WebhookAttempt]:
    rows = await session.scalars(
        select(WebhookAttempt)
        .where(WebhookAttempt.delivery_id == delivery_id)
        .order_by(WebhookAttempt.number)
    )
    return list(rows.all())


# The most attempt durations the health figures read for their median.
MOST_DURATIONS = 10_000


@dataclass(frozen=True)
class EndpointHealth:
    """How a subscription's endpoint has been answering: attempts since ``since``
    (successes: no error, i.e. a 2xx answer; failures: anything else), the newest success and
    failure ever, the deliveries still pending, the longest duration since ``since``, and the
    durations of the newest attempts since ``since`` (at most ``MOST_DURATIONS``), for their
    median."""

    successes: int
    failures: int
    last_success_at: datetime | None
    last_failure: WebhookAttempt | None
    pending: int
    slowest_ms: int | None
    durations_ms: list[int]


async def endpoint_health(
    session: AsyncSession, subscription_id: str, *, since: datetime
) -> EndpointHealth:
    """Three small queries, the same on both databases (no percentile_cont): one aggregate
    row (counts and the longest duration since ``since``, the newest success, the pending
    deliveries), the newest failed attempt, and the durations since ``since``, newest first
    and bounded (their median is taken by the caller, in Python)."""
    attempts = (
        select(WebhookAttempt)
        .join(WebhookDelivery, WebhookDelivery.id == WebhookAttempt.delivery_id)
        .where(WebhookDelivery.subscription_id == subscription_id)
    )
    succeeded = WebhookAttempt.error.is_(None)
    recent = WebhookAttempt.attempted_at >= since
    pending = (
        select(func.count())
        .select_from(WebhookDelivery)
        .where(
            WebhookDelivery.subscription_id == subscription_id,
            WebhookDelivery.state == "pending",
        )
        .scalar_subquery()
    )
    totals = (
        await session.execute(
            select(
                func.count().filter(and_(recent, succeeded)),
                func.count().filter(and_(recent, ~succeeded)),
                func.max(WebhookAttempt.attempted_at).filter(succeeded),
                pending,
                func.max(WebhookAttempt.duration_ms).filter(recent),
            )
            .select_from(WebhookAttempt)
            .join(WebhookDelivery, WebhookDelivery.id == WebhookAttempt.delivery_id)
            .where(WebhookDelivery.subscription_id == subscription_id)
        )
    ).one()
    last_failure = (
        await session.scalars(
            attempts.where(~succeeded)
            .order_by(WebhookAttempt.attempted_at.desc(), WebhookAttempt.id.desc())
            .limit(1)
        )
    ).first()
    durations = await session.scalars(
        select(WebhookAttempt.duration_ms)
        .join(WebhookDelivery, WebhookDelivery.id == WebhookAttempt.delivery_id)
        .where(WebhookDelivery.subscription_id == subscription_id, recent)
        .order_by(WebhookAttempt.attempted_at.desc())
        .limit(MOST_DURATIONS)
    )
    return EndpointHealth(
        successes=int(totals[0] or 0),
        failures=int(totals[1] or 0),
        last_success_at=totals[2],
        last_failure=last_failure,
        pending=int(totals[3] or 0),
        slowest_ms=totals[4],
        durations_ms=list(durations.all()),
    )


# -- bodies that do not outlive their use (P130, P132) -------------------------------------------

# Why a delivery has no body any more: its retention ran out, or its job was erased.
RETENTION = "retention"
JOB_ERASED = "job_erased"
# The error of a delivery cancelled because its job was erased.
JOB_ERASED_ERROR = "cancelled: its job was erased"


async def replay(session: AsyncSession, delivery_id: str, *, now: datetime) -> bool:
    """Makes a delivery pending again, due now, with a new retry window (P21), if it still
    has its body; whether it had. Conditional, so that a body removed meanwhile by another
    transaction is never left pending (P131)."""
    result = await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id == delivery_id, WebhookDelivery.body_removed_at.is_(None))
        .values(state="pending", available_at=now, completed_at=None, first_attempt_at=None)
        .execution_options(synchronize_session=False)
    )
    return changed_rows(result) == 1


@dataclass(frozen=True)
class Recovery:
    """What a bulk recovery (P150) did: how many deliveries are due again, how many failed
    ones of the range were left (their body removed), and whether more remain past the
    bound."""

    recovered: int
    skipped: int
    more: bool


async def recover_failed(
    session: AsyncSession,
    subscription_id: str,
    *,
    since: datetime,
    until: datetime,
    now: datetime,
    limit: int,
) -> Recovery:
    """Makes up to ``limit`` failed deliveries of the subscription created in [since, until)
    pending again, due now, with a new retry window, as ``replay`` does one (P21), the
    earliest created first, in one UPDATE (found through
    ``ix_webhook_deliveries_subscription``). Only those that still have their body: the
    condition is checked again as each row is written (P131)."""
    in_range = (
        WebhookDelivery.subscription_id == subscription_id,
        WebhookDelivery.created_at >= since,
        WebhookDelivery.created_at < until,
        WebhookDelivery.state == "failed",
    )
    recoverable = (*in_range, WebhookDelivery.body_removed_at.is_(None))
    chosen = (
        select(WebhookDelivery.id)
        .where(*recoverable)
        .order_by(WebhookDelivery.created_at, WebhookDelivery.id)
        .limit(limit)
    )
    result = await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id.in_(chosen.scalar_subquery()), *recoverable)
        .values(state="pending", available_at=now, completed_at=None, first_attempt_at=None)
        .execution_options(synchronize_session=False)
    )
    recovered = changed_rows(result)
    skipped = await session.scalar(
        select(func.count())
        .select_from(WebhookDelivery)
        .where(*in_range, WebhookDelivery.body_removed_at.is_not(None))
    )
    more = False
    if recovered >= limit:
        left = await session.scalar(select(WebhookDelivery.id).where(*recoverable).limit(1))
        more = left is not None
    return Recovery(recovered=recovered, skipped=int(skipped or 0), more=more)


async def bodies_past_retention(
    session: AsyncSession, *, finished_before: datetime, limit: int
) -> list[str]:
    """The ids of up to ``limit`` finished deliveries (delivered or failed) that finished at
    or before ``finished_before`` and still have their body, the earliest first (the partial
    index ``ix_webhook_deliveries_body_kept``)."""
    rows = await session.scalars(
        select(WebhookDelivery.id)
        .where(
            WebhookDelivery.body_removed_at.is_(None),
            WebhookDelivery.completed_at.is_not(None),
            WebhookDelivery.completed_at <= finished_before,
            WebhookDelivery.state != "pending",
        )
        .order_by(WebhookDelivery.completed_at)
        .limit(limit)
    )
    return list(rows.all())


async def remove_bodies(
    session: AsyncSession, delivery_ids: Sequence[str], *, finished_before: datetime, now: datetime
) -> int:
    """Removes the bodies of those of ``delivery_ids`` still finished at or before
    ``finished_before``: checked again as each row is written, so that a delivery sent again
    meanwhile (pending, its ``completed_at`` cleared) keeps its body. How many."""
    if not delivery_ids:
        return 0
    result = await session.execute(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.id.in_(delivery_ids),
            WebhookDelivery.state != "pending",
            WebhookDelivery.body_removed_at.is_(None),
            WebhookDelivery.completed_at <= finished_before,
        )
        .values(payload=null(), body_removed_at=now, body_removed_reason=RETENTION)
        .execution_options(synchronize_session=False)
    )
    return changed_rows(result)


async def erase_job_deliveries(session: AsyncSession, job_id: str, *, now: datetime) -> int:
    """Cancels the job's pending deliveries (failed, with why: never sent again) and removes
    the body of every delivery of the job, webhooks and version 1 callbacks alike, keeping
    their attempts. Their rows are locked first in id order, as ``record_attempts`` locks
    them (PostgreSQL; SQLite's one writer needs no row locks). How many were cancelled."""
    if session.get_bind().dialect.name != "sqlite":
        await session.execute(
            select(WebhookDelivery.id)
            .where(WebhookDelivery.job_id == job_id)
            .order_by(WebhookDelivery.id)
            .with_for_update()
        )
    cancelled = await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.job_id == job_id, WebhookDelivery.state == "pending")
        .values(state="failed", completed_at=now, last_error=JOB_ERASED_ERROR)
        .execution_options(synchronize_session=False)
    )
    await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.job_id == job_id, WebhookDelivery.body_removed_at.is_(None))
        .values(payload=null(), body_removed_at=now, body_removed_reason=JOB_ERASED)
        .execution_options(synchronize_session=False)
    )
    return changed_rows(cancelled)

"""The queries /metrics reads the database's gauges with, on a synchronous connection: a
scrape runs in a thread of its own (the separate metrics port's server, or off the event loop)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, case, func, literal, or_, select

from dialscore.jobs.schemas import TERMINAL_STATES
from dialscore.models import Job, OutboxMessage, WebhookDelivery, WebhookSubscription
from dialscore.webhooks.claims import due as is_due
from dialscore.webhooks.schemas import CALLBACK, TEST_EVENT

# The states a job is in before it finishes (D12, P12).
UNFINISHED_STATES = ("Init", "Processing")


@dataclass(frozen=True)
class Backlog:
    """How many of something wait, and since when the oldest one has."""

    count: int
    oldest: datetime | None


@dataclass(frozen=True)
class Deliveries:
    pending: Backlog
    due: int
    # Pending for a subscription that is inactive: sent once it is active again (P19).
    held: int


def unfinished_jobs(connection: Connection) -> dict[str, Backlog]:
    """Jobs not yet finished, by state."""
    rows = connection.execute(
        select(Job.status, func.count(), func.min(Job.created_at))
        .where(Job.status.not_in(TERMINAL_STATES))
        .group_by(Job.status)
    ).all()
    found = {status: Backlog(count, oldest) for status, count, oldest in rows}
    return {state: found.get(state, Backlog(0, None)) for state in UNFINISHED_STATES} | found


def outbox(connection: Connection) -> dict[tuple[str, bool], Backlog]:
    """Outbox messages by actor and whether they are set aside (failed for good)."""
    set_aside = OutboxMessage.failed_at.is_not(None)
    rows = connection.execute(
        select(
            OutboxMessage.actor,
            set_aside,
            func.count(),
            func.min(OutboxMessage.created_at),
        ).group_by(OutboxMessage.actor, set_aside)
    ).all()
    return {(actor, bool(aside)): Backlog(count, oldest) for actor, aside, count, oldest in rows}


def deliveries(connection: Connection, *, now: datetime) -> Deliveries:
    """Pending webhook deliveries and callbacks: those the dispatcher may send (with the due
    ones among them), and those held for an inactive subscription."""
    sendable = or_(
        WebhookDelivery.kind == CALLBACK,
        WebhookSubscription.status == "active",
        WebhookDelivery.event_type == TEST_EVENT,
    )
    one = literal(1)
    row = connection.execute(
        select(
            func.count(case((sendable, one))),
            func.min(case((sendable, WebhookDelivery.created_at))),
            func.count(case((sendable & is_due(now), one))),
            func.count(case((~sendable, one))),
        )
        .select_from(WebhookDelivery)
        .outerjoin(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
        .where(WebhookDelivery.state == "pending")
    ).one()
    pending, oldest, due, held = row
    return Deliveries(Backlog(pending, oldest), due, held)

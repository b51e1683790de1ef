"""What recorded attempts say of their subscriptions' endpoints: since when every attempt has
failed, and turning off one that has failed for the whole window, with the reason (P160)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from sqlalchemy import bindparam, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.clock import isoformat, utcnow
from dialscore.kit.db import changed_rows, table_of
from dialscore.models import WebhookSubscription
from dialscore.webhooks import service
from dialscore.webhooks.claims import AttemptRecord
from dialscore.webhooks.schemas import WEBHOOK_DISABLED, present_subscription

log = structlog.get_logger(__name__)

# DIALSCORE_WEBHOOK_DISABLE_AFTER_SECONDS's default: 5 days.
DEFAULT_DISABLE_AFTER = timedelta(days=5)
# The longest reason stored (the column's length).
_MOST_REASON = 500


@dataclass(frozen=True)
class _Failing:
    """A subscription whose last attempt in a group failed: when the first failure after its
    last success in the group was made, whether the group had a success before it (which
    resets the window), and the last failure in words."""

    since: datetime
    after_success: bool
    reason: str


def _succeeded(record: AttemptRecord) -> bool:
    return record.state == "delivered"


def _reason(record: AttemptRecord) -> str:
    """An attempt's failure in words: its error, else its status code."""
    if record.error:
        return record.error[:_MOST_REASON]
    if record.status_code is not None:
        return f"receiver answered {record.status_code}"
    return "the attempt failed"


def _by_subscription(
    records: Sequence[AttemptRecord],
) -> tuple[list[str], dict[str, _Failing]]:
    """The subscriptions whose last attempt in ``records`` succeeded, and those whose last
    attempt failed. Version 1 callbacks (no subscription) are left out."""
    grouped: dict[str, list[AttemptRecord]] = defaultdict(list)
    for record in records:
        if record.subscription_id is not None:
            grouped[record.subscription_id].append(record)
    succeeded: list[str] = []
    failing: dict[str, _Failing] = {}
    for subscription_id, attempts in grouped.items():
        attempts.sort(key=lambda r: r.attempted_at)
        last_success = max((i for i, r in enumerate(attempts) if _succeeded(r)), default=None)
        failures = attempts if last_success is None else attempts[last_success + 1 :]
        if not failures:
            succeeded.append(subscription_id)
            continue
        failing[subscription_id] = _Failing(
            since=failures[0].attempted_at,
            after_success=last_success is not None,
            reason=_reason(failures[-1]),
        )
    return succeeded, failing


_SUBSCRIPTIONS = table_of(WebhookSubscription)
# A group's subscriptions that had a success: built once, being in nearly every group.
_ANSWERING = (
    update(_SUBSCRIPTIONS)
    .where(
        _SUBSCRIPTIONS.c.id.in_(bindparam("ids", expanding=True)),
        _SUBSCRIPTIONS.c.failing_since.is_not(None),
    )
    .values(failing_since=None)
)


async def note_attempts(
    session: AsyncSession,
    records: Sequence[AttemptRecord],
    *,
    disable_after: timedelta,
    now: datetime | None = None,
) -> list[str]:
    """Tells the subscriptions of a group of recorded attempts how their endpoints answer,
    in the caller's transaction (the one that records them), and turns off those whose every
    attempt has failed for ``disable_after``; the ids of those turned off.

    A success clears ``failing_since``; a failure sets it to its time when it is not set (a
    success earlier in the group: whatever it was). An active subscription failing since
    ``now - disable_after`` or earlier becomes inactive with ``disabled_at`` and
    ``disabled_reason`` (the last failure), and its owner's other active subscriptions that
    listen to ``webhook.disabled`` get the event.

    Every write is one UPDATE whose WHERE holds its condition, checked again as the row is
    written: of two workers recording failures of one subscription at once (PostgreSQL),
    one turns it off and announces it, the other finds it inactive and does neither; a
    success recorded meanwhile leaves nothing to turn off. The failing subscriptions are
    written in id order, so that two groups cannot wait on each other's rows."""
    succeeded, failing = _by_subscription(records)
    if not succeeded and not failing:
        return []
    now = now or utcnow()
    table = WebhookSubscription
    if succeeded:
        await session.execute(_ANSWERING, {"ids": sorted(succeeded)})
    cutoff = now - disable_after
    disabled: list[tuple[str, _Failing]] = []
    for subscription_id in sorted(failing):
        failure = failing[subscription_id]
        unset = () if failure.after_success else (table.failing_since.is_(None),)
        await session.execute(
            update(table)
            .where(table.id == subscription_id, *unset)
            .values(failing_since=failure.since)
            .execution_options(synchronize_session=False)
        )
        turned_off = await session.execute(
            update(table)
            .where(
                table.id == subscription_id,
                table.status == "active",
                table.failing_since.is_not(None),
                table.failing_since <= cutoff,
            )
            .values(
                status="inactive",
                disabled_at=now,
                disabled_reason=failure.reason,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        if changed_rows(turned_off) == 1:
            disabled.append((subscription_id, failure))
    for subscription_id, failure in disabled:
        await _announce(session, subscription_id, failure, disable_after=disable_after)
    return [subscription_id for subscription_id, _ in disabled]


async def _announce(
    session: AsyncSession, subscription_id: str, failure: _Failing, *, disable_after: timedelta
) -> None:
    """Logs a subscription turned off, and sends its owner's other active subscriptions that
    listen to ``webhook.disabled`` the event, the subscription as the API shows it for its
    payload, built as every event's deliveries are (``service.emit``)."""
    subscription = await session.get(WebhookSubscription, subscription_id, populate_existing=True)
    if subscription is None:  # deleted meanwhile: nobody to tell about it
        return
    notified = await service.emit(
        session,
        user_id=subscription.user_id,
        event_type=WEBHOOK_DISABLED,
        payloads=[present_subscription(subscription)],
        job_id=None,
    )
    log.warning(
        "webhook turned off: every attempt to it failed for the whole window",
        subscription_id=subscription.id,
        user_id=subscription.user_id,
        failing_since=isoformat(subscription.failing_since),
        window_seconds=disable_after.total_seconds(),
        reason=failure.reason,
        notified=notified,
    )

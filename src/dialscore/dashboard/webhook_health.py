"""How a webhook's endpoint answers, as its page in the web app says it: its figures over the
last 24 hours and the words for answer times, windows and failed attempts."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.clock import utcnow
from dialscore.models import WebhookAttempt
from dialscore.webhooks import repository as repo

# The window of the health figures, and how often the page reloads itself while deliveries
# are pending (app.js: only while nobody is typing in one of its forms).
HEALTH_WINDOW = timedelta(hours=24)
RELOAD_SECONDS = 10


def duration_words(ms: float) -> str:
    """An answer time as people write it: "85 ms", "1.2 s"."""
    if ms < 999.5:
        return f"{round(ms)} ms"
    return f"{ms / 1000:.1f} s".replace(".0 s", " s")


def window_words(window: timedelta) -> str:
    """A length of time as people say it, in its two largest units: "5 days",
    "1 hour 30 minutes", "45 seconds"."""
    left = max(0, round(window.total_seconds()))
    parts = []
    for name, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count} {name}{'s' if count != 1 else ''}")
    return " ".join(parts[:2]) or "0 seconds"


def attempt_reason(attempt: WebhookAttempt) -> str:
    """Why an attempt failed, as the delivery log words it: its error, else its status
    code."""
    if attempt.error:
        return attempt.error
    return f"status code {attempt.status_code}" if attempt.status_code is not None else "—"


@dataclass(frozen=True)
class Health:
    """The figures of the page's "How the endpoint answers" section."""

    successes: int
    failures: int
    last_success_at: datetime | None
    last_failure_at: datetime | None
    last_failure_reason: str
    pending: int
    typical: str
    slowest: str

    @property
    def anything_sent(self) -> bool:
        return self.last_success_at is not None or self.last_failure_at is not None


async def endpoint_health(session: AsyncSession, subscription_id: str) -> Health:
    """The figures of a subscription's "How the endpoint answers" section."""
    found = await repo.endpoint_health(session, subscription_id, since=utcnow() - HEALTH_WINDOW)
    durations = found.durations_ms
    failure = found.last_failure
    return Health(
        successes=found.successes,
        failures=found.failures,
        last_success_at=found.last_success_at,
        last_failure_at=failure.attempted_at if failure else None,
        last_failure_reason=attempt_reason(failure) if failure else "",
        pending=found.pending,
        typical=duration_words(statistics.median(durations)) if durations else "",
        slowest=duration_words(found.slowest_ms) if found.slowest_ms is not None else "",
    )

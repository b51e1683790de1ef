"""Retry policy of webhook deliveries (D23): pure, but for reading it from the settings."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from dialscore.config import Settings

# Seconds to wait after each failed attempt: the eleventh attempt comes about three days
# after the first.
DEFAULT_SCHEDULE: tuple[float, ...] = (
    30, 120, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 24 * 3600,
)  # fmt: skip
RETRY_WINDOW = timedelta(days=3)
JITTER = 0.1

Outcome = Literal["delivered", "retry", "failed"]


def classify(status_code: int | None) -> Outcome:
    """What an answer means; None stands for a connection error or a timeout."""
    if status_code is None:
        return "retry"
    if 200 <= status_code < 300:
        return "delivered"
    if status_code in (408, 429) or status_code >= 500:
        return "retry"
    return "failed"


@dataclass(frozen=True)
class RetryPolicy:
    schedule: tuple[float, ...] = DEFAULT_SCHEDULE
    window: timedelta = RETRY_WINDOW
    jitter: float = JITTER

    def next_attempt(
        self,
        *,
        attempts: int,
        first_attempt_at: datetime,
        now: datetime,
        retry_after: float | None,
        rng: random.Random,
    ) -> datetime | None:
        """When to try again after ``attempts`` failed attempts; None when it is over."""
        if attempts > len(self.schedule):
            return None
        delay = self.schedule[attempts - 1]
        if self.jitter:
            delay *= 1 + rng.uniform(-self.jitter, self.jitter)
        if retry_after is not None:
            delay = max(delay, retry_after)
        when = now + timedelta(seconds=delay)
        if when > first_attempt_at + self.window:
            return None
        return when


def parse_schedule(text: str) -> tuple[float, ...]:
    values = tuple(float(part) for part in text.split(",") if part.strip())
    if not values or any(v < 0 for v in values):
        raise ValueError("a retry schedule is a comma-separated list of seconds, each >= 0")
    return values


def policy_from(settings: Settings) -> RetryPolicy:
    """The configured schedule (else the default one) with the configured jitter."""
    schedule = DEFAULT_SCHEDULE
    if settings.webhook_retry_schedule:
        schedule = parse_schedule(settings.webhook_retry_schedule)
    return RetryPolicy(schedule=schedule, jitter=settings.webhook_retry_jitter)

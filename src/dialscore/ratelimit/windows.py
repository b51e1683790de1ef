"""Window arithmetic of the request rate limits. Pure: times in, windows and decisions out.

Windows are aligned to the clock: a second window ends at the next whole second, a minute
window at the next whole minute, the day window at midnight UTC (Unix time counts days from
a UTC midnight, without leap seconds, so a day window is 86,400 whole seconds)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

TierName = Literal["second", "minute", "day"]


@dataclass(frozen=True)
class Tier:
    name: TierName
    seconds: int

    def window(self, now_ms: int) -> int:
        """The index of the window holding ``now_ms`` (milliseconds since the epoch)."""
        return now_ms // (self.seconds * 1000)

    def reset(self, now_ms: int) -> int:
        """When the window holding ``now_ms`` ends, in whole Unix seconds."""
        return (self.window(now_ms) + 1) * self.seconds

    def ttl_ms(self, now_ms: int) -> int:
        """Milliseconds until the window ends (at least 1)."""
        return max(1, self.reset(now_ms) * 1000 - now_ms)


TIERS: tuple[Tier, ...] = (Tier("second", 1), Tier("minute", 60), Tier("day", 86_400))


@dataclass(frozen=True)
class TierState:
    tier: TierName
    limit: int
    remaining: int
    reset: int


@dataclass(frozen=True)
class Decision:
    allowed: bool
    states: tuple[TierState, ...]
    blocked: TierName | None
    retry_after: float

    @property
    def retry_after_header(self) -> int:
        """Retry-After carries whole seconds, rounded up (D26)."""
        return math.ceil(self.retry_after)


def decide(counts: dict[TierName, int], limits: dict[TierName, int], now_ms: int) -> Decision:
    """The answer for a request whose tiers now count ``counts`` (this request included).

    Allowed when no tier is over its limit. When one is, the blocking tier is the most
    restrictive exceeded one: the one whose window ends last, so waiting for it clears all."""
    states = []
    exceeded: list[tuple[int, int, TierName]] = []
    for index, tier in enumerate(TIERS):
        count, limit = counts[tier.name], limits[tier.name]
        reset = tier.reset(now_ms)
        states.append(TierState(tier.name, limit, max(0, limit - count), reset))
        if count > limit:
            # On a tie (a second ending with its minute) the longer tier is named.
            exceeded.append((reset, index, tier.name))
    if not exceeded:
        return Decision(True, tuple(states), None, 0.0)
    reset, _, name = max(exceeded)
    return Decision(False, tuple(states), name, max(0, reset * 1000 - now_ms) / 1000)

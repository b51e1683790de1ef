"""Delivery rate per (user, event type): each send reserves the next free slot of its key.

Slots are spaced by 1/rate seconds, so no second-long window ever holds more than ``rate``
sends. In memory for one machine; in Redis, on the Redis clock, for many."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

# A little more than 1/rate between sends keeps receivers' own clocks from seeing rate + 1.
_MARGIN_SECONDS = 0.002

_RESERVE = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local interval = tonumber(ARGV[1])
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local slot = math.max(free, now_ms)
redis.call('SET', KEYS[1], slot + interval, 'PX', math.max(1000, slot + interval - now_ms + 1000))
return slot - now_ms
"""


class DeliveryRateLimiter(Protocol):
    async def wait_for_slot(self, key: str, rate: float) -> None: ...


def _interval(rate: float) -> float:
    return 1.0 / rate + _MARGIN_SECONDS


class MemoryRateLimiter:
    def __init__(self) -> None:
        self._next_free: dict[str, float] = {}

    async def wait_for_slot(self, key: str, rate: float) -> None:
        now = time.monotonic()
        slot = max(self._next_free.get(key, 0.0), now)
        self._next_free[key] = slot + _interval(rate)
        if slot > now:
            await asyncio.sleep(slot - now)


class RedisRateLimiter:
    def __init__(self, client: Any, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._script = client.register_script(_RESERVE)

    async def wait_for_slot(self, key: str, rate: float) -> None:
        interval_ms = max(1, round(_interval(rate) * 1000))
        wait_ms = await self._script(
            keys=[f"{self._namespace}:webhook-rate:{key}"], args=[interval_ms]
        )
        if wait_ms > 0:
            await asyncio.sleep(wait_ms / 1000)

"""Delivery rate per (user, event type): at most ``rate`` sends start in any window of a
second (plus a small margin for receivers' clocks), checked at the moment of sending.

A sliding log of send times, in memory for one machine, and in Redis on the Redis clock for
many, so every worker sharing a key shares one limit."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from typing import Any, Protocol

# Receivers see arrival times that vary by a few milliseconds; a slightly longer window
# keeps any second they measure within the rate.
WINDOW_SECONDS = 1.025

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1000)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
"""


class DeliveryRateLimiter(Protocol):
    async def wait_for_slot(self, key: str, rate: float) -> None:
        """Returns when a send for ``key`` may start now, and counts it."""
        ...


def _limit(rate: float) -> int:
    return max(1, int(rate))


class MemoryRateLimiter:
    def __init__(self) -> None:
        self._sent: dict[str, deque[float]] = {}

    async def wait_for_slot(self, key: str, rate: float) -> None:
        limit = _limit(rate)
        while True:
            now = time.monotonic()
            sent = self._sent.setdefault(key, deque())
            while sent and sent[0] <= now - WINDOW_SECONDS:
                sent.popleft()
            # No await between the check and the append: one event loop makes it atomic.
            if len(sent) < limit:
                sent.append(now)
                return
            await asyncio.sleep(sent[0] + WINDOW_SECONDS - now)


class RedisRateLimiter:
    def __init__(self, client: Any, namespace: str) -> None:
        self._namespace = namespace
        self._script = client.register_script(_ACQUIRE)

    async def wait_for_slot(self, key: str, rate: float) -> None:
        window_us = int(WINDOW_SECONDS * 1_000_000)
        while True:
            wait_us = await self._script(
                keys=[f"{self._namespace}:webhook-rate:{{{key}}}"],
                args=[window_us, _limit(rate), uuid.uuid4().hex],
            )
            if int(wait_us) <= 0:
                return
            await asyncio.sleep(int(wait_us) / 1_000_000)

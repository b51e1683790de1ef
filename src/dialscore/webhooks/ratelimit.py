"""Delivery rate per (user, event type): at most ``rate`` sends start in any window of a
second (plus a small margin for receivers' clocks), checked at the moment of sending. A send
may be counted under several keys at once (its user's and its subscription's own rate, P141):
it starts only when every one of them has room, and is counted in each.

A rate below 1 allows one send per window of ``1 / rate`` seconds (plus the margin); a
fractional rate above 1 is taken down to whole sends per second.

A sliding log of send times, in memory for one machine, and in Redis on the Redis clock for
many, so every worker sharing a key shares one limit. When Redis cannot be reached, the
request limits' failure mode applies (P27, P81): ``fail-open`` counts in this process until
Redis answers again, ``fail-closed`` sends nothing (``RateUnavailable``) and the dispatcher
claims nothing until Redis answers; Redis is tried again once a second either way."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import redis.asyncio
import structlog
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from dialscore.config import Settings

log = structlog.get_logger(__name__)

# Receivers see arrival times that vary by a few milliseconds; a slightly longer window
# keeps any second they measure within the rate.
WINDOW_SECONDS = 1.025
# After Redis fails, how long the limiter goes without it before trying again.
REDIS_RETRY_SECONDS = 1.0
# What a call to Redis raises when Redis cannot answer it (an error reply included).
REDIS_FAILURES = (RedisError, OSError)

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


class RateUnavailable(Exception):
    """The shared rate cannot be checked (Redis is away) and the operator chose fail-closed:
    nothing may be sent until it can."""


# A rate key and its sends per second.
Slot = tuple[str, float]


class DeliveryRateLimiter(Protocol):
    async def wait_for_slot(self, key: str, rate: float) -> None:
        """Returns when a send for ``key`` may start now, and counts it; raises
        ``RateUnavailable`` when no send may start at all for now."""
        ...

    async def wait_for_slots(self, slots: Sequence[Slot]) -> None:
        """Returns when a send may start now under every key of ``slots`` at its rate, and
        counts it under each; raises ``RateUnavailable`` when no send may start for now."""
        ...

    async def available(self) -> bool:
        """Whether sends may be started (and so deliveries claimed) now."""
        ...

    async def close(self) -> None: ...


def _limit(rate: float) -> int:
    return max(1, int(rate))


def _window(rate: float) -> float:
    """The window in which ``_limit(rate)`` sends may start: a second and the margin, longer
    for a rate below one a second."""
    return WINDOW_SECONDS / rate if 0 < rate < 1 else WINDOW_SECONDS


class MemoryRateLimiter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._sent: dict[str, deque[float]] = {}

    def try_acquire(self, key: str, rate: float) -> float:
        """Counts a send now and returns 0, or returns the seconds until one may start."""
        return self.try_acquire_all(((key, rate),))

    def try_acquire_all(self, slots: Sequence[Slot]) -> float:
        """Counts a send now under every key of ``slots`` and returns 0, or, when one has no
        room, counts nothing and returns the seconds until all may have."""
        now = self._clock()
        wait = max((self._wait(key, rate, now) for key, rate in slots), default=0.0)
        if wait > 0:
            return wait
        # No await between the checks and the appends: one event loop makes them atomic.
        for key, _ in slots:
            self._sent[key].append(now)
        return 0.0

    def _wait(self, key: str, rate: float, now: float) -> float:
        """The seconds until ``key`` has room for a send at ``rate``; 0 when it has now."""
        window = _window(rate)
        sent = self._sent.setdefault(key, deque())
        while sent and sent[0] <= now - window:
            sent.popleft()
        if len(sent) < _limit(rate):
            return 0.0
        return sent[0] + window - now

    async def wait_for_slot(self, key: str, rate: float) -> None:
        await self.wait_for_slots(((key, rate),))

    async def wait_for_slots(self, slots: Sequence[Slot]) -> None:
        while (wait := self.try_acquire_all(slots)) > 0:
            await asyncio.sleep(wait)

    async def available(self) -> bool:
        return True

    async def close(self) -> None:
        self._sent.clear()


class RedisRateLimiter:
    """The sliding logs in Redis, on a ``redis.asyncio`` client (see ``redis_client``)."""

    def __init__(self, client: Any, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._script = client.register_script(_ACQUIRE)

    def key(self, key: str) -> str:
        return f"{self._namespace}:webhook-rate:{{{key}}}"

    async def try_acquire(self, key: str, rate: float) -> float:
        """Counts a send now and returns 0, or returns the seconds until one may start."""
        return await self.try_acquire_all(((key, rate),))

    async def try_acquire_all(self, slots: Sequence[Slot]) -> float:
        """Counts a send now under every key of ``slots`` and returns 0, or returns the
        seconds until the first key without room may have it. One script per key, since
        each key is its own hash tag (its own Redis Cluster slot): the keys are taken in
        order, and when one has no room the send counted under those before it is taken
        back, so a send is counted only once it may start under all of them."""
        taken: list[tuple[str, str]] = []
        for key, rate in slots:
            member = uuid.uuid4().hex
            wait_us = await self._script(
                keys=[self.key(key)],
                args=[int(_window(rate) * 1_000_000), _limit(rate), member],
            )
            wait = max(0, int(wait_us)) / 1_000_000
            if wait > 0:
                for earlier, counted in taken:
                    await self._client.zrem(self.key(earlier), counted)
                return wait
            taken.append((key, member))
        return 0.0

    async def wait_for_slot(self, key: str, rate: float) -> None:
        await self.wait_for_slots(((key, rate),))

    async def wait_for_slots(self, slots: Sequence[Slot]) -> None:
        while (wait := await self.try_acquire_all(slots)) > 0:
            await asyncio.sleep(wait)

    async def available(self) -> bool:
        return True

    async def ping(self) -> None:
        await self._client.ping()

    async def close(self) -> None:
        await self._client.aclose()


def redis_client(url: str, *, timeout: float) -> Any:
    """A client that fails a call quickly when Redis cannot answer it within ``timeout``:
    the limiter decides when to try again. One immediate retry, on a new connection, so that
    the pooled connections a restarted Redis closed do not each count as an outage."""
    return redis.asyncio.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 1),
    )


class SharedRateLimiter:
    """The Redis limiter, with the failure mode for when Redis cannot be reached: one log
    line when an outage starts and one when it ends, Redis tried again once a second (by
    ``clock``)."""

    def __init__(
        self,
        redis: RedisRateLimiter,
        *,
        fail_closed: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis = redis
        self.fail_closed = fail_closed
        self.fallback = MemoryRateLimiter()
        self._clock = clock
        self._down = False
        self._skip_redis_until = 0.0

    @property
    def down(self) -> bool:
        return self._down

    def _redis_due(self) -> bool:
        return not self._down or self._clock() >= self._skip_redis_until

    def _failed(self, exc: Exception) -> None:
        self._skip_redis_until = self._clock() + REDIS_RETRY_SECONDS
        if not self._down:
            self._down = True
            log.error(
                "webhook delivery rate cannot reach Redis",
                error=str(exc) or type(exc).__name__,
                mode="fail-closed" if self.fail_closed else "fail-open",
                consequence="holding deliveries back"
                if self.fail_closed
                else "counting in this process only",
            )

    def _reached(self) -> None:
        if self._down:
            self._down = False
            log.warning("webhook delivery rate reaches Redis again; deliveries share it again")

    async def wait_for_slot(self, key: str, rate: float) -> None:
        await self.wait_for_slots(((key, rate),))

    async def wait_for_slots(self, slots: Sequence[Slot]) -> None:
        while True:
            if self._redis_due():
                try:
                    wait = await self.redis.try_acquire_all(slots)
                except REDIS_FAILURES as exc:
                    self._failed(exc)
                else:
                    self._reached()
                    if wait <= 0:
                        return
                    await asyncio.sleep(wait)
                    continue
            if self.fail_closed:
                raise RateUnavailable("the webhook delivery rate cannot be checked: Redis is away")
            wait = self.fallback.try_acquire_all(slots)
            if wait <= 0:
                return
            await asyncio.sleep(min(wait, REDIS_RETRY_SECONDS))

    async def available(self) -> bool:
        if not self.fail_closed or not self._down:
            return True
        if not self._redis_due():
            return False
        try:
            await self.redis.ping()
        except REDIS_FAILURES as exc:
            self._failed(exc)
            return False
        self._reached()
        return True

    async def close(self) -> None:
        await self.redis.close()


def delivery_rate_limiter(settings: Settings) -> DeliveryRateLimiter:
    """In Redis when ``redis_url`` is set (with the configured failure mode), else in memory."""
    if not settings.redis_url:
        return MemoryRateLimiter()
    client = redis_client(settings.redis_url, timeout=settings.rate_limit_redis_timeout)
    return SharedRateLimiter(
        RedisRateLimiter(client, settings.redis_namespace),
        fail_closed=settings.rate_limit_failure_mode == "fail-closed",
    )

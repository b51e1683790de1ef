"""Webhook retry policy (D23) and delivery rate limiters, in memory and on a real Redis."""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st

from dialscore.config import Settings
from dialscore.kit.paced_http import parse_retry_after
from dialscore.webhooks.policy import (
    DEFAULT_SCHEDULE,
    RETRY_WINDOW,
    RetryPolicy,
    classify,
    parse_schedule,
    policy_from,
)
from dialscore.webhooks.ratelimit import DeliveryRateLimiter, MemoryRateLimiter, RedisRateLimiter

NOW = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
REDIS_URL = os.environ.get("DIALSCORE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# How much later than the limiter's own decision an acquisition may be measured here: a sleeping
# waiter (and on Redis the reply) can wake late on a loaded machine, so the second-long windows
# checked are shortened by this much. Lateness never makes an acquisition earlier, so the lower
# bounds on elapsed time are checked strictly.
TOLERANCE = 0.12

# -- classify -------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 201, 202, 204, 299])
def test_2xx_is_delivered(status: int) -> None:
    assert classify(status) == "delivered"


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 599, None])
def test_timeouts_throttling_server_errors_and_connection_errors_are_retried(
    status: int | None,
) -> None:
    assert classify(status) == "retry"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 409, 410, 422, 301, 302, 307, 308])
def test_other_4xx_and_3xx_fail_at_once(status: int) -> None:
    assert classify(status) == "failed"


# -- Retry-After ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [("0", 0.0), ("120", 120.0), (" 3600 ", 3600.0)])
def test_retry_after_in_seconds(value: str, expected: float) -> None:
    assert parse_retry_after(value, NOW) == expected


def test_retry_after_as_an_http_date_in_the_future() -> None:
    value = format_datetime(NOW + timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(value, NOW) == pytest.approx(90.0)


def test_retry_after_as_an_http_date_in_the_past_means_now() -> None:
    value = format_datetime(NOW - timedelta(hours=1), usegmt=True)
    assert parse_retry_after(value, NOW) == 0.0


@pytest.mark.parametrize("value", ["soon", "1.5.6", "Mon, 99 Foo 2025", "-", "abc123"])
def test_garbage_retry_after_is_ignored(value: str) -> None:
    assert parse_retry_after(value, NOW) is None


@pytest.mark.parametrize("value", ["", None])
def test_missing_retry_after_is_ignored(value: str | None) -> None:
    assert parse_retry_after(value, NOW) is None


# -- the schedule ---------------------------------------------------------------------------------


def test_the_default_schedule_puts_the_last_attempt_about_three_days_after_the_first() -> None:
    policy = RetryPolicy(jitter=0)
    rng = random.Random(1)
    first = now = NOW
    attempts = 1
    for _ in range(100):
        when = policy.next_attempt(
            attempts=attempts, first_attempt_at=first, now=now, retry_after=None, rng=rng
        )
        if when is None:
            break
        assert when - now == timedelta(seconds=DEFAULT_SCHEDULE[attempts - 1])
        now = when
        attempts += 1
    else:
        raise AssertionError("the schedule never ended")
    assert attempts == len(DEFAULT_SCHEDULE) + 1
    assert timedelta(days=2.5) <= now - first <= timedelta(days=3)
    assert timedelta(days=3) == RETRY_WINDOW


def test_no_attempt_after_the_schedule_is_exhausted() -> None:
    policy = RetryPolicy()
    for extra in (1, 2, 10):
        assert (
            policy.next_attempt(
                attempts=len(DEFAULT_SCHEDULE) + extra,
                first_attempt_at=NOW,
                now=NOW,
                retry_after=None,
                rng=random.Random(0),
            )
            is None
        )


def test_no_attempt_beyond_the_window() -> None:
    policy = RetryPolicy(jitter=0)
    late = NOW + RETRY_WINDOW - timedelta(seconds=10)
    assert (
        policy.next_attempt(
            attempts=1, first_attempt_at=NOW, now=late, retry_after=None, rng=random.Random(0)
        )
        is None
    )
    just_in = NOW + RETRY_WINDOW - timedelta(seconds=DEFAULT_SCHEDULE[0])
    assert (
        policy.next_attempt(
            attempts=1, first_attempt_at=NOW, now=just_in, retry_after=None, rng=random.Random(0)
        )
        == NOW + RETRY_WINDOW
    )


def test_jitter_stays_within_ten_percent_and_varies() -> None:
    policy = RetryPolicy()
    rng = random.Random(20250304)
    for attempts, scheduled in enumerate(DEFAULT_SCHEDULE, start=1):
        delays = set()
        for _ in range(50):
            when = policy.next_attempt(
                attempts=attempts, first_attempt_at=NOW, now=NOW, retry_after=None, rng=rng
            )
            assert when is not None
            delay = (when - NOW).total_seconds()
            assert scheduled * 0.9 <= delay <= scheduled * 1.1, (attempts, delay)
            delays.add(delay)
        assert len(delays) > 1, "no jitter at all"
        # Jitter goes both ways.
        assert min(delays) < scheduled < max(delays)


def test_jitter_is_reproducible_from_the_seed() -> None:
    policy = RetryPolicy()

    def run(seed: int) -> list[datetime | None]:
        rng = random.Random(seed)
        return [
            policy.next_attempt(
                attempts=a, first_attempt_at=NOW, now=NOW, retry_after=None, rng=rng
            )
            for a in range(1, 6)
        ]

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_a_longer_retry_after_wins_and_a_shorter_one_does_not() -> None:
    policy = RetryPolicy(jitter=0)
    rng = random.Random(0)
    longer = policy.next_attempt(
        attempts=1, first_attempt_at=NOW, now=NOW, retry_after=3600.0, rng=rng
    )
    assert longer == NOW + timedelta(seconds=3600)
    shorter = policy.next_attempt(
        attempts=3, first_attempt_at=NOW, now=NOW, retry_after=5.0, rng=rng
    )
    assert shorter == NOW + timedelta(seconds=DEFAULT_SCHEDULE[2])


def test_a_longer_retry_after_wins_over_jitter_too() -> None:
    policy = RetryPolicy()
    when = policy.next_attempt(
        attempts=1, first_attempt_at=NOW, now=NOW, retry_after=7200.0, rng=random.Random(3)
    )
    assert when == NOW + timedelta(seconds=7200)


def test_a_retry_after_beyond_the_window_ends_the_delivery() -> None:
    policy = RetryPolicy()
    beyond = (RETRY_WINDOW + timedelta(seconds=1)).total_seconds()
    assert (
        policy.next_attempt(
            attempts=1, first_attempt_at=NOW, now=NOW, retry_after=beyond, rng=random.Random(0)
        )
        is None
    )
    later = NOW + timedelta(days=2)
    assert (
        policy.next_attempt(
            attempts=2,
            first_attempt_at=NOW,
            now=later,
            retry_after=timedelta(days=1, seconds=1).total_seconds(),
            rng=random.Random(0),
        )
        is None
    )


def test_parse_schedule_accepts_comma_separated_seconds() -> None:
    assert parse_schedule("1,2.5,10") == (1.0, 2.5, 10.0)
    assert parse_schedule(" 0 , 3 ") == (0.0, 3.0)
    policy = RetryPolicy(schedule=parse_schedule("1,2.5,10"), jitter=0)
    when = policy.next_attempt(
        attempts=2, first_attempt_at=NOW, now=NOW, retry_after=None, rng=random.Random(0)
    )
    assert when == NOW + timedelta(seconds=2.5)


@pytest.mark.parametrize("text", ["", " ", ",", "a,b", "1,x", "-1", "1,-0.5"])
def test_parse_schedule_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_schedule(text)


def configured(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg, arg-type]


def test_a_configured_schedule_keeps_its_jitter() -> None:
    """DIALSCORE_WEBHOOK_RETRY_SCHEDULE alone: the configured times, jittered by the default
    tenth either way, as the default schedule is."""
    policy = policy_from(configured(webhook_retry_schedule="10,20"))
    assert policy.schedule == (10.0, 20.0)
    assert policy.jitter == 0.1 == policy_from(configured()).jitter
    rng = random.Random(5)
    delays = set()
    for _ in range(50):
        when = policy.next_attempt(
            attempts=2, first_attempt_at=NOW, now=NOW, retry_after=None, rng=rng
        )
        assert when is not None
        delays.add((when - NOW).total_seconds())
    assert all(18 <= delay <= 22 for delay in delays)
    assert min(delays) < 20 < max(delays)


def test_jitter_is_off_only_when_set_to_zero() -> None:
    exact = policy_from(configured(webhook_retry_schedule="10,20", webhook_retry_jitter=0))
    when = exact.next_attempt(
        attempts=2, first_attempt_at=NOW, now=NOW, retry_after=None, rng=random.Random(5)
    )
    assert when == NOW + timedelta(seconds=20)
    wider = policy_from(configured(webhook_retry_jitter=0.3))
    assert (wider.schedule, wider.jitter) == (DEFAULT_SCHEDULE, 0.3)


def test_jitter_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALSCORE_WEBHOOK_RETRY_SCHEDULE", "1,2")
    monkeypatch.setenv("DIALSCORE_WEBHOOK_RETRY_JITTER", "0")
    assert policy_from(configured()) == RetryPolicy(schedule=(1.0, 2.0), jitter=0)
    monkeypatch.setenv("DIALSCORE_WEBHOOK_RETRY_JITTER", "1.5")
    with pytest.raises(ValueError, match="webhook_retry_jitter"):
        configured()


@settings(max_examples=300, deadline=None)
@given(
    attempts=st.integers(min_value=1, max_value=30),
    elapsed=st.floats(min_value=0, max_value=RETRY_WINDOW.total_seconds() * 1.2),
    retry_after=st.none() | st.floats(min_value=0, max_value=10 * 86400),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_a_next_attempt_is_always_after_now_and_within_the_window(
    attempts: int, elapsed: float, retry_after: float | None, seed: int
) -> None:
    now = NOW + timedelta(seconds=elapsed)
    when = RetryPolicy().next_attempt(
        attempts=attempts,
        first_attempt_at=NOW,
        now=now,
        retry_after=retry_after,
        rng=random.Random(seed),
    )
    if when is not None:
        assert now < when <= NOW + RETRY_WINDOW
        if retry_after is not None:
            assert when >= now + timedelta(seconds=retry_after)
    else:
        # None only when the schedule is over or the wait would leave the window.
        if attempts <= len(DEFAULT_SCHEDULE):
            longest = max(DEFAULT_SCHEDULE[attempts - 1] * 1.1, retry_after or 0)
            assert now + timedelta(seconds=longest) > NOW + RETRY_WINDOW


# -- rate limiters --------------------------------------------------------------------------------
# The contract (issue 3, "rate never above the configured per-user rate"): for one key, no
# second holds more than ``rate`` acquisitions; keys (and namespaces) do not share a budget.


async def _sequential(limiter: DeliveryRateLimiter, key: str, rate: float, n: int) -> list[float]:
    """The monotonic time each of ``n`` acquisitions in a row returned."""
    times = []
    for _ in range(n):
        await limiter.wait_for_slot(key, rate)
        times.append(time.monotonic())
    return times


async def _concurrent(limiter: DeliveryRateLimiter, key: str, rate: float, n: int) -> list[float]:
    """The monotonic times ``n`` simultaneous acquisitions returned, in order."""

    async def one() -> float:
        await limiter.wait_for_slot(key, rate)
        return time.monotonic()

    return sorted(await asyncio.gather(*(one() for _ in range(n))))


def _assert_within_rate(times: list[float], rate: float, start: float) -> None:
    """No second holds more than ``rate`` of ``times``, and so the i-th acquisition comes at
    least i // rate seconds after the start."""
    per_second = int(rate)
    assert len(times) > per_second, "too few acquisitions to test the rate"
    for i, t in enumerate(times):
        assert t - start >= i // per_second, (i, t - start)
    for i, t in enumerate(times):
        inside = sum(1 for u in times[i:] if u - t < 1.0 - TOLERANCE)
        assert inside <= rate, (i, inside, [round(u - start, 3) for u in times])


async def _assert_keys_independent(
    a: DeliveryRateLimiter, key_a: str, b: DeliveryRateLimiter, key_b: str
) -> None:
    """With ``key_a`` using up its second's budget and more waiting, ``key_b`` is served at
    once (sharing a budget, it would wait about a second); both keep within the rate."""
    rate, n = 20.0, 30
    start = time.monotonic()
    busy = asyncio.create_task(_concurrent(a, key_a, rate, n))
    await asyncio.sleep(0.05)
    before = time.monotonic()
    await b.wait_for_slot(key_b, rate)
    first_b = time.monotonic()
    rest_b = await _concurrent(b, key_b, rate, n - 1)
    times_a = await busy
    assert first_b - before < 0.3, f"the other key waited {first_b - before:.3f} s"
    _assert_within_rate(times_a, rate, start)
    _assert_within_rate(sorted([first_b, *rest_b]), rate, before)


async def test_memory_limiter_twenty_at_ten_per_second_take_at_least_a_second() -> None:
    limiter = MemoryRateLimiter()
    start = time.monotonic()
    times = await _sequential(limiter, "u1:job.contact.scored", 10, 20)
    _assert_within_rate(times, 10, start)
    assert times[10] - start >= 1.0
    assert times[-1] - start < 1.9 * 1.5 + 0.5, "throttled far more than the rate asks"


@pytest.mark.parametrize("mode", ["sequential", "concurrent"])
async def test_memory_limiter_never_exceeds_the_rate_in_any_second(mode: str) -> None:
    limiter = MemoryRateLimiter()
    rate, n = 20.0, 30
    run = _sequential if mode == "sequential" else _concurrent
    start = time.monotonic()
    times = await run(limiter, "u1:job.completed", rate, n)
    _assert_within_rate(times, rate, start)
    assert times[-1] - start < (n - 1) / rate * 1.5 + 0.5, "throttled far more than asked"


async def test_memory_limiter_keys_do_not_slow_each_other() -> None:
    limiter = MemoryRateLimiter()
    await _assert_keys_independent(
        limiter, "user-a:job.contact.scored", limiter, "user-b:job.contact.scored"
    )


async def test_memory_limiter_keys_with_different_rates_keep_their_own() -> None:
    """A faster key is not held back by a slower key."""
    limiter = MemoryRateLimiter()
    start = time.monotonic()
    slow, fast = await asyncio.gather(
        _concurrent(limiter, "slow", 10, 15), _concurrent(limiter, "fast", 50, 60)
    )
    _assert_within_rate(slow, 10, start)
    _assert_within_rate(fast, 50, start)
    # 15 at 10/s need more than a second; 60 at 50/s also do, but are not held to 10/s.
    assert sum(1 for t in fast if t <= slow[-1]) >= 50


# -- on Redis -------------------------------------------------------------------------------------

ClientFactory = Callable[[], Awaitable[aioredis.Redis]]


@pytest.fixture
def namespace() -> str:
    return f"dialscore-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def redis_clients(namespace: str) -> AsyncIterator[ClientFactory]:
    """Opens Redis clients on demand; removes the test's keys and closes them at the end."""
    clients: list[aioredis.Redis] = []

    async def open_client() -> aioredis.Redis:
        client = aioredis.Redis.from_url(REDIS_URL)
        await client.ping()
        clients.append(client)
        return client

    try:
        yield open_client
    finally:
        cleaner = aioredis.Redis.from_url(REDIS_URL)
        try:
            keys = [k async for k in cleaner.scan_iter(match=f"{namespace}:*", count=500)]
            if keys:
                await cleaner.delete(*keys)
        finally:
            await cleaner.aclose()
            for client in clients:
                await client.aclose()


@pytest.mark.parametrize("mode", ["sequential", "concurrent"])
async def test_redis_limiter_never_exceeds_the_rate_in_any_second(
    redis_clients: ClientFactory, namespace: str, mode: str
) -> None:
    client = await redis_clients()
    limiter = RedisRateLimiter(client, namespace)
    rate, n = 20.0, 30
    run = _sequential if mode == "sequential" else _concurrent
    start = time.monotonic()
    times = await run(limiter, "u1:job.contact.scored", rate, n)
    _assert_within_rate(times, rate, start)
    assert times[-1] - start < (n - 1) / rate * 1.5 + 0.5, "throttled far more than asked"
    # The state lives under the namespace and expires by itself.
    keys = [k async for k in client.scan_iter(match=f"{namespace}:*", count=500)]
    assert len(keys) == 1
    ttl = await client.pttl(keys[0])
    assert 0 < ttl <= 60_000


async def test_redis_limiters_on_two_clients_share_one_key_and_respect_the_rate(
    redis_clients: ClientFactory, namespace: str
) -> None:
    first = RedisRateLimiter(await redis_clients(), namespace)
    second = RedisRateLimiter(await redis_clients(), namespace)
    rate, n = 20.0, 15
    key = "u1:job.contact.scored"
    start = time.monotonic()
    one, two = await asyncio.gather(
        _concurrent(first, key, rate, n), _concurrent(second, key, rate, n)
    )
    _assert_within_rate(sorted(one + two), rate, start)


async def test_redis_limiter_keys_do_not_slow_each_other(
    redis_clients: ClientFactory, namespace: str
) -> None:
    await _assert_keys_independent(
        RedisRateLimiter(await redis_clients(), namespace),
        "user-a:job.contact.scored",
        RedisRateLimiter(await redis_clients(), namespace),
        "user-b:job.contact.scored",
    )


async def test_redis_limiter_namespaces_are_independent(
    redis_clients: ClientFactory, namespace: str
) -> None:
    client = await redis_clients()
    key = "u1:job.completed"
    await _assert_keys_independent(
        RedisRateLimiter(client, f"{namespace}:a"),
        key,
        RedisRateLimiter(client, f"{namespace}:b"),
        key,
    )

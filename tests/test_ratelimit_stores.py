"""The request counters (D25, D26): the memory store on a fake clock, the Redis store on the
real Redis and its clock, exact counts under concurrency, and the limiter when Redis fails,
times out or answers an error. The Redis link itself has its own tests (tests/test_resp.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis.asyncio
from redis.crc import key_slot
from structlog.testing import capture_logs

from dialscore.config import Settings
from dialscore.kit.resp import RedisLink, ReplyError
from dialscore.ratelimit import service
from dialscore.ratelimit.service import REDIS_RETRY_SECONDS, LimiterUnavailable, RequestLimiter
from dialscore.ratelimit.stores import Counts, MemoryStore, RedisStore
from dialscore.ratelimit.windows import TIERS, Decision, TierName
from tests.processes import REDIS_URL, redis_namespace

SECRET = "ratelimit-store-secret-key-long-enough-for-hs256"
DAY = TIERS[2]
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
BURST = 200
# Tiers a burst never reaches, so only the tier under test can refuse.
ROOMY: dict[TierName, int] = {"second": 1_000_000, "minute": 1_000_000, "day": 1_000_000}
OUTAGE_EVENT = "rate limiter cannot reach Redis"
RECOVERY_EVENT = "rate limiter reaches Redis again; limits are shared again"

CounterStoreUnderTest = MemoryStore | RedisStore


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def counts(second: int, minute: int, day: int) -> Counts:
    return {"second": second, "minute": minute, "day": day}


class FakeClock:
    """Milliseconds since the epoch, moved only by the test."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


class FakeMonotonic:
    """Stands in for the ``time`` module of the limiter, so its 1 s Redis pause can pass."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    # check() never reads the database; the URL only has to be valid.
    values: dict[str, Any] = {
        "database_url": f"sqlite:///{tmp_path / 'unused.db'}",
        "data_dir": tmp_path / "var",
        "secret_key": SECRET,
        "redis_url": None,
        "rate_limit_redis_timeout": 0.2,
    }
    values.update(overrides)
    return Settings(**values, _env_file=None)


def assert_exact(results: list[tuple[Counts, int]]) -> None:
    """Within each window (by the store's own clock) the counts are exactly 1..n: no count is
    given twice and none is lost. A burst may straddle a boundary; each window holds alone."""
    for tier in TIERS:
        seen: dict[int, list[int]] = defaultdict(list)
        for result_counts, now in results:
            seen[tier.window(now)].append(result_counts[tier.name])
        assert sum(len(values) for values in seen.values()) == len(results)
        for window, values in seen.items():
            assert sorted(values) == list(range(1, len(values) + 1)), (tier.name, window)


def allowed_per_second(decisions: list[Decision]) -> dict[int, tuple[int, int]]:
    """Second window (by its reset) -> (calls, allowed calls)."""
    windows: dict[int, list[bool]] = defaultdict(list)
    for decision in decisions:
        second_state = decision.states[0]
        assert second_state.tier == "second"
        windows[second_state.reset].append(decision.allowed)
    return {reset: (len(flags), sum(flags)) for reset, flags in windows.items()}


def outage_events(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == OUTAGE_EVENT]


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def namespace() -> Iterator[str]:
    with redis_namespace() as name:
        yield name


@pytest.fixture
async def client() -> AsyncIterator[redis.asyncio.Redis]:
    connection = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        yield connection
    finally:
        await connection.aclose()


@pytest.fixture
async def redis_store(namespace: str) -> AsyncIterator[RedisStore]:
    store = RedisStore(RedisLink(REDIS_URL, timeout=5), namespace)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture(params=["memory", "redis"])
async def store(
    request: pytest.FixtureRequest, namespace: str
) -> AsyncIterator[CounterStoreUnderTest]:
    """Each store on its real clock: the wall clock, or the Redis server's."""
    chosen: CounterStoreUnderTest = MemoryStore()
    if request.param == "redis":
        # One pipelined connection carries every concurrent call of the burst.
        chosen = RedisStore(RedisLink(REDIS_URL, timeout=5), namespace)
    try:
        yield chosen
    finally:
        await chosen.close()


@pytest.fixture
def fake_monotonic(monkeypatch: pytest.MonkeyPatch) -> FakeMonotonic:
    fake = FakeMonotonic()
    monkeypatch.setattr(service, "time", SimpleNamespace(monotonic=fake.monotonic))
    return fake


@contextlib.asynccontextmanager
async def limiter_of(settings: Settings) -> AsyncIterator[RequestLimiter]:
    limiter = RequestLimiter(settings)
    try:
        yield limiter
    finally:
        await limiter.close()


# -- the memory store on a fake clock -----------------------------------------------------------


async def test_memory_each_consuming_call_counts_once_in_every_tier() -> None:
    clock = FakeClock(ms("2026-11-22T10:15:30.100"))
    store = MemoryStore(clock)
    for expected in range(1, 6):
        assert await store.count("client:a", consume=True) == (
            counts(expected, expected, expected),
            clock.now_ms,
        )
    # The last millisecond of a second is still that second.
    clock.now_ms = ms("2026-11-22T10:15:30.999")
    assert await store.count("client:a", consume=True) == (counts(6, 6, 6), clock.now_ms)
    assert len(store) == 1


async def test_memory_reading_does_not_count_nor_create_entries() -> None:
    clock = FakeClock(ms("2026-11-22T10:15:30.100"))
    store = MemoryStore(clock)
    assert await store.count("client:a", consume=False) == (counts(0, 0, 0), clock.now_ms)
    assert len(store) == 0
    await store.count("client:a", consume=True)
    await store.count("client:a", consume=True)
    for _ in range(3):
        assert (await store.count("client:a", consume=False))[0] == counts(2, 2, 2)
    assert len(store) == 1
    # A read in the next second sees a fresh second window and leaves the counts alone.
    clock.now_ms = ms("2026-11-22T10:15:31.000")
    assert (await store.count("client:a", consume=False))[0] == counts(0, 2, 2)
    assert (await store.count("client:a", consume=True))[0] == counts(1, 3, 3)


async def test_memory_second_boundary_resets_only_the_second() -> None:
    clock = FakeClock(ms("2026-11-22T10:15:30.999"))
    store = MemoryStore(clock)
    for _ in range(3):
        await store.count("client:a", consume=True)
    clock.now_ms += 1
    assert (await store.count("client:a", consume=True))[0] == counts(1, 4, 4)
    assert (await store.count("client:a", consume=True))[0] == counts(2, 5, 5)


async def test_memory_minute_boundary_resets_second_and_minute() -> None:
    clock = FakeClock(ms("2026-11-22T10:15:59.999"))
    store = MemoryStore(clock)
    for _ in range(3):
        await store.count("client:a", consume=True)
    clock.now_ms += 1
    assert (await store.count("client:a", consume=True))[0] == counts(1, 1, 4)


async def test_memory_midnight_utc_resets_every_tier() -> None:
    clock = FakeClock(ms("2026-11-22T23:59:59.999"))
    store = MemoryStore(clock)
    for _ in range(3):
        await store.count("client:a", consume=True)
    clock.now_ms += 1
    assert (await store.count("client:a", consume=False))[0] == counts(0, 0, 0)
    assert (await store.count("client:a", consume=True))[0] == counts(1, 1, 1)
    # A day is the UTC day: an hour before midnight is still the same day window.
    clock.now_ms = ms("2026-11-23T23:00:00")
    assert (await store.count("client:a", consume=True))[0] == counts(1, 1, 2)


async def test_memory_keys_are_independent() -> None:
    clock = FakeClock(ms("2026-11-22T10:15:30.100"))
    store = MemoryStore(clock)
    for _ in range(4):
        await store.count("client:a", consume=True)
    assert (await store.count("client:b", consume=True))[0] == counts(1, 1, 1)
    assert (await store.count("ip:203.0.113.9", consume=False))[0] == counts(0, 0, 0)
    assert (await store.count("client:a", consume=True))[0] == counts(5, 5, 5)
    assert len(store) == 2


class SmallSweepStore(MemoryStore):
    SWEEP_EVERY = 4


async def test_memory_sweep_drops_keys_of_past_days() -> None:
    clock = FakeClock(ms("2026-11-22T18:00:00"))
    store = SmallSweepStore(clock)
    await store.count("client:yesterday-1", consume=True)
    await store.count("client:yesterday-2", consume=True)
    clock.now_ms = ms("2026-11-23T00:00:05")
    await store.count("client:today", consume=True)
    await store.count("client:today", consume=True)
    # Three keys so far: no sweep yet, so yesterday's keys are still held.
    assert len(store) == 3
    clock.now_ms = ms("2026-11-23T12:00:00")
    # The fourth new key sweeps. (It is counted twice so that this test does not depend on
    # the bug shown by test_bug_memory_sweep_forgets_the_key_that_triggers_it.)
    await store.count("client:new", consume=True)
    await store.count("client:new", consume=True)
    assert len(store) == 2
    # Today's key kept its count: it was not swept with the others.
    assert (await store.count("client:today", consume=True))[0] == counts(1, 1, 3)


async def test_memory_sweep_keeps_the_key_that_triggers_it() -> None:
    clock = FakeClock(ms("2026-11-23T12:00:00"))
    store = SmallSweepStore(clock)
    for name in ("client:a", "client:b", "client:c"):
        await store.count(name, consume=True)
    # The fourth new key triggers the sweep; every key is of today, so nothing may go.
    assert (await store.count("client:d", consume=True))[0] == counts(1, 1, 1)
    assert len(store) == 4
    assert (await store.count("client:d", consume=True))[0] == counts(2, 2, 2)


async def test_memory_store_reads_its_clock_under_its_lock() -> None:
    # A thread that read the time before a boundary but counted after another thread counted
    # in the new second would move the window back and erase that count. Reading the clock
    # with the lock held rules the interleaving out.
    held: list[bool] = []
    store: MemoryStore

    def clock() -> int:
        held.append(store._lock.locked())
        return ms("2026-11-22T10:15:31")

    store = MemoryStore(clock)
    await store.count("client:a", consume=True)
    await store.count("client:a", consume=False)
    await store.count("client:b", consume=False)
    assert held == [True, True, True]


# -- exact counts under concurrency, both stores ------------------------------------------------


async def test_a_burst_on_one_key_is_counted_exactly(store: CounterStoreUnderTest) -> None:
    results = await asyncio.gather(
        *(store.count("client:burst", consume=True) for _ in range(BURST))
    )
    assert len(results) == BURST
    assert_exact(results)
    final, now = await store.count("client:burst", consume=False)
    # Everything counted is still there: the day window holds the whole burst (unless the
    # burst straddled midnight UTC, then the count is of the new day only).
    assert final["day"] == sum(1 for _, at in results if DAY.window(at) == DAY.window(now))


async def test_interleaved_keys_never_affect_each_other(store: CounterStoreUnderTest) -> None:
    keys = ("client:a", "client:b", "ip:203.0.113.9")
    calls = [keys[i % len(keys)] for i in range(BURST)]
    results = await asyncio.gather(*(store.count(key, consume=True) for key in calls))
    for key in keys:
        assert_exact([result for name, result in zip(calls, results, strict=True) if name == key])
    assert (await store.count("client:untouched", consume=False))[0] == counts(0, 0, 0)


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_limiter_allows_exactly_the_limit_per_window(
    backend: str, tmp_path: Path, namespace: str
) -> None:
    limit, minute_limit = 7, 1_000_000
    limits: dict[TierName, int] = {"second": limit, "minute": minute_limit, "day": 1_000_000}
    redis_url = REDIS_URL if backend == "redis" else None
    # A minute to reach Redis, as for the bursts below: on a busy machine a connection took
    # longer than the tests' 0.2 s, and this app counted alone for a moment (failing open).
    settings = make_settings(
        tmp_path, redis_url=redis_url, redis_namespace=namespace, rate_limit_redis_timeout=60.0
    )
    async with limiter_of(settings) as limiter:
        decisions = await asyncio.gather(
            *(limiter.check("client:a", limits, consume=True) for _ in range(60))
        )
    windows = allowed_per_second(decisions)
    for reset, (calls, allowed) in windows.items():
        assert allowed == min(limit, calls), reset
    # 60 calls in at most a few windows: some were refused, by the second tier.
    assert any(calls > limit for calls, _ in windows.values())
    refused = [d for d in decisions if not d.allowed]
    assert refused
    assert all(d.blocked == "second" and 0 < d.retry_after <= 1 for d in refused)
    # Refused calls count too: the minute's remaining values step down by one per call.
    by_minute: dict[int, list[int]] = defaultdict(list)
    for decision in decisions:
        by_minute[decision.states[1].reset].append(decision.states[1].remaining)
    for values in by_minute.values():
        assert sorted(values, reverse=True) == [minute_limit - i for i in range(1, len(values) + 1)]


@pytest.mark.parametrize("mode", ["fail-open", "fail-closed"])
async def test_a_burst_of_checks_is_not_an_outage(
    mode: str, tmp_path: Path, namespace: str, client: redis.asyncio.Redis
) -> None:
    # A minute for each call (the default is a quarter): the timeout runs on the event loop,
    # and on a busy 2-core machine a burst in one loop kept a reply unread for longer than a
    # quarter, without any outage of Redis (the HTTP burst test's, over five seconds).
    settings = make_settings(
        tmp_path,
        redis_url=REDIS_URL,
        redis_namespace=namespace,
        rate_limit_failure_mode=mode,
        rate_limit_redis_timeout=60.0,
    )
    with capture_logs() as logs:
        async with limiter_of(settings) as limiter:
            results = await asyncio.gather(
                *(limiter.check("client:a", ROOMY, consume=True) for _ in range(BURST)),
                return_exceptions=True,
            )
    failures = [result for result in results if isinstance(result, BaseException)]
    day_key = RedisStore(RedisLink(REDIS_URL, timeout=5), namespace).keys("client:a")[2]
    shared_day_count = int(await client.hget(day_key, "c") or 0)
    assert (len(failures), len(outage_events(logs)), shared_day_count) == (0, 0, BURST), failures[
        :1
    ]


# -- the Redis store ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["client:0b7f0a9e-3f1c-4f5e-9d55-0c1a2b3c4d5e", "ip:203.0.113.9", "ip:2001:db8::1"]
)
async def test_redis_keys_share_one_hash_tag(redis_store: RedisStore, key: str) -> None:
    keys = redis_store.keys(key)
    assert len(keys) == len(TIERS) == len(set(keys))

    def tag(name: str) -> str:
        start = name.index("{")
        return name[start + 1 : name.index("}", start)]

    assert {tag(name) for name in keys} == {key}
    # The slot a Redis Cluster would place each key in (which applies the hash tag rules).
    assert len({key_slot(name.encode()) for name in keys}) == 1


async def test_redis_keys_expire_after_their_window(
    redis_store: RedisStore, client: redis.asyncio.Redis
) -> None:
    result_counts, now = await redis_store.count("client:a", consume=True)
    assert result_counts == counts(1, 1, 1)
    for tier, name in zip(TIERS, redis_store.keys("client:a"), strict=True):
        size = tier.seconds * 1000
        ttl = await client.pttl(name)
        assert 0 < ttl <= size + 1000, (tier.name, ttl)
        assert 0 < ttl <= tier.ttl_ms(now) + 1000, (tier.name, ttl)
        # Exactly one second after the end of the window the count belongs to.
        assert await client.pexpiretime(name) == (tier.window(now) + 1) * size + 1000
    assert 0 < await client.pttl(redis_store.keys("client:a")[2]) <= 86_401_000


async def test_redis_store_uses_the_redis_server_clock(
    redis_store: RedisStore, client: redis.asyncio.Redis
) -> None:
    seconds, micros = await client.time()
    before = seconds * 1000 + micros // 1000
    _, now = await redis_store.count("client:a", consume=True)
    _, read_now = await redis_store.count("client:a", consume=False)
    seconds, micros = await client.time()
    after = seconds * 1000 + micros // 1000
    assert before <= now <= read_now <= after
    assert after - before < 1000


async def test_redis_reading_creates_no_keys(
    redis_store: RedisStore, client: redis.asyncio.Redis
) -> None:
    assert (await redis_store.count("client:a", consume=False))[0] == counts(0, 0, 0)
    assert await client.exists(*redis_store.keys("client:a")) == 0
    await redis_store.count("client:a", consume=True)
    last_counts, counted_at = await redis_store.count("client:a", consume=True)
    assert await client.exists(*redis_store.keys("client:a")) == len(TIERS)
    stored = [await client.hgetall(name) for name in redis_store.keys("client:a")]
    expiries = [await client.pexpiretime(name) for name in redis_store.keys("client:a")]
    read_counts, read_at = await redis_store.count("client:a", consume=False)
    for tier in TIERS:
        # The count stands while the read is in the same window; a later window reads 0.
        same = tier.window(read_at) == tier.window(counted_at)
        assert read_counts[tier.name] == (last_counts[tier.name] if same else 0), tier.name
    # The read changed nothing.
    assert [await client.hgetall(name) for name in redis_store.keys("client:a")] == stored
    assert [await client.pexpiretime(name) for name in redis_store.keys("client:a")] == expiries


async def test_redis_count_of_an_earlier_window_does_not_carry_over(
    redis_store: RedisStore, client: redis.asyncio.Redis
) -> None:
    # As a key left over from an earlier window (its expiry not yet passed) would hold.
    for name in redis_store.keys("client:a"):
        await client.hset(name, mapping={"w": 1, "c": 50})
        await client.pexpire(name, 60_000)
    assert (await redis_store.count("client:a", consume=False))[0] == counts(0, 0, 0)
    assert await client.hget(redis_store.keys("client:a")[0], "c") == b"50"
    assert (await redis_store.count("client:a", consume=True))[0] == counts(1, 1, 1)


# -- the limiter with Redis reachable: shared counts ----------------------------------------


async def test_limiters_of_one_redis_share_counts(tmp_path: Path, namespace: str) -> None:
    limit = 4
    limits: dict[TierName, int] = {"second": limit, "minute": 1_000_000, "day": 1_000_000}
    settings = make_settings(tmp_path, redis_url=REDIS_URL, redis_namespace=namespace)
    async with limiter_of(settings) as first, limiter_of(settings) as second:
        for _ in range(3):
            await first.check("client:a", limits, consume=True)
        decision = await second.check("client:a", ROOMY, consume=False)
        assert decision.states[2].remaining == 1_000_000 - 3
        # Two API processes: a burst split between them is limited as one.
        decisions = await asyncio.gather(
            *(
                (first if i % 2 else second).check("client:b", limits, consume=True)
                for i in range(40)
            )
        )
        for reset, (calls, allowed) in allowed_per_second(decisions).items():
            assert allowed == min(limit, calls), reset
        day_remaining = (await first.check("client:b", ROOMY, consume=False)).states[2].remaining
        assert day_remaining == 1_000_000 - 40
    # Another namespace (another deployment on the same Redis) counts apart.
    with redis_namespace() as other_namespace:
        other = make_settings(tmp_path, redis_url=REDIS_URL, redis_namespace=other_namespace)
        async with limiter_of(other) as apart:
            decision = await apart.check("client:b", ROOMY, consume=False)
            assert decision.states[2].remaining == 1_000_000


# -- the limiter with Redis unreachable ---------------------------------------------------------


async def test_fail_open_counts_in_memory_and_logs_once(
    tmp_path: Path, fake_monotonic: FakeMonotonic
) -> None:
    limit = 3
    limits: dict[TierName, int] = {"second": limit, "minute": 1_000_000, "day": 1_000_000}
    settings = make_settings(tmp_path, redis_url=UNREACHABLE_REDIS)
    assert settings.rate_limit_failure_mode == "fail-open"
    with capture_logs() as logs:
        async with limiter_of(settings) as limiter:
            decisions = await asyncio.gather(
                *(limiter.check("client:a", limits, consume=True) for _ in range(10))
            )
            # Within the pause, Redis is not tried; then it is tried again and fails again.
            decisions.append(await limiter.check("client:a", limits, consume=True))
            fake_monotonic.now += REDIS_RETRY_SECONDS + 0.5
            decisions.append(await limiter.check("client:a", limits, consume=True))
            fake_monotonic.now += REDIS_RETRY_SECONDS + 0.5
            decisions.append(await limiter.check("client:a", limits, consume=True))
            day_left = (await limiter.check("client:a", ROOMY, consume=False)).states[2].remaining
    windows = allowed_per_second(decisions)
    for reset, (calls, allowed) in windows.items():
        assert allowed == min(limit, calls), reset
    assert any(calls > limit for calls, _ in windows.values())
    # The memory counters counted all 13 calls, refused ones too.
    assert day_left == 1_000_000 - 13
    events = outage_events(logs)
    assert len(events) == 1, logs
    assert events[0]["log_level"] == "error"
    assert events[0]["mode"] == "fail-open"
    assert events[0]["consequence"] == "counting in this process only"
    assert events[0]["error"]


async def test_fail_closed_raises_and_logs_once(
    tmp_path: Path, fake_monotonic: FakeMonotonic
) -> None:
    settings = make_settings(
        tmp_path, redis_url=UNREACHABLE_REDIS, rate_limit_failure_mode="fail-closed"
    )
    with capture_logs() as logs:
        async with limiter_of(settings) as limiter:
            for _ in range(3):
                with pytest.raises(LimiterUnavailable):
                    await limiter.check("client:a", ROOMY, consume=True)
            with pytest.raises(LimiterUnavailable):
                await limiter.check("client:a", ROOMY, consume=False)
            fake_monotonic.now += REDIS_RETRY_SECONDS + 0.5
            results = await asyncio.gather(
                *(limiter.check("client:a", ROOMY, consume=True) for _ in range(5)),
                return_exceptions=True,
            )
            assert all(isinstance(result, LimiterUnavailable) for result in results), results
    events = outage_events(logs)
    assert len(events) == 1, logs
    assert events[0]["mode"] == "fail-closed"
    assert events[0]["consequence"] == "answering 503"


class RedisRelay:
    """A TCP relay in front of the real Redis that the test can cut and restore: an outage of
    the network between an API process and Redis, with Redis itself untouched. With ``silent``
    set, commands are swallowed: Redis never sees them and no reply comes."""

    def __init__(self) -> None:
        target = urlsplit(REDIS_URL)
        self._target = (target.hostname or "127.0.0.1", target.port or 6379)
        self.port = 0
        self.silent = False
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        parts = urlsplit(REDIS_URL)
        userinfo, _, _ = parts.netloc.rpartition("@")
        netloc = f"{userinfo}@127.0.0.1:{self.port}" if userinfo else f"127.0.0.1:{self.port}"
        return parts._replace(netloc=netloc).geturl()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        server, self._server = self._server, None
        server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await server.wait_closed()

    @property
    def running(self) -> bool:
        return self._server is not None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        self._writers.update((writer, up_writer))
        pipes = [
            asyncio.create_task(self._pipe(reader, up_writer, commands=True)),
            asyncio.create_task(self._pipe(up_reader, writer, commands=False)),
        ]
        self._tasks.update(pipes)
        for pipe in pipes:
            pipe.add_done_callback(self._tasks.discard)

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, commands: bool
    ) -> None:
        try:
            while data := await reader.read(65536):
                if commands and self.silent:
                    continue
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            self._writers.discard(writer)


@pytest.fixture
async def relay() -> AsyncIterator[RedisRelay]:
    proxy = RedisRelay()
    await proxy.start()
    try:
        yield proxy
    finally:
        if proxy.running:
            await proxy.cut()


async def test_an_outage_falls_back_then_redis_is_used_again(
    tmp_path: Path,
    namespace: str,
    relay: RedisRelay,
    redis_store: RedisStore,
    fake_monotonic: FakeMonotonic,
) -> None:
    settings = make_settings(tmp_path, redis_url=relay.url, redis_namespace=namespace)

    async def shared_day_count() -> int:
        return (await redis_store.count("client:a", consume=False))[0]["day"]

    async def day_count(limiter: RequestLimiter) -> int:
        decision = await limiter.check("client:a", ROOMY, consume=True)
        return 1_000_000 - decision.states[2].remaining

    with capture_logs() as logs:
        async with limiter_of(settings) as limiter:
            assert [await day_count(limiter) for _ in range(2)] == [1, 2]
            assert await shared_day_count() == 2
            await relay.cut()
            # Redis is cut off: this process's own counters answer, starting from nothing.
            assert await day_count(limiter) == 1
            assert len(outage_events(logs)) == 1
            await relay.start()
            # Redis is back, but for a second after the failure it is not tried.
            assert await day_count(limiter) == 2
            assert await shared_day_count() == 2
            fake_monotonic.now += REDIS_RETRY_SECONDS + 0.01
            assert await day_count(limiter) == 3
            assert await shared_day_count() == 3
            assert await day_count(limiter) == 4
    assert len(outage_events(logs)) == 1, logs
    recoveries = [entry for entry in logs if entry["event"] == RECOVERY_EVENT]
    assert len(recoveries) == 1, logs
    assert recoveries[0]["log_level"] == "warning"


# -- the limiter when Redis times out or answers an error -------------------------------


async def test_a_timeout_falls_back_then_redis_is_used_again(
    tmp_path: Path,
    namespace: str,
    relay: RedisRelay,
    redis_store: RedisStore,
    fake_monotonic: FakeMonotonic,
) -> None:
    settings = make_settings(
        tmp_path, redis_url=relay.url, redis_namespace=namespace, rate_limit_redis_timeout=0.2
    )

    async def counted(limiter: RequestLimiter) -> int:
        decision = await limiter.check("client:a", ROOMY, consume=True)
        return 1_000_000 - decision.states[2].remaining

    with capture_logs() as logs:
        async with limiter_of(settings) as limiter:
            assert await counted(limiter) == 1
            relay.silent = True
            # Redis does not answer: this process's own counters answer, from nothing.
            assert await counted(limiter) == 1
            relay.silent = False
            assert await counted(limiter) == 2  # still within the pause after the failure
            fake_monotonic.now += REDIS_RETRY_SECONDS + 0.01
            assert await counted(limiter) == 2  # Redis again: its count goes on
            assert (await redis_store.count("client:a", consume=False))[0]["day"] == 2
    [outage] = outage_events(logs)
    assert "did not answer within 0.2 s" in outage["error"], outage
    assert [entry["event"] for entry in logs if entry["event"] == RECOVERY_EVENT] == [
        RECOVERY_EVENT
    ]


async def test_an_error_reply_is_reported_and_the_limiter_falls_back(
    tmp_path: Path,
    namespace: str,
    redis_store: RedisStore,
    client: redis.asyncio.Redis,
    fake_monotonic: FakeMonotonic,
) -> None:
    # A key of another type where a count belongs: Redis answers the script with WRONGTYPE.
    await client.set(redis_store.keys("client:a")[2], "not a hash")
    with pytest.raises(ReplyError, match="WRONGTYPE"):
        await redis_store.count("client:a", consume=True)
    settings = make_settings(tmp_path, redis_url=REDIS_URL, redis_namespace=namespace)
    with capture_logs() as logs:
        async with limiter_of(settings) as limiter:
            decision = await limiter.check("client:a", ROOMY, consume=True)
            assert decision.states[2].remaining == 1_000_000 - 1  # counted in memory
            fake_monotonic.now += REDIS_RETRY_SECONDS + 0.01
            decision = await limiter.check("client:b", ROOMY, consume=True)
    [outage] = outage_events(logs)
    assert "WRONGTYPE" in outage["error"], outage
    # Redis itself was fine: the next key was counted there.
    assert (await redis_store.count("client:b", consume=False))[0]["day"] == 1


async def test_a_redis_that_lost_the_script_is_sent_it_again(
    redis_store: RedisStore, client: redis.asyncio.Redis
) -> None:
    async def evalsha_calls() -> int:
        stats = await client.info("commandstats")
        return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))

    assert (await redis_store.count("client:a", consume=True))[0]["day"] == 1
    before = await evalsha_calls()
    await client.script_flush()  # as a restarted Redis would be
    assert (await redis_store.count("client:a", consume=True))[0]["day"] == 2
    # EVALSHA answered NOSCRIPT; the script was loaded and the call made again.
    assert await evalsha_calls() >= before + 2

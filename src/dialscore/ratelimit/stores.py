"""Where the request counters live: in this process's memory, or in Redis for many processes.

Both stores answer the same question in one step: the counts of the three windows holding
"now" for a key (after counting this request, when it consumes) and "now" by the store's own
clock. Every request counts, allowed or not (D25), so a store never needs the limits."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Protocol

from dialscore.kit.resp import RedisLink, ReplyError
from dialscore.ratelimit.windows import TIERS, TierName

Counts = dict[TierName, int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class CounterStore(Protocol):
    async def count(self, key: str, *, consume: bool) -> tuple[Counts, int]:
        """The three window counts of ``key`` and the store's time in milliseconds."""
        ...

    async def close(self) -> None: ...


class MemoryStore:
    """Counters of one process. Each key holds its three current windows and their counts;
    keys whose day has ended are dropped as others are counted."""

    SWEEP_EVERY = 4096

    def __init__(self, clock: Callable[[], int] = wall_clock_ms) -> None:
        self._clock = clock
        # key -> [second window, count, minute window, count, day window, count]
        self._entries: dict[str, list[int]] = {}
        # The API's event loop is the only caller in practice; the lock makes a count exact
        # even if another thread of the process counts too.
        self._lock = threading.Lock()
        self._until_sweep = self.SWEEP_EVERY

    def __len__(self) -> int:
        return len(self._entries)

    async def count(self, key: str, *, consume: bool) -> tuple[Counts, int]:
        with self._lock:
            # The clock is read under the lock, so no count ever moves a window backwards.
            now = self._clock()
            windows = [tier.window(now) for tier in TIERS]
            entry = self._entries.get(key)
            if entry is None:
                if not consume:
                    return {tier.name: 0 for tier in TIERS}, now
                self._until_sweep -= 1
                if self._until_sweep <= 0:
                    self._sweep(windows[-1])
                entry = [-1, 0, -1, 0, -1, 0]
                self._entries[key] = entry
            counts: Counts = {}
            for index, tier in enumerate(TIERS):
                slot = 2 * index
                if entry[slot] != windows[index]:
                    if consume:
                        entry[slot], entry[slot + 1] = windows[index], 0
                    else:
                        counts[tier.name] = 0
                        continue
                if consume:
                    entry[slot + 1] += 1
                counts[tier.name] = entry[slot + 1]
        return counts, now

    def _sweep(self, today: int) -> None:
        self._until_sweep = max(self.SWEEP_EVERY, len(self._entries))
        stale = [key for key, entry in self._entries.items() if entry[4] != today]
        for key in stale:
            del self._entries[key]

    async def close(self) -> None:
        self._entries.clear()


# One round trip: the three windows from the Redis server's clock (so API machines with
# skewed clocks agree), each key a hash {w: window, c: count} that expires after its window.
_COUNT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local consume = ARGV[1] == '1'
local out = {now}
for i = 1, #KEYS do
  local size = tonumber(ARGV[i + 1])
  local window = math.floor(now / size)
  local stored = redis.call('HMGET', KEYS[i], 'w', 'c')
  local count = 0
  if tonumber(stored[1]) == window then
    count = tonumber(stored[2])
  end
  if consume then
    count = count + 1
    redis.call('HSET', KEYS[i], 'w', window, 'c', count)
    redis.call('PEXPIREAT', KEYS[i], (window + 1) * size + 1000)
  end
  out[i + 1] = count
end
return out
"""


class RedisStore:
    """Counters shared by every process using one Redis. The three keys of a client share a
    hash tag, so they live in one slot of a Redis Cluster and one script may touch them.

    Calls go over one pipelined connection (``RedisLink``): each request's count is one
    EVALSHA and one reply, and concurrent requests never wait for each other's round trip."""

    def __init__(self, link: RedisLink, namespace: str) -> None:
        self._link = link
        self._namespace = namespace
        self._sha = hashlib.sha1(_COUNT.encode()).hexdigest()
        self._sizes = [tier.seconds * 1000 for tier in TIERS]

    def keys(self, key: str) -> list[str]:
        return [f"{self._namespace}:ratelimit:{{{key}}}:{tier.name}" for tier in TIERS]

    async def count(self, key: str, *, consume: bool) -> tuple[Counts, int]:
        command: tuple[str | int, ...] = (
            "EVALSHA",
            self._sha,
            len(TIERS),
            *self.keys(key),
            int(consume),
            *self._sizes,
        )
        try:
            result = await self._link.call(*command)
        except ReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
            # A new or restarted Redis: load the script (the call did not run), then again.
            await self._link.call("SCRIPT", "LOAD", _COUNT)
            result = await self._link.call(*command)
        return {tier.name: int(result[i + 1]) for i, tier in enumerate(TIERS)}, int(result[0])

    async def close(self) -> None:
        await self._link.close()

"""Who a request counts against, with which limits, and the store that counts it.

A request with a live API key counts against its client, with the client's plan and
overrides read fresh with the key (so a change applies to the next request). Any other
request counts against its source address with the ``free`` plan's tiers (D25)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import structlog

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import EffectivePlan, Principal
from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.errors import ApiError
from dialscore.kit.resp import RedisLink, ReplyError
from dialscore.ratelimit import repository as repo
from dialscore.ratelimit.stores import (
    CounterStore,
    Counts,
    MemoryStore,
    RedisStore,
    wall_clock_ms,
)
from dialscore.ratelimit.windows import Decision, TierName, decide

log = structlog.get_logger(__name__)

ANONYMOUS_PLAN = "free"
# The shipped free tiers (D3), used when the plan row cannot be read.
ANONYMOUS_DEFAULT: dict[TierName, int] = {"second": 5, "minute": 100, "day": 10_000}
# How long the free plan's tiers are reused before they are read again.
PLAN_CACHE_SECONDS = 1.0
# After Redis fails, how long requests skip it before trying again.
REDIS_RETRY_SECONDS = 1.0


def plan_limits(plan: EffectivePlan) -> dict[TierName, int]:
    return {"second": plan.per_second, "minute": plan.per_minute, "day": plan.per_day}


def unconsumed(limits: dict[TierName, int]) -> Decision:
    """The tiers as they stand when nothing is counted (the limiter is switched off)."""
    return decide({"second": 0, "minute": 0, "day": 0}, limits, wall_clock_ms())


@dataclass(frozen=True)
class Identity:
    key: str
    limits: dict[TierName, int]
    principal: Principal | None
    # Why the request is not authenticated; raised again by the endpoint's dependency.
    error: Exception | None


class LimiterUnavailable(Exception):
    """Redis cannot be reached and the operator chose fail-closed."""


class RequestLimiter:
    def __init__(self, settings: Settings, store: CounterStore | None = None) -> None:
        self.settings = settings
        self.fail_closed = settings.rate_limit_failure_mode == "fail-closed"
        self._fallback: MemoryStore | None = None
        if store is not None:
            self._store = store
        elif settings.redis_url:
            link = RedisLink(settings.redis_url, timeout=settings.rate_limit_redis_timeout)
            self._store = RedisStore(link, settings.redis_namespace)
            self._fallback = MemoryStore()
        else:
            self._store = MemoryStore()
        self._redis_down = False
        self._skip_redis_until = 0.0
        self._anonymous: tuple[float, dict[TierName, int]] | None = None

    async def close(self) -> None:
        await self._store.close()

    # -- identity -------------------------------------------------------------------------

    async def identify(self, db: Database, authorization: str | None, address: str) -> Identity:
        error: Exception
        try:
            principal = await accounts.authenticate_and_record(
                db,
                secret=self.settings.resolved_secret_key,
                authorization=authorization,
                now=utcnow(),
            )
        except ApiError as exc:
            error = exc
        except Exception as exc:
            log.exception("authentication failed unexpectedly")
            error = exc
        else:
            return Identity(
                f"client:{principal.client_id}", plan_limits(principal.plan), principal, None
            )
        return Identity(f"ip:{address}", await self._anonymous_limits(db), None, error)

    async def _anonymous_limits(self, db: Database) -> dict[TierName, int]:
        now = time.monotonic()
        if self._anonymous is not None and self._anonymous[0] > now:
            return self._anonymous[1]
        limits = dict(ANONYMOUS_DEFAULT)
        try:
            async with db.read() as session:
                tiers = await repo.plan_tiers(session, ANONYMOUS_PLAN)
            if tiers is not None:
                limits = {"second": tiers[0], "minute": tiers[1], "day": tiers[2]}
        except Exception:
            log.exception("cannot read the free plan; using its shipped tiers")
        self._anonymous = (now + PLAN_CACHE_SECONDS, limits)
        return limits

    # -- counting -------------------------------------------------------------------------

    async def check(self, key: str, limits: dict[TierName, int], *, consume: bool) -> Decision:
        counts, now_ms = await self._count(key, consume)
        return decide(counts, limits, now_ms)

    async def _count(self, key: str, consume: bool) -> tuple[Counts, int]:
        if self._fallback is None:
            return await self._store.count(key, consume=consume)
        if time.monotonic() >= self._skip_redis_until:
            try:
                result = await self._store.count(key, consume=consume)
            except (ReplyError, OSError, TimeoutError) as exc:
                self._skip_redis_until = time.monotonic() + REDIS_RETRY_SECONDS
                if not self._redis_down:
                    self._redis_down = True
                    log.error(
                        "rate limiter cannot reach Redis",
                        error=str(exc),
                        mode=self.settings.rate_limit_failure_mode,
                        consequence="answering 503"
                        if self.fail_closed
                        else "counting in this process only",
                    )
            else:
                if self._redis_down:
                    self._redis_down = False
                    log.warning("rate limiter reaches Redis again; limits are shared again")
                return result
        if self.fail_closed:
            raise LimiterUnavailable
        return await self._fallback.count(key, consume=consume)

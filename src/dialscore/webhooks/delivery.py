"""The delivery engine: claims due deliveries and sends them, signed, at the owner's rate.

Runs in the worker process (beside the outbox relay). Each claimed delivery is leased for
``webhook_lease_seconds``, renewed every third of it while it is in flight; a worker that
dies mid-send leaves its deliveries to be claimed again when the lease runs out, with the
same envelope id (D22). What cannot be sent now (the shared rate cannot be checked, the
process is stopping) is handed back at once, due for whichever worker claims next."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
import structlog

from dialscore import __version__
from dialscore.accounts.service import effective_plan
from dialscore.config import Settings
from dialscore.kit import metrics, outbound
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.leases import beat_seconds
from dialscore.kit.paced_http import parse_retry_after
from dialscore.kit.polling import PollingLoop
from dialscore.webhooks import repository as repo
from dialscore.webhooks import sign
from dialscore.webhooks.policy import DEFAULT_SCHEDULE, RetryPolicy, classify, parse_schedule
from dialscore.webhooks.ratelimit import DeliveryRateLimiter, RateUnavailable
from dialscore.webhooks.schemas import delivery_body
from dialscore.webhooks.service import secret_box

log = structlog.get_logger(__name__)

USER_AGENT = f"Service-Webhooks/{__version__}"
# Claimed deliveries wait for nothing but their rate slot: one key holds at most a second of
# sends at its rate, and one receiver at most its concurrency cap, so neither a busy user nor
# a hung receiver can fill the in-flight places that others need.
_BACKLOG_SECONDS = 1
# How many due deliveries a claim looks at per free place, to find some under both caps.
_CANDIDATES_PER_PLACE = 4


@dataclass(frozen=True)
class Claimed:
    delivery_id: str
    key: str
    origin: str
    rate: float
    url: str
    secret: str
    body: bytes
    attempts: int
    first_attempt_at: datetime | None
    # The end of the lease the claim wrote: the dispatcher's token for renewing and handing
    # back the delivery while its attempt is not recorded.
    leased_until: datetime
    # When the event was made, for the delivery latency metric.
    created_at: datetime | None = None


@dataclass(frozen=True)
class Result:
    status_code: int | None
    error: str | None
    retry_after: str | None
    final: bool = False


def _origin(url: str) -> str:
    try:
        target = outbound.parse_target(url, allow_private=True)
    except outbound.RefusedTarget:
        return url
    return f"{target.scheme}://{target.host}:{target.port}"


def policy_from(settings: Settings) -> RetryPolicy:
    """The configured schedule (else the default one) with the configured jitter."""
    schedule = DEFAULT_SCHEDULE
    if settings.webhook_retry_schedule:
        schedule = parse_schedule(settings.webhook_retry_schedule)
    return RetryPolicy(schedule=schedule, jitter=settings.webhook_retry_jitter)


class Dispatcher:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        limiter: DeliveryRateLimiter,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.limiter = limiter
        self.policy = policy_from(settings)
        self.box = secret_box(settings.resolved_secret_key)
        self.lease = timedelta(seconds=settings.webhook_lease_seconds)
        self.rng = rng or random.Random()
        self._inflight: set[asyncio.Task[None]] = set()
        # Deliveries claimed and not yet recorded, by id: the end of their lease as last
        # written. Those cancelled by stop() wait in _abandoned to be handed back.
        self._leases: dict[str, datetime] = {}
        self._abandoned: dict[str, datetime] = {}
        # Renewals and hand-backs take turns: a hand-back releases a delivery by the lease
        # end the database holds, which a renewal under way is moving.
        self._lease_lock = asyncio.Lock()
        # Claims between leasing their rows and starting their sends: work under way too.
        self._claiming = 0
        self._per_key: Counter[str] = Counter()
        self._per_origin: Counter[str] = Counter()
        self._client: httpx.AsyncClient | None = None
        self.loop = PollingLoop(
            self.dispatch_due,
            poll_seconds=settings.webhook_poll_seconds,
            name="webhook dispatcher",
        )
        self.heartbeat = PollingLoop(
            self.renew_leases,
            poll_seconds=beat_seconds(settings.webhook_lease_seconds),
            name="webhook lease heartbeat",
        )

    # -- lifecycle --------------------------------------------------------------------------------

    def wake(self) -> None:
        """Asks for a claim now rather than at the next poll; safe from any thread."""
        self.loop.wake()

    def start(self) -> None:
        if self.settings.webhook_allow_private:
            log.warning(
                "DIALSCORE_WEBHOOK_ALLOW_PRIVATE is on: webhooks may call http:// and private "
                "addresses. Use this only for local development and testing."
            )
        self._client = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=self.settings.webhook_max_in_flight),
            trust_env=False,
        )
        self.loop.start()
        self.heartbeat.start()

    async def stop(self, grace: float = 0.0) -> None:
        """Stops claiming, lets the deliveries in flight finish for up to ``grace`` seconds,
        then cuts the rest short and hands them back, due at once for another worker."""
        await self.loop.stop()
        if self._inflight and grace > 0:
            await asyncio.wait(list(self._inflight), timeout=grace)
        # No renewal may be under way while the deliveries cut short note their leases:
        # each would note the end that the renewal is replacing.
        async with self._lease_lock:
            await self.heartbeat.stop()
        # Every delivery in flight ends before the client and the database go: one left
        # running would record its attempt through a closed connection and never finish.
        while self._inflight:
            for inflight in list(self._inflight):
                inflight.cancel()
            await asyncio.wait(list(self._inflight), timeout=1.0)
        abandoned, self._abandoned = self._abandoned, {}
        await self._release(abandoned)
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    @property
    def busy(self) -> int:
        """Deliveries in flight, and claims under way (their rows leased, their sends not
        yet started)."""
        return len(self._inflight) + self._claiming

    # -- claiming ---------------------------------------------------------------------------------

    async def dispatch_due(self) -> int:
        """Claims as many due deliveries as there are free places and starts sending them;
        nothing while the shared rate cannot be checked (fail-closed, Redis away)."""
        capacity = self.settings.webhook_max_in_flight - len(self._inflight)
        if capacity <= 0 or not await self.limiter.available():
            return 0
        self._claiming += 1
        try:
            claimed = await self.claim(capacity)
        finally:
            self._claiming -= 1
        for item in claimed:
            self._leases[item.delivery_id] = item.leased_until
            self._per_key[item.key] += 1
            self._per_origin[item.origin] += 1
            task = asyncio.get_running_loop().create_task(self._run_one(item))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
        return len(claimed)

    async def claim(self, limit: int) -> list[Claimed]:
        now = utcnow()
        # Look before taking the write lock, which on SQLite would stall writers every poll.
        async with self.db.read() as session:
            if not await repo.any_due(session, now=now):
                return []
        chosen: dict[str, tuple[str, str, float]] = {}
        batch_keys: Counter[str] = Counter()
        batch_origins: Counter[str] = Counter()
        rates: dict[tuple[str, str], float] = {}
        claimed: list[Claimed] = []
        async with self.db.unit_of_work() as session:
            candidates = await repo.due_candidates(
                session,
                now=now,
                limit=min(200, max(32, limit * _CANDIDATES_PER_PLACE)),
                skip_locked=not self.db.is_sqlite,
            )
            for candidate in candidates:
                if len(chosen) >= limit:
                    break
                rate_key = (candidate.plan.name, repr(sorted(candidate.overrides.items())))
                rate = rates.get(rate_key)
                if rate is None:
                    plan = effective_plan(candidate.plan, candidate.overrides)
                    rate = rates[rate_key] = float(plan.webhook_rate)
                key = f"{candidate.user_id}:{candidate.event_type}"
                origin = _origin(candidate.url)
                key_cap = max(1, int(rate * _BACKLOG_SECONDS))
                if (
                    self._per_key[key] + batch_keys[key] >= key_cap
                    or self._per_origin[origin] + batch_origins[origin]
                    >= self.settings.webhook_per_endpoint
                ):
                    # Left due: taken once its key or receiver has room again.
                    continue
                batch_keys[key] += 1
                batch_origins[origin] += 1
                chosen[candidate.delivery_id] = (key, origin, rate)
            until = now + self.lease
            leased = await repo.lease(session, list(chosen), until=until)
            urls = {c.delivery_id: c.url for c in candidates if c.delivery_id in chosen}
            for delivery, sealed in leased:
                key, origin, rate = chosen[delivery.id]
                if sealed is None:
                    await repo.fail_undeliverable(
                        session, delivery.id, error="cannot sign: no callback secret", now=now
                    )
                    continue
                try:
                    secret = self.box.open(sealed)
                except ValueError:
                    # Not deliverable by anyone: fail it alone rather than every claim.
                    await repo.fail_undeliverable(
                        session,
                        delivery.id,
                        error="cannot sign: DIALSCORE_SECRET_KEY has changed",
                        now=now,
                    )
                    continue
                claimed.append(
                    Claimed(
                        delivery_id=delivery.id,
                        key=key,
                        origin=origin,
                        rate=rate,
                        url=urls[delivery.id],
                        secret=secret,
                        body=delivery_body(delivery),
                        attempts=delivery.attempts,
                        first_attempt_at=delivery.first_attempt_at,
                        leased_until=until,
                        created_at=delivery.created_at,
                    )
                )
        return claimed

    # -- leases -----------------------------------------------------------------------------------

    async def renew_leases(self) -> None:
        """Extends the lease of every delivery in flight (the heartbeat's step)."""
        async with self._lease_lock:
            if not self._leases:
                return
            until = utcnow() + self.lease
            held = _by_lease(self._leases)
            async with self.db.unit_of_work() as session:
                for old, ids in held.items():
                    await repo.extend_leases(session, ids, held=old, until=until)
            for ids in held.values():
                for delivery_id in ids:
                    if delivery_id in self._leases:
                        self._leases[delivery_id] = until

    def _lease_of(self, item: Claimed) -> dict[str, datetime]:
        return {item.delivery_id: self._leases.get(item.delivery_id, item.leased_until)}

    async def _hand_back(self, item: Claimed) -> None:
        """Hands back one delivery in flight, by its lease as it stands once no renewal is
        under way."""
        async with self._lease_lock:
            await self._release(self._lease_of(item))

    async def _release(self, leases: dict[str, datetime]) -> None:
        """Makes deliveries claimed here and not recorded due at once; logged on failure
        (their leases run out soon enough)."""
        if not leases:
            return
        try:
            async with self.db.unit_of_work() as session:
                for held, ids in _by_lease(leases).items():
                    await repo.release(session, ids, held=held, now=utcnow())
        except Exception:
            log.exception("could not hand back webhook deliveries", count=len(leases))

    # -- sending ----------------------------------------------------------------------------------

    async def _run_one(self, item: Claimed) -> None:
        try:
            await self.deliver(item)
        except asyncio.CancelledError:
            # Cut short by stop(): handed back once every delivery in flight has ended.
            self._abandoned.update(self._lease_of(item))
            raise
        except Exception:
            log.exception("webhook delivery failed unexpectedly", delivery=item.delivery_id)
            await self._hand_back(item)
        finally:
            self._leases.pop(item.delivery_id, None)
            for counter, name in ((self._per_key, item.key), (self._per_origin, item.origin)):
                counter[name] -= 1
                if counter[name] <= 0:
                    del counter[name]
            self.wake()

    async def send(self, item: Claimed) -> Result:
        assert self._client is not None
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Service-Signature": sign(item.secret, item.body),
        }
        try:
            response = await outbound.post(
                self._client,
                item.url,
                content=item.body,
                headers=headers,
                timeout=self.settings.webhook_timeout,
                allow_private=self.settings.webhook_allow_private,
            )
        except outbound.RefusedTarget as exc:
            return Result(None, f"refused: {exc}", None, final=True)
        except httpx.TimeoutException:
            return Result(None, f"timed out after {self.settings.webhook_timeout:g} s", None)
        except httpx.HTTPError as exc:
            return Result(None, f"connection failed: {type(exc).__name__}: {exc}"[:500], None)
        error = None
        if 300 <= response.status_code < 400:
            error = f"redirect ({response.status_code}) not followed"
        elif response.status_code >= 400:
            error = f"receiver answered {response.status_code}"
        return Result(response.status_code, error, response.headers.get("retry-after"))

    async def deliver(self, item: Claimed) -> str:
        """One attempt of one delivery; the delivery's state afterwards (``released`` when it
        was handed back unsent: its rate cannot be checked now)."""
        try:
            await self.limiter.wait_for_slot(item.key, item.rate)
        except RateUnavailable:
            await self._hand_back(item)
            return "released"
        started = utcnow()
        clock = time.monotonic()
        result = await self.send(item)
        duration_ms = int((time.monotonic() - clock) * 1000)
        now = utcnow()
        attempts = item.attempts + 1
        first = item.first_attempt_at or started
        outcome: str = "failed" if result.final else classify(result.status_code)
        values: dict[str, Any] = {
            "attempts": attempts,
            "first_attempt_at": first,
            "last_status_code": result.status_code,
            "last_error": result.error,
        }
        if outcome == "retry":
            when = self.policy.next_attempt(
                attempts=attempts,
                first_attempt_at=first,
                now=now,
                retry_after=parse_retry_after(result.retry_after, now),
                rng=self.rng,
            )
            if when is None:
                outcome = "failed"
                values["last_error"] = f"{result.error}; gave up after {attempts} attempts"
            else:
                values["available_at"] = when
                outcome = "pending"
        if outcome != "pending":
            values.update(state=outcome, completed_at=now, available_at=now)
        async with self.db.unit_of_work() as session:
            await repo.record_attempt(
                session,
                item.delivery_id,
                number=attempts,
                status_code=result.status_code,
                duration_ms=duration_ms,
                error=result.error,
                attempted_at=started,
                values=values,
            )
        metrics.observe_webhook_attempt(
            item.key.partition(":")[2],
            outcome,
            result.status_code,
            seconds=duration_ms / 1000,
            created_at=item.created_at,
            now=now,
        )
        return outcome


def _by_lease(leases: dict[str, datetime]) -> dict[datetime, list[str]]:
    """Delivery ids grouped by the lease end they hold: one statement per group."""
    groups: dict[datetime, list[str]] = defaultdict(list)
    for delivery_id, until in leases.items():
        groups[until].append(delivery_id)
    return groups

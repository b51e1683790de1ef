"""The delivery engine: claims due deliveries and sends them, signed, at the owner's rate.

Runs in the worker process (beside the outbox relay). A claim takes many due deliveries in
one statement and leases them for ``webhook_lease_seconds``, renewed every third of it while
this process holds them; they wait here, per receiver, for a free place, send, and their
attempts are recorded in groups (``OutcomeWriter``). A worker that dies leaves its
deliveries to be claimed again when their leases run out, with the same envelope id (D22).
What cannot be sent now (the shared rate cannot be checked, the process is stopping) is
handed back at once, due for whichever worker claims next."""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections import Counter, defaultdict, deque
from datetime import datetime, timedelta

import aiohttp
import structlog

from dialscore import __version__
from dialscore.config import Settings
from dialscore.kit import outbound
from dialscore.kit.clock import isoformat, utcnow
from dialscore.kit.crypto import SecretBox
from dialscore.kit.db import Database
from dialscore.kit.leases import beat_seconds
from dialscore.kit.paced_http import parse_retry_after
from dialscore.kit.polling import PollingLoop
from dialscore.webhooks import claims, sign, signing_key
from dialscore.webhooks.claimed import Claimed, Result
from dialscore.webhooks.outcomes import Outcome, OutcomeWriter
from dialscore.webhooks.policy import classify, policy_from
from dialscore.webhooks.ratelimit import DeliveryRateLimiter, RateUnavailable
from dialscore.webhooks.schemas import delivery_body
from dialscore.webhooks.service import PREVIOUS_SECRET_KEPT, secret_box

log = structlog.get_logger(__name__)

USER_AGENT = f"Service-Webhooks/{__version__}"
# One key holds at most a second of sends at its rate, so that a busy user cannot fill the
# places that others need.
_BACKLOG_SECONDS = 1
# Deliveries this process may hold (claimed, not yet recorded) per place to send, and per
# receiver per concurrent request to it: enough waiting that a place freed is filled at once,
# without a claim per delivery, and few enough that a hung receiver holds little.
_HELD_PER_PLACE = 8
# How many due deliveries a claim looks at per delivery it wants, to find some under the
# caps without locking what it will not take.
_CANDIDATES_PER_WANTED = 2


@functools.lru_cache(maxsize=4096)
def _origin(url: str) -> str:
    try:
        target = outbound.parse_target(url, allow_private=True)
    except outbound.RefusedTarget:
        return url
    return f"{target.scheme}://{target.host}:{target.port}"


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
        self.most_held = settings.webhook_max_in_flight * _HELD_PER_PLACE
        self.most_held_per_origin = settings.webhook_per_endpoint * _HELD_PER_PLACE
        # Deliveries claimed here and not yet recorded, by id, and the end of their lease as
        # last written. Those cut short by stop() wait in _abandoned to be handed back.
        self._held: dict[str, Claimed] = {}
        self._leases: dict[str, datetime] = {}
        self._abandoned: set[str] = set()
        # Held deliveries waiting for a place, per receiver, and the sends under way.
        self._waiting: dict[str, deque[Claimed]] = defaultdict(deque)
        self._inflight: set[asyncio.Task[None]] = set()
        self._sending: Counter[str] = Counter()
        self._per_key: Counter[str] = Counter()
        self._per_origin: Counter[str] = Counter()
        # Renewals and hand-backs take turns: a hand-back releases a delivery by the lease
        # end the database holds, which a renewal under way is moving.
        self._lease_lock = asyncio.Lock()
        # Claims between leasing their rows and holding them here: work under way too.
        self._claiming = 0
        # Recorded since the last claim: a claim is asked for once enough places are free.
        self._freed = 0
        self.poster = outbound.Poster(
            allow_private=settings.webhook_allow_private,
            max_connections=settings.webhook_max_in_flight,
        )
        self.writer = OutcomeWriter(
            db, recorded=self._recorded, disable_after=settings.webhook_disable_after
        )
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
        self.poster.start()
        self.writer.start()
        self.loop.start()
        self.heartbeat.start()

    async def stop(self, grace: float = 0.0) -> None:
        """Stops claiming, lets the deliveries in flight finish for up to ``grace`` seconds,
        then cuts the rest short and hands them back, due at once for another worker, with
        those still waiting for a place; the attempts made are recorded first."""
        await self.loop.stop()
        for waiting in self._waiting.values():
            self._abandoned.update(item.delivery_id for item in waiting)
        self._waiting.clear()
        if self._inflight and grace > 0:
            await asyncio.wait(list(self._inflight), timeout=grace)
        # Every delivery in flight ends before the client and the database go: one left
        # running would record its attempt through a closed connection and never finish.
        while self._inflight:
            for inflight in list(self._inflight):
                inflight.cancel()
            await asyncio.wait(list(self._inflight), timeout=1.0)
        await self.writer.stop()
        # The leases of those cut short are read once no renewal can be moving them: each
        # is released by the end the database holds.
        async with self._lease_lock:
            await self.heartbeat.stop()
        abandoned, self._abandoned = self._abandoned, set()
        await self._release({d: self._leases[d] for d in abandoned if d in self._leases})
        for delivery_id in abandoned:
            self._forget(delivery_id)
        await self.poster.close()

    @property
    def busy(self) -> int:
        """Deliveries held here (waiting, in flight, or their attempt not yet recorded), and
        claims under way (their rows leased, not yet held)."""
        return len(self._held) + self._claiming

    # -- claiming ---------------------------------------------------------------------------------

    async def dispatch_due(self) -> int:
        """Claims as many due deliveries as may be held here and starts sending them;
        nothing while the shared rate cannot be checked (fail-closed, Redis away)."""
        room = self.most_held - len(self._held)
        if room <= 0 or not await self.limiter.available():
            return 0
        self._claiming += 1
        try:
            claimed = await self.claim(room)
        finally:
            self._claiming -= 1
        self._freed = 0
        for item in claimed:
            self._held[item.delivery_id] = item
            self._leases[item.delivery_id] = item.leased_until
            self._per_key[item.key] += 1
            if item.endpoint_key is not None:
                self._per_key[item.endpoint_key] += 1
            self._per_origin[item.origin] += 1
            self._waiting[item.origin].append(item)
        self._start_sends()
        return len(claimed)

    async def claim(self, limit: int) -> list[Claimed]:
        now = utcnow()
        if self.db.is_sqlite:
            # Look before taking the write lock, which would stall writers every poll.
            async with self.db.read() as session:
                if not await claims.any_due(session, now=now):
                    return []
        chosen: list[tuple[claims.Candidate, str, str, str | None]] = []
        batch_keys: Counter[str] = Counter()
        batch_origins: Counter[str] = Counter()
        claimed: list[Claimed] = []
        async with self.db.unit_of_work() as session:
            candidates = await claims.due_candidates(
                session,
                now=now,
                # Enough to fill one receiver's room twice over: more would lock rows (on
                # PostgreSQL) that the receivers' caps leave here anyway.
                limit=max(32, _CANDIDATES_PER_WANTED * min(limit, self.most_held_per_origin)),
                skip_locked=not self.db.is_sqlite,
            )
            for candidate in candidates:
                if len(chosen) >= limit:
                    break
                key = f"{candidate.user_id}:{candidate.event_type}"
                origin = _origin(candidate.url)
                key_cap = max(1, int(candidate.rate * _BACKLOG_SECONDS))
                own = candidate.endpoint_key
                own_cap = max(1, int((candidate.subscription_rate or 0) * _BACKLOG_SECONDS))
                if (
                    self._per_key[key] + batch_keys[key] >= key_cap
                    or self._per_origin[origin] + batch_origins[origin] >= self.most_held_per_origin
                    or (own is not None and self._per_key[own] + batch_keys[own] >= own_cap)
                ):
                    # Left due: taken once its keys or receiver have room again.
                    continue
                batch_keys[key] += 1
                if own is not None:
                    batch_keys[own] += 1
                batch_origins[origin] += 1
                chosen.append((candidate, key, origin, own))
            until = now + self.lease
            await claims.lease(session, [c.delivery_id for c, _, _, _ in chosen], until=until)
            _log_takeover([c for c, _, _, _ in chosen])
            for candidate, key, origin, own in chosen:
                secret, problem = self._secret(candidate.sealed)
                if secret is None:
                    # Not deliverable by anyone: fail it alone rather than every claim.
                    await claims.fail_undeliverable(
                        session, candidate.delivery_id, error=problem, now=now
                    )
                    continue
                previous_key, previous_until = self._previous_key(candidate, now)
                body = delivery_body(
                    delivery_id=candidate.delivery_id,
                    kind=candidate.kind,
                    event_type=candidate.event_type,
                    payload_json=candidate.payload_json,
                    timestamp_ms=candidate.timestamp_ms,
                )
                claimed.append(
                    Claimed(
                        delivery_id=candidate.delivery_id,
                        key=key,
                        origin=origin,
                        rate=candidate.rate,
                        url=candidate.url,
                        secret=secret,
                        body=body,
                        attempts=candidate.attempts,
                        first_attempt_at=candidate.first_attempt_at,
                        leased_until=until,
                        event_type=candidate.event_type,
                        created_at=candidate.created_at,
                        hmac_key=signing_key(secret),
                        previous_key=previous_key,
                        previous_until=previous_until,
                        endpoint_key=own,
                        endpoint_rate=candidate.subscription_rate if own else None,
                        subscription_id=candidate.subscription_id,
                    )
                )
        return claimed

    def _previous_key(
        self, candidate: claims.Candidate, now: datetime
    ) -> tuple[bytes | None, datetime | None]:
        """The key of the secret a rotation replaced and until when it signs (P121), while
        it does; else (None, None)."""
        if candidate.previous_sealed is None or candidate.rotated_at is None:
            return None, None
        until = candidate.rotated_at + PREVIOUS_SECRET_KEPT
        if now >= until:
            return None, None
        previous, _ = self._secret(candidate.previous_sealed)
        if previous is None:
            return None, None
        return signing_key(previous), until

    def _secret(self, sealed: str | None) -> tuple[str | None, str]:
        """The signing secret of a sealed one, else None and why it cannot be had."""
        if sealed is None:
            return None, "cannot sign: no callback secret"
        try:
            return _opened(self.box, sealed), ""
        except ValueError:
            return None, "cannot sign: DIALSCORE_SECRET_KEY has changed"

    # -- leases -----------------------------------------------------------------------------------

    async def renew_leases(self) -> None:
        """Extends the lease of every delivery held here (the heartbeat's step)."""
        async with self._lease_lock:
            if not self._leases:
                return
            until = utcnow() + self.lease
            held = _by_lease(self._leases)
            async with self.db.unit_of_work() as session:
                for old, ids in held.items():
                    await claims.extend_leases(session, ids, held=old, until=until)
            for ids in held.values():
                for delivery_id in ids:
                    if delivery_id in self._leases:
                        self._leases[delivery_id] = until

    def _lease_of(self, item: Claimed) -> dict[str, datetime]:
        return {item.delivery_id: self._leases.get(item.delivery_id, item.leased_until)}

    async def _hand_back(self, item: Claimed) -> None:
        """Hands back one delivery held here, by its lease as it stands once no renewal is
        under way."""
        async with self._lease_lock:
            await self._release(self._lease_of(item))
        self._forget(item.delivery_id)

    async def _release(self, leases: dict[str, datetime]) -> None:
        """Makes deliveries claimed here and not recorded due at once; logged on failure
        (their leases run out soon enough)."""
        if not leases:
            return
        try:
            async with self.db.unit_of_work() as session:
                for held, ids in _by_lease(leases).items():
                    await claims.release(session, ids, held=held)
        except Exception:
            log.exception("could not hand back webhook deliveries", count=len(leases))

    def _forget(self, delivery_id: str) -> None:
        """The delivery is no longer held here: recorded, or handed back."""
        item = self._held.pop(delivery_id, None)
        self._leases.pop(delivery_id, None)
        if item is None:
            return
        names = [(self._per_key, item.key), (self._per_origin, item.origin)]
        if item.endpoint_key is not None:
            names.append((self._per_key, item.endpoint_key))
        for counter, name in names:
            counter[name] -= 1
            if counter[name] <= 0:
                del counter[name]
        self._freed += 1

    def _recorded(self, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            self._forget(outcome.delivery_id)
        # A claim once half a receiver's share is free (or nothing is held): one claim per
        # many deliveries, not one each, and never a receiver's queue run dry meanwhile.
        if not self._held or self._freed * 2 >= self.most_held_per_origin:
            self.wake()

    # -- sending ----------------------------------------------------------------------------------

    def _start_sends(self) -> None:
        """Starts the sends that have a place: at most ``webhook_max_in_flight`` at once,
        and ``webhook_per_endpoint`` to one receiver."""
        loop = asyncio.get_running_loop()
        for origin, waiting in list(self._waiting.items()):
            while (
                waiting
                and len(self._inflight) < self.settings.webhook_max_in_flight
                and self._sending[origin] < self.settings.webhook_per_endpoint
            ):
                item = waiting.popleft()
                self._sending[origin] += 1
                task = loop.create_task(self._run_one(item))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
            if not waiting:
                del self._waiting[origin]

    async def _run_one(self, item: Claimed) -> None:
        try:
            outcome = await self.attempt(item)
        except asyncio.CancelledError:
            # Cut short by stop(): handed back once every delivery in flight has ended.
            self._abandoned.add(item.delivery_id)
            raise
        except RateUnavailable:
            await self._hand_back(item)
        except Exception:
            log.exception("webhook delivery failed unexpectedly", delivery=item.delivery_id)
            await self._hand_back(item)
        else:
            self.writer.add(outcome)
        finally:
            self._sending[item.origin] -= 1
            if self._sending[item.origin] <= 0:
                del self._sending[item.origin]
            if self.loop.running:
                self._start_sends()

    async def send(self, item: Claimed) -> Result:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Service-Signature": sign(item.secret, item.body),
            **item.standard_headers(utcnow()),
        }
        timeout = self.settings.webhook_timeout
        try:
            answer = await self.poster.post(
                item.url, content=item.body, headers=headers, timeout=timeout
            )
        except outbound.RefusedTarget as exc:
            return Result(None, f"refused: {exc}", None, final=True)
        except TimeoutError:
            return Result(None, f"timed out after {timeout:g} s", None)
        except aiohttp.ClientError as exc:
            reason = str(exc) or type(exc).__name__
            return Result(None, f"connection failed: {type(exc).__name__}: {reason}"[:500], None)
        error = None
        if 300 <= answer.status_code < 400:
            error = f"redirect ({answer.status_code}) not followed"
        elif answer.status_code >= 400:
            error = f"receiver answered {answer.status_code}"
        return Result(answer.status_code, error, answer.retry_after)

    async def attempt(self, item: Claimed) -> Outcome:
        """One attempt of one delivery, once its rate allows it, and the delivery's state
        after it (to be recorded); ``RateUnavailable`` when its rate cannot be checked now."""
        if item.endpoint_key is None:
            await self.limiter.wait_for_slot(item.key, item.rate)
        else:
            await self.limiter.wait_for_slots(item.slots)
        started = utcnow()
        clock = time.monotonic()
        result = await self.send(item)
        duration_ms = int((time.monotonic() - clock) * 1000)
        now = utcnow()
        attempts = item.attempts + 1
        first = item.first_attempt_at or started
        state: str = "failed" if result.final else classify(result.status_code)
        error = result.error
        available_at = now
        if state == "retry":
            when = self.policy.next_attempt(
                attempts=attempts,
                first_attempt_at=first,
                now=now,
                retry_after=parse_retry_after(result.retry_after, now),
                rng=self.rng,
            )
            if when is None:
                state = "failed"
                error = f"{result.error}; gave up after {attempts} attempts"
            else:
                state, available_at = "pending", when
        record = claims.AttemptRecord(
            delivery_id=item.delivery_id,
            number=attempts,
            status_code=result.status_code,
            duration_ms=duration_ms,
            error=error,
            attempted_at=started,
            state=state,
            available_at=available_at,
            first_attempt_at=first,
            completed_at=None if state == "pending" else now,
            subscription_id=item.subscription_id,
        )
        return Outcome(record, event_type=item.event_type, created_at=item.created_at)


@functools.lru_cache(maxsize=1024)
def _opened(box: SecretBox, sealed: str) -> str:
    """A subscription's secret, opened once per process rather than once per delivery."""
    return box.open(sealed)


def _log_takeover(chosen: list[claims.Candidate]) -> None:
    """Says at WARNING that deliveries another worker held were taken over: their lease ran
    out, so that worker died or stalled (P161)."""
    lapsed = [c.lapsed_lease for c in chosen if c.lapsed_lease is not None]
    if lapsed:
        log.warning(
            "webhook deliveries taken over: their lease ran out while another worker held them",
            count=len(lapsed),
            earliest_lease_ran_out_at=isoformat(min(lapsed)),
        )


def _by_lease(leases: dict[str, datetime]) -> dict[datetime, list[str]]:
    """Delivery ids grouped by the lease end they hold: one statement per group."""
    groups: dict[datetime, list[str]] = defaultdict(list)
    for delivery_id, until in leases.items():
        groups[until].append(delivery_id)
    return groups

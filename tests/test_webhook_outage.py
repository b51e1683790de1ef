"""Redis away under the webhook dispatcher (P81): the delivery rate follows the request limits'
failure mode. fail-open keeps delivering, counted in this process; fail-closed hands back what
it claimed at once and claims nothing until Redis answers again. Each outage is logged once,
and its end once, and no delivery waits out a lease for it.

A private redis-server is stopped and started for real; the pause before Redis is tried again
runs on a clock the test moves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio
from sqlalchemy import func, select, update
from structlog.testing import capture_logs

from dialscore.accounts.service import set_overrides
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.jobs import processing as jobs_processing
from dialscore.kit.clock import isoformat, utcnow
from dialscore.kit.db import Database
from dialscore.models import OutboxMessage, WebhookAttempt, WebhookDelivery
from dialscore.webhooks import claims as webhook_claims
from dialscore.webhooks.delivery import Dispatcher
from dialscore.webhooks.ratelimit import (
    REDIS_RETRY_SECONDS,
    RateUnavailable,
    RedisRateLimiter,
    SharedRateLimiter,
    redis_client,
)
from tests.conftest import SECRET
from tests.fakes import Receiver, running_receiver
from tests.processes import RedisServer, private_redis
from tests.support import V2, Tenant, make_tenant, many_contacts, state_of, submit

OUTAGE = "webhook delivery rate cannot reach Redis"
RECOVERY = "webhook delivery rate reaches Redis again; deliveries share it again"
UNEXPECTED = "webhook delivery failed unexpectedly"
NAMESPACE = "outage"
# A bound on waits for what should happen within a second or two, wide for a machine under
# the whole suite's load (a CI run at half speed once needed more than 15 s).
PROMPTLY = 60.0


class PauseClock:
    """The clock of the limiter's pause before it tries Redis again, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def pass_the_pause(self) -> None:
        self.now += REDIS_RETRY_SECONDS + 0.01


@dataclass
class Work:
    """A user subscribed to a receiver, whose jobs are processed here (no worker runs), so
    that their deliveries wait for the dispatcher under test."""

    settings: Settings
    db: Database
    api: httpx.AsyncClient
    tenant: Tenant

    async def submit(
        self, contacts: list[dict[str, Any]], *, kind: str = "score"
    ) -> tuple[str, int]:
        """A job of ``contacts``, left for a worker: its id and its outbox message's."""
        response = await submit(self.api, self.tenant, contacts, kind=kind)
        assert response.status_code == 200, response.text
        job_id: str = response.json()["data"]["jobId"]
        async with self.db.read() as session:
            outbox_id = await session.scalar(
                select(OutboxMessage.id).where(
                    OutboxMessage.payload["job_id"].as_string() == job_id
                )
            )
        assert outbox_id is not None
        return job_id, outbox_id

    async def job(self, count: int, start: int = 0) -> None:
        """A scoring job of ``count`` contacts, processed here: its events wait to be sent."""
        job_id, outbox_id = await self.submit(many_contacts(count, start=start))
        await jobs_processing.process_job(
            self.db,
            job_id=job_id,
            outbox_id=outbox_id,
            settings=jobs_processing.ProcessingSettings(
                batch_size=100, job_lease=timedelta(seconds=10)
            ),
        )

    async def deliveries(self) -> list[WebhookDelivery]:
        async with self.db.read() as session:
            return list((await session.scalars(select(WebhookDelivery))).all())

    async def all_delivered(self, count: int) -> bool:
        """Whether ``count`` deliveries are recorded as delivered (received is not enough:
        the attempt is recorded after the receiver answers)."""
        states = [d.state for d in await self.deliveries()]
        return states.count("delivered") == count

    async def attempts(self) -> int:
        async with self.db.read() as session:
            count = await session.scalar(select(func.count()).select_from(WebhookAttempt))
        return int(count or 0)


@asynccontextmanager
async def subscribed(settings: Settings, receiver: Receiver, *, rate: int) -> AsyncIterator[Work]:
    configured = settings.model_copy(
        update={
            "webhook_allow_private": True,
            "webhook_poll_seconds": 0.05,
            "webhook_lease_seconds": 10.0,
        }
    )
    app = create_app(configured, run_worker=False)
    async with app.router.lifespan_context(app):
        db = state_of(app).db
        tenant = await make_tenant(db, SECRET)
        async with db.unit_of_work() as session:
            await set_overrides(session, client_id=tenant.client_id, values={"webhook_rate": rate})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            response = await api.post(
                f"{V2}/webhooks",
                json={
                    "name": "receiver",
                    "url": receiver.url,
                    "eventTypes": ["job.contact.scored", "job.completed"],
                },
                headers=tenant.headers,
            )
            assert response.status_code == 201, response.text
            yield Work(configured, db, api, tenant)


@asynccontextmanager
async def dispatching(
    work: Work, server: RedisServer, *, fail_closed: bool, clock: PauseClock
) -> AsyncIterator[Dispatcher]:
    limiter = SharedRateLimiter(
        RedisRateLimiter(redis_client(server.url, timeout=0.5), NAMESPACE),
        fail_closed=fail_closed,
        clock=clock,
    )
    dispatcher = Dispatcher(work.db, work.settings, limiter)
    dispatcher.start()
    try:
        yield dispatcher
    finally:
        await dispatcher.stop()
        await limiter.close()


async def until(condition: Callable[[], Any], what: str, *, within: float = PROMPTLY) -> None:
    """Waits (bounded, ``within`` seconds) until ``condition()`` (or its awaited value) is
    true."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def events(logs: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == event]


async def test_fail_open_keeps_delivering_in_this_process_and_shares_the_rate_again(
    settings: Settings, tmp_path: Path
) -> None:
    clock = PauseClock()
    with running_receiver() as receiver, private_redis(tmp_path / "redis") as server:
        async with subscribed(settings, receiver, rate=50) as work:
            server.stop()
            await work.job(9)
            with capture_logs() as logs:
                async with dispatching(work, server, fail_closed=False, clock=clock) as dispatcher:
                    # Redis is away from the first send: every event goes out regardless.
                    await until(lambda: len(receiver.received) == 10, "10 deliveries")
                    server.start()
                    clock.pass_the_pause()
                    await work.job(5, start=100)
                    dispatcher.wake()
                    await until(lambda: work.all_delivered(16), "6 more deliveries")
                    client = redis.asyncio.Redis.from_url(server.url)
                    try:
                        shared = [k async for k in client.scan_iter(match=f"{NAMESPACE}:*")]
                    finally:
                        await client.aclose()
            deliveries = await work.deliveries()
    assert {d.state for d in deliveries} == {"delivered"}
    # Each went out at its first claim: none was left leased, none sent twice.
    assert [d.attempts for d in deliveries] == [1] * 16
    assert len({r.json()["id"] for r in receiver.received}) == 16
    (outage,) = events(logs, OUTAGE)
    assert outage["log_level"] == "error"
    assert (outage["mode"], outage["consequence"]) == ("fail-open", "counting in this process only")
    assert outage["error"]
    assert len(events(logs, RECOVERY)) == 1
    assert events(logs, UNEXPECTED) == []
    # Once Redis answered again, the sends were counted there.
    assert shared, "no rate key in Redis after it came back"


async def test_fail_closed_hands_back_at_once_and_claims_nothing_until_redis_answers(
    settings: Settings, tmp_path: Path
) -> None:
    clock = PauseClock()
    with running_receiver() as receiver, private_redis(tmp_path / "redis") as server:
        async with subscribed(settings, receiver, rate=5) as work:
            await work.job(14)
            with capture_logs() as logs:
                async with dispatching(work, server, fail_closed=True, clock=clock) as dispatcher:
                    # Five go out in the first second; the next ones wait for their slot.
                    await until(lambda: len(receiver.received) >= 5, "the first deliveries")
                    server.stop()
                    stopped = utcnow()

                    async def handed_back() -> bool:
                        # Once the outage is noticed, no claim starts until Redis answers.
                        if not events(logs, OUTAGE) or dispatcher.busy:
                            return False
                        pending = [d for d in await work.deliveries() if d.state == "pending"]
                        return all(d.leased_until is None for d in pending)

                    await until(handed_back, "the claimed deliveries to be handed back")
                    sent = len(receiver.received)
                    attempts = await work.attempts()
                    pending = [d for d in await work.deliveries() if d.state == "pending"]
                    # While Redis is away, nothing is claimed, however often the loop looks.
                    for _ in range(5):
                        assert await dispatcher.dispatch_due() == 0
                    after = await work.deliveries()

                    server.start()
                    back = time.monotonic()
                    clock.pass_the_pause()
                    dispatcher.wake()
                    await until(lambda: len(receiver.received) > sent, "deliveries to resume")
                    resumed = time.monotonic() - back
                    # A hand-back the loaded database refused waits out its lease (10 s).
                    await until(lambda: work.all_delivered(15), "every delivery", within=30)
            deliveries = await work.deliveries()
    print(f"\nfail-closed: deliveries resumed {resumed:.2f} s after Redis answered again")
    assert 5 <= sent < 15
    # Handed back unsent: due again at once (not a lease away), no attempt recorded.
    assert pending and all(d.attempts == 0 for d in pending)
    assert all(d.available_at <= stopped and d.leased_until is None for d in pending)
    assert attempts == sent
    assert [(d.id, d.available_at, d.leased_until) for d in after if d.state == "pending"] == [
        (d.id, d.available_at, d.leased_until) for d in pending
    ]
    assert {d.state for d in deliveries} == {"delivered"}
    assert sorted(d.attempts for d in deliveries) == [1] * 15
    (outage,) = events(logs, OUTAGE)
    assert (outage["mode"], outage["consequence"]) == ("fail-closed", "holding deliveries back")
    assert len(events(logs, RECOVERY)) == 1
    assert events(logs, UNEXPECTED) == []
    assert resumed < 5.0


async def contact_events(work: Work) -> list[WebhookDelivery]:
    return [d for d in await work.deliveries() if d.event_type == "job.contact.scored"]


class GatedLimiter:
    """A delivery rate whose answer the test gives: every send waits at the gate, then finds
    the rate unavailable, as with Redis away and fail-closed."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.waiting = 0
        self.refused = 0

    async def wait_for_slot(self, key: str, rate: float) -> None:
        self.waiting += 1
        await self.gate.wait()
        self.refused += 1
        raise RateUnavailable("the test says so")

    async def available(self) -> bool:
        # Once it refuses, nothing is claimed (as while Redis is away, fail-closed).
        return not self.gate.is_set()

    async def close(self) -> None:
        pass


async def test_a_delivery_handed_back_during_a_renewal_is_due_at_once(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A renewal moves a lease in its own transaction; a hand-back meanwhile must release the
    delivery by the lease that renewal writes, not by the one it replaces (else the delivery
    stays leased, a lease away, for nobody)."""
    renewing = asyncio.Event()
    hold = asyncio.Event()
    extend_leases = webhook_claims.extend_leases

    async def held_open_renewal(*args: Any, **kwargs: Any) -> None:
        await extend_leases(*args, **kwargs)
        renewing.set()
        await hold.wait()

    with running_receiver() as receiver:
        async with subscribed(settings, receiver, rate=5) as work:
            await work.job(2)
            # The heartbeat's own beat is a long way off: the test renews by hand.
            quiet = work.settings.model_copy(update={"webhook_lease_seconds": 600.0})
            limiter = GatedLimiter()
            dispatcher = Dispatcher(work.db, quiet, limiter)
            dispatcher.start()
            try:
                # The job's two contact events (its job.completed waits for them).
                await until(lambda: limiter.waiting == 2, "both contact events at the gate")
                claimed = {d.id: d.available_at for d in await contact_events(work)}
                assert all(d.leased_until is not None for d in await contact_events(work))
                monkeypatch.setattr(webhook_claims, "extend_leases", held_open_renewal)
                renewal = asyncio.create_task(dispatcher.renew_leases())
                await renewing.wait()
                limiter.gate.set()
                await until(lambda: limiter.refused == 2, "both sends refused")
                hold.set()
                await renewal
                await until(lambda: dispatcher.busy == 0, "every delivery handed back")
                handed_back = await contact_events(work)
            finally:
                hold.set()
                await dispatcher.stop()
    assert len(handed_back) == 2 and receiver.received == []
    now = utcnow()
    assert all(d.state == "pending" and d.attempts == 0 for d in handed_back)
    # Due at once, in their place: neither the lease claimed nor the one renewed is still
    # held, and each is due since it first was (P161).
    assert all(d.leased_until is None for d in handed_back)
    assert all(d.available_at == claimed[d.id] <= now for d in handed_back)


TAKEOVER = "webhook deliveries taken over: their lease ran out while another worker held them"


async def test_a_delivery_a_dead_worker_held_goes_out_in_its_place(settings: Settings) -> None:
    """A dead worker's lease does not move its delivery to the back: once the lease lapses the
    delivery is claimed in the order it fell due, before work that fell due after it, and the
    claim says at WARNING that a worker's deliveries were taken over (P161). A delivery whose
    lease still runs is left to its worker."""
    with running_receiver() as receiver:
        async with subscribed(settings, receiver, rate=5) as work:
            await work.job(3)
            dead, alive, later = sorted(d.id for d in await contact_events(work))
            now = utcnow()
            lapsed = now - timedelta(seconds=1)
            rows = {
                # Fell due first; held by a worker that died, its lease run out a second ago.
                dead: {"available_at": now - timedelta(minutes=2), "leased_until": lapsed},
                # Held by a worker that is alive: its lease runs another minute.
                alive: {
                    "available_at": now - timedelta(minutes=3),
                    "leased_until": now + timedelta(minutes=1),
                },
                # Fell due after the dead worker's delivery, before its lease ran out.
                later: {"available_at": now - timedelta(minutes=1), "leased_until": None},
            }
            async with work.db.unit_of_work() as session:
                for delivery_id, values in rows.items():
                    await session.execute(
                        update(WebhookDelivery)
                        .where(WebhookDelivery.id == delivery_id)
                        .values(**values)
                    )
            dispatcher = Dispatcher(work.db, work.settings, GatedLimiter())
            with capture_logs() as logs:
                claimed = await dispatcher.claim(10)
    assert [item.delivery_id for item in claimed] == [dead, later]
    (takeover,) = events(logs, TAKEOVER)
    assert (takeover["log_level"], takeover["count"]) == ("warning", 1)
    assert takeover["earliest_lease_ran_out_at"] == isoformat(lapsed)

"""The webhook delivery engine against real HTTP receivers on 127.0.0.1 (issue 3, D21-D23).

Every test builds its own app with private targets allowed and a retry schedule in fractions
of a second, so retries, timeouts and give-ups happen within the test."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from dialscore import __version__
from dialscore.accounts.service import set_overrides
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.jobs import callability
from dialscore.kit.db import Database
from dialscore.models import WebhookAttempt, WebhookDelivery
from dialscore.webhooks import verify
from tests.conftest import SECRET
from tests.fakes import Answer, Received, Responder, running_receiver
from tests.support import (
    PHONE_STATUSES,
    V2,
    Tenant,
    add_user,
    contact,
    make_tenant,
    many_contacts,
    settle,
    state_of,
    submit,
)

SCORED = "job.contact.scored"
COMPLETED = "job.completed"
BOTH = [SCORED, COMPLETED]
FAST_SCHEDULE = "0.2,0.2,0.2"
# The tests of timeouts give up on a receiver after a second. The others wait far longer: on
# a loaded machine an answer can come after a second, and the retry that follows, right as it
# is, would send an event twice where a test counts them.
TIMEOUT = 1.0
PATIENT_TIMEOUT = 15.0


@dataclass
class Service:
    """A running app with its API client."""

    app: FastAPI
    api: httpx.AsyncClient

    @property
    def db(self) -> Database:
        return state_of(self.app).db

    async def tenant(self, *, rate: int | None = None, name: str = "Acme") -> Tenant:
        tenant = await make_tenant(self.db, SECRET, name=name)
        if rate is not None:
            await self.set_rate(tenant, rate)
        return tenant

    async def set_rate(self, tenant: Tenant, rate: int) -> None:
        async with self.db.unit_of_work() as session:
            await set_overrides(session, client_id=tenant.client_id, values={"webhook_rate": rate})

    async def subscribe(
        self, tenant: Tenant, url: str, events: Sequence[str] = tuple(BOTH)
    ) -> tuple[str, str]:
        """Creates an active subscription; its id and secret."""
        response = await self.api.post(
            f"{V2}/webhooks",
            json={"name": "receiver", "url": url, "eventTypes": list(events)},
            headers=tenant.headers,
        )
        assert response.status_code == 201, response.text
        created = response.json()["data"]
        return created["id"], created["secret"]

    async def submit_job(
        self, tenant: Tenant, contacts: list[dict[str, Any]], *, kind: str = "score"
    ) -> str:
        response = await submit(self.api, tenant, contacts, kind=kind)
        assert response.status_code == 200, response.text
        job_id: str = response.json()["data"]["jobId"]
        return job_id

    async def deliveries(self, tenant: Tenant, webhook_id: str) -> list[dict[str, Any]]:
        response = await self.api.get(
            f"{V2}/webhooks/{webhook_id}/deliveries", headers=tenant.headers
        )
        assert response.status_code == 200, response.text
        deliveries: list[dict[str, Any]] = response.json()["data"]["deliveries"]
        return deliveries

    async def until(self, condition: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
        """Settles the app again and again until ``condition`` holds (bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            await settle(self.app)
            if await condition():
                return
            if time.monotonic() > deadline:
                raise AssertionError("condition not reached in time")
            await asyncio.sleep(0.05)

    async def final_deliveries(
        self, tenant: Tenant, webhook_id: str, count: int
    ) -> list[dict[str, Any]]:
        """Waits until the subscription has ``count`` deliveries, none pending; returns them."""
        found: list[dict[str, Any]] = []

        async def done() -> bool:
            nonlocal found
            found = await self.deliveries(tenant, webhook_id)
            return len(found) == count and all(d["state"] != "pending" for d in found)

        await self.until(done)
        return found


@asynccontextmanager
async def running(settings: Settings, **update: Any) -> AsyncIterator[Service]:
    values: dict[str, Any] = {
        "webhook_allow_private": True,
        "webhook_retry_schedule": FAST_SCHEDULE,
        "webhook_timeout": PATIENT_TIMEOUT,
        # Stopping cuts deliveries still in flight short at once (hung receivers' included).
        "shutdown_grace_seconds": 0.0,
        **update,
    }
    app = create_app(settings.model_copy(update=values), run_worker=True)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            yield Service(app, api)


def by_type(received: Sequence[Received], event_type: str) -> list[Received]:
    return [r for r in received if r.json()["eventType"] == event_type]


def busiest_second(times: Sequence[float]) -> int:
    """The most arrivals in any half-open one-second window [t, t + 1)."""
    ordered = sorted(times)
    return max(
        (sum(1 for u in ordered if t <= u < t + 1.0) for t in ordered),
        default=0,
    )


def closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


def statuses(*codes: int, headers: dict[str, str] | None = None) -> Responder:
    """A responder answering ``codes`` in order, then 200."""

    def respond(request: Received, index: int) -> Answer:
        if index < len(codes):
            return Answer(codes[index], headers or {})
        return Answer(200)

    return respond


# -- signature, headers, envelope -----------------------------------------------------------------


async def test_signature_is_over_the_raw_body_with_the_documented_headers(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            _, secret = await service.subscribe(tenant, receiver.url)
            await service.submit_job(tenant, many_contacts(3))
            await settle(service.app)
            received = list(receiver.received)
    assert len(received) == 4
    for request in received:
        header = request.headers["x-service-signature"]
        assert verify(secret, request.body, header)
        expected = base64.b64encode(
            hmac.new(secret.encode(), request.body, hashlib.sha256).digest()
        ).decode()
        assert header == expected
        assert not verify(secret, request.body + b" ", header)
        assert not verify(secret + "x", request.body, header)
        assert request.headers["content-type"].split(";")[0].strip() == "application/json"
        assert request.headers["user-agent"] == f"Service-Webhooks/{__version__}"
        assert request.path == "/hook"


async def test_envelope_and_payloads_of_both_events(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The call verdicts are as of when a contact is shown (P177): one instant for the event
    # and the read, so that the event is the contact as read.
    monkeypatch.setattr(callability, "utcnow", lambda: datetime(2026, 6, 16, 18, tzinfo=UTC))
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            await service.subscribe(tenant, receiver.url)
            before_ms = int(time.time() * 1000)
            contacts = [
                contact("Ann", "Lee", "+14155552671", companyAccount="Acme Inc", title="CTO"),
                contact("Bob", "Ray", "+14155552672", phone2="+442071838750"),
            ]
            job_id = await service.submit_job(tenant, contacts)
            await settle(service.app)
            received = list(receiver.received)
        job = (await service.api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)).json()["data"]
        listed = await service.api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
        stored = {c["id"]: c for c in listed.json()["data"]["contacts"]}

    assert len(received) == 3
    ids = set()
    for request in received:
        envelope = request.json()
        assert set(envelope) == {"payload", "eventType", "timestamp", "apiVersion", "id"}
        assert envelope["apiVersion"] == "v2"
        assert isinstance(envelope["timestamp"], int) and not isinstance(
            envelope["timestamp"], bool
        )
        assert before_ms - 1000 <= envelope["timestamp"] <= int(request.at * 1000) + 1000
        assert str(uuid.UUID(envelope["id"])) == envelope["id"].lower()
        assert isinstance(envelope["payload"], dict)
        ids.add(envelope["id"])
    assert len(ids) == 3, "every event has its own envelope id"

    scored = [r.json() for r in by_type(received, SCORED)]
    assert len(scored) == 2
    for envelope in scored:
        payload = envelope["payload"]
        assert set(payload) == {"contact", "job"}
        assert payload["job"] == {"id": job_id, "type": "lightning_scoring"}
        sent = payload["contact"]
        for key in ("firstName", "lastName", "phone", "companyAccount", "phones"):
            assert key in sent, key
        assert sent["jobId"] == job_id
        assert sent["id"] in stored
        assert sent == stored[sent["id"]], "the event carries the complete contact"
        assert sent["leadStatus"] in {"P1", "P2", "P3", "Needs Attention", "No Numbers Found"}
        assert sent["phones"], sent
        for position, phone in enumerate(sent["phones"], start=1):
            assert {"number", "status", "type", "country", "position"} <= set(phone)
            assert {"timeZone", "callableNow", "nextCallableAt", "bestCallHours"} <= set(phone)
            assert phone["status"] in PHONE_STATUSES
            assert phone["position"] == position
        assert sent["bestPhone"] is None or sent["bestPhone"]["number"] in {
            p["number"] for p in sent["phones"]
        }
    by_name = {e["payload"]["contact"]["firstName"]: e["payload"]["contact"] for e in scored}
    assert by_name["Ann"]["companyAccount"] == "Acme Inc"
    assert by_name["Ann"]["phone"] == "+14155552671"
    assert by_name["Bob"]["lastName"] == "Ray"
    assert len(by_name["Bob"]["phones"]) == 2

    (completed,) = [r.json() for r in by_type(received, COMPLETED)]
    payload = completed["payload"]
    # The spec's fields and one extension (P208): a scoring job refunds nothing.
    assert set(payload) == {
        "jobId",
        "jobType",
        "jobName",
        "jobStatus",
        "modifiedAt",
        "creditsRefunded",
    }
    assert payload["creditsRefunded"] == 0
    assert payload["jobId"] == job_id
    assert payload["jobType"] == "lightning_scoring"
    assert payload["jobName"] == job["name"] and payload["jobName"]
    assert payload["jobStatus"] == "Finalized"
    modified = datetime.fromisoformat(payload["modifiedAt"].replace("Z", "+00:00"))
    assert modified.tzinfo is not None
    assert abs(modified.timestamp() * 1000 - completed["timestamp"]) < 5_000


async def test_one_event_per_contact_and_completed_after_its_contacts(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            await service.subscribe(tenant, receiver.url)
            first = await service.submit_job(tenant, many_contacts(8))
            second = await service.submit_job(tenant, many_contacts(6, start=100))
            await settle(service.app)
            received = [r.json() for r in receiver.received]
        contact_ids: dict[str, set[str]] = {}
        for job_id in (first, second):
            listed = await service.api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
            contact_ids[job_id] = {c["id"] for c in listed.json()["data"]["contacts"]}

    assert len(received) == 8 + 6 + 2
    for job_id, expected in contact_ids.items():
        positions = [
            i
            for i, e in enumerate(received)
            if e["eventType"] == SCORED and e["payload"]["job"]["id"] == job_id
        ]
        sent = [received[i]["payload"]["contact"]["id"] for i in positions]
        assert sorted(sent) == sorted(expected), "exactly one event per contact"
        completed = [
            i
            for i, e in enumerate(received)
            if e["eventType"] == COMPLETED and e["payload"]["jobId"] == job_id
        ]
        assert len(completed) == 1, "exactly one job.completed per job"
        assert completed[0] > max(positions), "job.completed arrives after the job's contacts"


# -- retry policy (D22, D23) ----------------------------------------------------------------------


async def test_500_then_200_is_delivered_on_retry_with_the_same_id(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver(statuses(500)) as receiver:
            webhook_id, secret = await service.subscribe(tenant, receiver.url, [SCORED])
            await service.submit_job(tenant, many_contacts(1))
            (delivery,) = await service.final_deliveries(tenant, webhook_id, 1)
            received = list(receiver.received)
    assert len(received) == 2
    assert received[0].body == received[1].body, "every attempt sends the same bytes"
    assert received[0].json()["id"] == received[1].json()["id"] == delivery["id"]
    assert all(verify(secret, r.body, r.headers["x-service-signature"]) for r in received)
    assert delivery["state"] == "delivered"
    assert delivery["attemptCount"] == 2
    assert [a["statusCode"] for a in delivery["attempts"]] == [500, 200]


async def test_404_is_final_after_one_attempt(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver(lambda request, index: Answer(404)) as receiver:
            webhook_id, _ = await service.subscribe(tenant, receiver.url, [SCORED])
            await service.submit_job(tenant, many_contacts(1))
            (delivery,) = await service.final_deliveries(tenant, webhook_id, 1)
            received = list(receiver.received)
    assert len(received) == 1
    assert delivery["state"] == "failed"
    assert delivery["attemptCount"] == 1
    assert delivery["lastStatusCode"] == 404
    assert delivery["nextAttemptAt"] is None


@pytest.mark.parametrize("code", [408, 429])
async def test_408_and_429_are_retried(settings: Settings, code: int) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver(statuses(code)) as receiver:
            webhook_id, _ = await service.subscribe(tenant, receiver.url, [SCORED])
            await service.submit_job(tenant, many_contacts(1))
            (delivery,) = await service.final_deliveries(tenant, webhook_id, 1)
            received = list(receiver.received)
    assert len(received) == 2
    assert received[0].json()["id"] == received[1].json()["id"]
    assert delivery["state"] == "delivered"
    assert [a["statusCode"] for a in delivery["attempts"]] == [code, 200]


async def test_429_retry_after_is_honoured(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver(statuses(429, headers={"Retry-After": "1"})) as receiver:
            webhook_id, _ = await service.subscribe(tenant, receiver.url, [SCORED])
            await service.submit_job(tenant, many_contacts(1))
            (delivery,) = await service.final_deliveries(tenant, webhook_id, 1)
            received = list(receiver.received)
    assert len(received) == 2
    assert delivery["state"] == "delivered"
    # The schedule alone would retry after 0.2 s; Retry-After asks for 1 s.
    assert received[1].at - received[0].at >= 0.95


async def test_redirect_is_a_failure_and_not_followed(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as target:
            redirect = Answer(302, {"Location": target.url})
            with running_receiver(lambda request, index: redirect) as receiver:
                webhook_id, _ = await service.subscribe(tenant, receiver.url, [SCORED])
                await service.submit_job(tenant, many_contacts(1))
                (delivery,) = await service.final_deliveries(tenant, webhook_id, 1)
                received = list(receiver.received)
            followed = list(target.received)
    assert len(received) == 1
    assert followed == [], "the redirect target is never called"
    assert delivery["state"] == "failed"
    assert delivery["attemptCount"] == 1
    assert delivery["lastStatusCode"] == 302


async def test_timeout_is_retried_with_the_same_id(settings: Settings) -> None:
    # The first answer comes long after the timeout, so that a retry after it could not be
    # mistaken for one after the timeout, however slow the machine.
    def slow_once(request: Received, index: int) -> Answer:
        return Answer(200, delay=TIMEOUT + 20.0 if index == 0 else 0.0)

    async with running(settings, webhook_timeout=TIMEOUT) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver(slow_once) as receiver:
            webhook_id, _ = await service.subscribe(tenant, receiver.url, [SCORED])
            await service.submit_job(tenant, many_contacts(1))
            (delivery,) = await service.final_deliveries(tenant, webhook_id, 1)
            received = list(receiver.received)
    assert len(received) == 2
    assert received[0].body == received[1].body
    assert received[0].json()["id"] == delivery["id"]
    assert delivery["state"] == "delivered"
    first, second = delivery["attempts"]
    assert first["statusCode"] is None and "time" in (first["error"] or "").lower()
    assert second["statusCode"] == 200
    # The second attempt began after the first gave up at the timeout, not after the answer.
    assert TIMEOUT - 0.1 <= received[1].at - received[0].at < TIMEOUT + 10.0


async def test_connection_refused_is_retried_then_fails(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        webhook_id, _ = await service.subscribe(tenant, closed_port_url(), [SCORED])
        await service.submit_job(tenant, many_contacts(1))
        (delivery,) = await service.final_deliveries(tenant, webhook_id, 1)
    schedule_length = len(FAST_SCHEDULE.split(","))
    assert delivery["state"] == "failed"
    assert delivery["attemptCount"] == 1 + schedule_length
    assert len(delivery["attempts"]) == 1 + schedule_length
    assert all(a["statusCode"] is None for a in delivery["attempts"])
    assert "connect" in (delivery["lastError"] or "").lower()
    assert delivery["nextAttemptAt"] is None


# -- rate (per user and event type) and isolation -------------------------------------------------


async def assert_rate(db: Database, rate: int) -> None:
    """No more than ``rate`` sends of one event type start in any second. Measured where the
    service controls it, at the start of each send: arrival times at a receiver also carry
    the scheduling jitter of a loaded test machine."""
    async with db.read() as session:
        rows = await session.execute(
            select(WebhookDelivery.event_type, WebhookAttempt.attempted_at).join(
                WebhookAttempt, WebhookAttempt.delivery_id == WebhookDelivery.id
            )
        )
        starts = [(event_type, at.timestamp()) for event_type, at in rows]
    for event_type in BOTH:
        times = [at for kind, at in starts if kind == event_type]
        assert times, event_type
        assert busiest_second(times) <= rate, (event_type, busiest_second(times), rate)


async def test_rate_never_above_the_users_rate(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=5)
        with running_receiver() as receiver:
            await service.subscribe(tenant, receiver.url)
            await service.submit_job(tenant, many_contacts(30))
            await settle(service.app)
            received = list(receiver.received)
            await assert_rate(state_of(service.app).db, 5)
    assert len(by_type(received, SCORED)) == 30
    assert len(by_type(received, COMPLETED)) == 1


async def test_subscriptions_of_one_user_share_the_rate(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=10)
        with running_receiver() as first, running_receiver() as second:
            await service.subscribe(tenant, first.url)
            await service.subscribe(tenant, second.url)
            await service.submit_job(tenant, many_contacts(15))
            await settle(service.app)
            received = [*first.received, *second.received]
            await assert_rate(state_of(service.app).db, 10)
    assert len(by_type(first.received, SCORED)) == 15
    assert len(by_type(second.received, SCORED)) == 15
    assert len(by_type(received, COMPLETED)) == 2


@pytest.mark.parametrize("max_in_flight", [50, 4], ids=["default-in-flight", "small-in-flight"])
async def test_a_hung_receiver_does_not_stall_others(
    settings: Settings, max_in_flight: int
) -> None:
    hang = TIMEOUT + 2.0
    async with running(
        settings,
        webhook_timeout=TIMEOUT,
        webhook_per_endpoint=1,
        webhook_max_in_flight=max_in_flight,
    ) as service:
        stuck = await service.tenant(rate=50, name="Stuck")
        healthy = await service.tenant(rate=50, name="Healthy")
        with (
            running_receiver(lambda request, index: Answer(200, delay=hang)) as hung,
            running_receiver() as receiver,
        ):
            await service.subscribe(stuck, hung.url, [SCORED])
            await service.subscribe(healthy, receiver.url)
            # The hung receiver's backlog is older and larger than the in-flight places.
            await service.submit_job(stuck, many_contacts(8))
            # settle() would wait for the hung deliveries too: poll the receivers instead.
            await poll(service, lambda: len(hung.received) >= 1)
            started = time.monotonic()
            await service.submit_job(healthy, many_contacts(5, start=200))
            await poll(service, lambda: len(receiver.received) >= 6)
            elapsed = time.monotonic() - started
            healthy_received = list(receiver.received)
            hung_count = len(hung.received)
    assert len(by_type(healthy_received, SCORED)) == 5
    assert len(by_type(healthy_received, COMPLETED)) == 1
    # Eight hung deliveries one at a time would take 8 s; the healthy user must not wait.
    assert elapsed < 3.0, f"healthy receiver waited {elapsed:.1f} s behind a hung one"
    assert hung_count < 8, "the hung receiver was still being worked through meanwhile"


async def test_stopping_waits_for_a_delivery_slow_to_stop(settings: Settings) -> None:
    # A delivery that, once cancelled, takes longer than one wait to wind down (its attempt
    # still being recorded): stopping asks again until it has ended, so that none outlives
    # the database it writes to.
    ended = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            try:
                await asyncio.sleep(7)  # longer than any single wait of stop()
            finally:
                ended.set()

    async with running(settings) as service:
        dispatcher = state_of(service.app).extras["worker"].dispatcher
        task = asyncio.get_running_loop().create_task(slow_to_stop())
        await asyncio.sleep(0)
        # As dispatch_due tracks the deliveries it starts.
        dispatcher._inflight.add(task)
        task.add_done_callback(dispatcher._inflight.discard)
    assert ended.is_set()
    assert dispatcher.busy == 0


async def poll(service: Service, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Waits (bounded) for ``condition`` while the app's relay and worker run on their own."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        state_of(service.app).extras["worker"].dispatcher.wake()
        await asyncio.sleep(0.02)


async def test_events_go_only_to_the_owner(settings: Settings) -> None:
    async with running(settings) as service:
        owner = await service.tenant(rate=50)
        colleague = await add_user(service.db, SECRET, owner, "colleague@example.com")
        stranger = await service.tenant(rate=50, name="Other")
        with (
            running_receiver() as owner_receiver,
            running_receiver() as colleague_receiver,
            running_receiver() as stranger_receiver,
        ):
            await service.subscribe(owner, owner_receiver.url)
            await service.subscribe(colleague, colleague_receiver.url)
            await service.subscribe(stranger, stranger_receiver.url)
            owner_job = await service.submit_job(owner, many_contacts(3))
            colleague_job = await service.submit_job(colleague, many_contacts(2, start=50))
            await settle(service.app)
            owner_events = owner_receiver.events()
            colleague_events = colleague_receiver.events()
            stranger_events = stranger_receiver.events()

    def jobs_of(events: list[Any]) -> set[str]:
        return {
            e["payload"]["job"]["id"] if e["eventType"] == SCORED else e["payload"]["jobId"]
            for e in events
        }

    assert len(owner_events) == 4 and jobs_of(owner_events) == {owner_job}
    assert len(colleague_events) == 3 and jobs_of(colleague_events) == {colleague_job}
    assert stranger_events == []


async def test_not_enriched_job_sends_one_completed_and_no_contact_events(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            await service.subscribe(tenant, receiver.url)
            contacts = [
                {"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme Inc"},
                {"firstName": "Bob", "lastName": "Ray", "companyAccount": "Beta LLC"},
            ]
            job_id = await service.submit_job(tenant, contacts, kind="enrich")
            await settle(service.app)
            events = receiver.events()
        job = (await service.api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)).json()["data"]
    assert job["status"] == "Not Enriched"
    assert [e["eventType"] for e in events] == [COMPLETED]
    payload = events[0]["payload"]
    assert payload["jobId"] == job_id
    assert payload["jobStatus"] == "Not Enriched"
    assert payload["jobType"] == "enrich_and_score"
    # Nothing found for either contact: both refunded (P202), as the job says (P208).
    assert payload["creditsRefunded"] == job["creditsRefunded"] > 0

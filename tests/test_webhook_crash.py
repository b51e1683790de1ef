"""Real processes: the process delivering webhooks is killed (kill -9) in the middle of a
1000-contact job's events and restarted; the receiver must end with every contact's event at
least once, every duplicate carrying the same envelope id, and one logical job.completed."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from dialscore.webhooks import verify
from tests.fakes import Received, Receiver, running_receiver
from tests.processes import (
    DATABASES,
    REDIS_URL,
    V2,
    Processes,
    Service,
    api_client,
    base_env,
    cli_json,
    fresh_postgres_database,
    processes,
    redis_namespace,
    wait_for,
)
from tests.support import many_contacts

pytestmark = pytest.mark.slow

SECRET = "webhook-crash-test-secret-key-that-is-long-enough-for-hs256"
CONTACT_SCORED = "job.contact.scored"
JOB_COMPLETED = "job.completed"
CONTACTS = 1000
# Deliveries per second: 1000 events take about 5 s, so the kill lands well inside them.
WEBHOOK_RATE = 200
# Receipts to wait for before the kill: delivery is under way, far from over.
KILL_AFTER = 100
# Short leases, so whatever the killed process held is taken up again within seconds.
CRASH_SETTINGS = {
    "WEBHOOK_ALLOW_PRIVATE": "true",
    "WEBHOOK_LEASE_SECONDS": "2",
    "JOB_LEASE_SECONDS": "2",
    "OUTBOX_LEASE_SECONDS": "3",
    "SECRET_KEY": SECRET,
    "RELAY_POLL_SECONDS": "0.1",
    "WORKER_POLL_MS": "100",
    "WORKER_THREADS": "2",
    "WEBHOOK_POLL_SECONDS": "0.2",
}


@dataclass(frozen=True)
class Outcome:
    """What the receiver got, read once every event has arrived."""

    contact_copies: dict[str, list[Received]]
    completed: list[Received]
    received: list[Received]
    cut: list[Received]

    @property
    def duplicates(self) -> int:
        return len(self.received) - len(self.contact_copies) - 1


def create_client(env: dict[str, str], cwd: Path) -> str:
    """A business client with credits and a lifted webhook rate; its API key."""
    created = cli_json(
        ["admin", "create-client", "--name", "Crash", "--plan", "business", "--credits", "10000"],
        env=env,
        cwd=cwd,
    )
    limits = cli_json(
        [
            "admin",
            "set-limits",
            "--client",
            created["clientId"],
            "--webhook-rate",
            str(WEBHOOK_RATE),
        ],
        env=env,
        cwd=cwd,
    )
    assert limits["webhookRate"] == WEBHOOK_RATE, limits
    api_key: str = created["apiKey"]
    return api_key


def subscribe(client: httpx.Client, url: str) -> tuple[str, str]:
    """A subscription to both event types; its id and signing secret."""
    response = client.post(
        f"{V2}/webhooks",
        json={"name": "crash", "url": url, "eventTypes": [CONTACT_SCORED, JOB_COMPLETED]},
    )
    assert response.status_code == 201, response.text
    subscription: dict[str, Any] = response.json()["data"]
    return subscription["id"], subscription["secret"]


def submit(client: httpx.Client, count: int) -> str:
    response = client.post(f"{V2}/contacts/score", json={"contacts": many_contacts(count)})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["data"]["acceptedRecordCount"] == count, body
    job_id: str = body["data"]["jobId"]
    return job_id


def is_complete(request: Received) -> bool:
    """False for a request whose sender was killed before its whole body went out: the
    receiver records it, though no real receiver would act on it."""
    return len(request.body) == int(request.headers.get("content-length", "-1"))


def complete_events(receiver: Receiver, event_type: str) -> list[dict[str, Any]]:
    events = [r.json() for r in list(receiver.received) if is_complete(r)]
    return [e for e in events if e["eventType"] == event_type]


def received_contacts(receiver: Receiver) -> set[str]:
    return {e["payload"]["contact"]["id"] for e in complete_events(receiver, CONTACT_SCORED)}


def kill_mid_delivery(receiver: Receiver, deliverer: Service) -> tuple[int, float]:
    """Kills ``deliverer`` once the receiver holds KILL_AFTER requests; the contact events
    received by then and the wall-clock time of the kill."""
    wait_for(
        lambda: True if len(receiver.received) >= KILL_AFTER else None,
        timeout=60,
        interval=0.005,
        what=f"{KILL_AFTER} webhook deliveries before the kill",
        services=[deliverer],
    )
    deliverer.kill()
    killed_at = time.time()
    at_kill = len(received_contacts(receiver))
    assert 0 < at_kill < CONTACTS, (
        f"the kill did not land mid-delivery: {at_kill} of {CONTACTS} contact events received"
    )
    assert complete_events(receiver, JOB_COMPLETED) == [], "job.completed came before the kill"
    return at_kill, killed_at


def wait_all_received(receiver: Receiver, services: list[Service]) -> None:
    def done() -> bool | None:
        # Counting first keeps the polling cheap: parsing is only worth it once enough came.
        if sum(1 for r in list(receiver.received) if is_complete(r)) <= CONTACTS:
            return None
        complete = len(received_contacts(receiver)) == CONTACTS
        return True if complete and complete_events(receiver, JOB_COMPLETED) else None

    wait_for(
        done,
        timeout=120,
        interval=0.2,
        what="every contact event and job.completed after the restart",
        services=services,
    )


def delivery_log(client: httpx.Client, subscription_id: str) -> list[dict[str, Any]]:
    """Every delivery of the subscription, from its paginated log."""
    deliveries: list[dict[str, Any]] = []
    for page in range(1, 10):
        response = client.get(
            f"{V2}/webhooks/{subscription_id}/deliveries", params={"page": page, "limit": 1000}
        )
        assert response.status_code == 200, response.text
        batch = response.json()["data"]["deliveries"]
        deliveries.extend(batch)
        if len(batch) < 1000:
            return deliveries
    raise AssertionError("the delivery log has more pages than expected")


def wait_log_settled(
    client: httpx.Client, subscription_id: str, services: list[Service]
) -> list[dict[str, Any]]:
    """The delivery log once no delivery of the subscription is pending any more."""

    def settled() -> list[dict[str, Any]] | None:
        log = delivery_log(client, subscription_id)
        return log if all(d["state"] != "pending" for d in log) else None

    return wait_for(
        settled, timeout=30, interval=0.2, what="no pending delivery", services=services
    )


def check_outcome(
    receiver: Receiver, *, job_id: str, secret: str, log: list[dict[str, Any]], killed_at: float
) -> Outcome:
    received = [r for r in list(receiver.received) if is_complete(r)]
    cut = [r for r in list(receiver.received) if not is_complete(r)]
    # Only a send in flight at the kill can arrive cut short.
    assert [r.at for r in cut if r.at > killed_at] == [], "a request was cut after the kill"
    bad_signatures = [
        r.body[:200]
        for r in received
        if not verify(secret, r.body, r.headers["x-service-signature"])
    ]
    assert bad_signatures == []

    contact_copies: dict[str, list[Received]] = defaultdict(list)
    completed: list[Received] = []
    contacts_of_id: dict[str, set[str]] = defaultdict(set)
    for request in received:
        event = request.json()
        if event["eventType"] == CONTACT_SCORED:
            assert event["payload"]["job"]["id"] == job_id
            contact_id = event["payload"]["contact"]["id"]
            contact_copies[contact_id].append(request)
            contacts_of_id[event["id"]].add(contact_id)
        else:
            assert event["eventType"] == JOB_COMPLETED, event
            completed.append(request)

    assert len(contact_copies) == CONTACTS
    ids_per_contact = {c: {r.json()["id"] for r in copies} for c, copies in contact_copies.items()}
    split = {c: ids for c, ids in ids_per_contact.items() if len(ids) != 1}
    assert split == {}, f"contacts received under more than one envelope id: {split}"
    shared = {i: cs for i, cs in contacts_of_id.items() if len(cs) != 1}
    assert shared == {}, f"envelope ids carried by more than one contact: {shared}"
    # A retry resends the stored envelope: the same bytes, so the same signature.
    changed = [c for c, copies in contact_copies.items() if len({r.body for r in copies}) != 1]
    assert changed == [], f"copies of one contact event differ in their bytes: {changed[:5]}"

    assert completed, "no job.completed received"
    assert len({r.json()["id"] for r in completed}) == 1, [r.json() for r in completed]
    assert len({r.body for r in completed}) == 1
    payload = completed[0].json()["payload"]
    assert (payload["jobId"], payload["jobStatus"]) == (job_id, "Finalized"), payload
    # job.completed waits until every contact event of its job is delivered.
    first_completed = received.index(completed[0])
    late = [
        event["id"]
        for event in (r.json() for r in received[first_completed:])
        if event["eventType"] == CONTACT_SCORED
    ]
    assert late == [], f"contact events received after job.completed: {late[:5]}"

    # The service's own log: one delivery per event, all delivered, and every attempt it
    # recorded was really received (the receiver may hold more: sends the kill cut short).
    assert len(log) == CONTACTS + 1
    assert {d["state"] for d in log} == {"delivered"}, [d for d in log if d["state"] != "delivered"]
    copies_of_id: dict[str, int] = defaultdict(int)
    for request in received:
        copies_of_id[request.json()["id"]] += 1
    assert set(copies_of_id) == {d["id"] for d in log}
    undercounted = [d["id"] for d in log if copies_of_id[d["id"]] < d["attemptCount"]]
    assert undercounted == [], "attempts recorded that the receiver never got"
    return Outcome(dict(contact_copies), completed, received, cut)


def report(label: str, at_kill: int, outcome: Outcome) -> None:
    duplicated = sum(1 for copies in outcome.contact_copies.values() if len(copies) > 1)
    print(
        f"\n{label}: {at_kill} contact events before the kill; {len(outcome.received)} requests "
        f"received for {CONTACTS} contacts + 1 job.completed: {outcome.duplicates} duplicates "
        f"({duplicated} contacts received more than once, "
        f"{len(outcome.completed)} job.completed copies); "
        f"{len(outcome.cut)} requests cut short by the kill"
    )


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Processes]:
    with processes(tmp_path / "logs") as group:
        yield group


def run_crash(
    *,
    api: Service,
    api_key: str,
    receiver: Receiver,
    deliverer: Service,
    restart: Callable[[], Service],
    label: str,
) -> None:
    with api_client(api, api_key) as client:
        subscription_id, secret = subscribe(client, receiver.url)
        job_id = submit(client, CONTACTS)
    at_kill, killed_at = kill_mid_delivery(receiver, deliverer)

    restarted = restart()
    if deliverer is api:
        # The embedded server: the restarted process serves the API too.
        api = restarted
    services = [api] if api is restarted else [api, restarted]
    wait_all_received(receiver, services)
    with api_client(api, api_key) as client:
        log = wait_log_settled(client, subscription_id, services)
    outcome = check_outcome(receiver, job_id=job_id, secret=secret, log=log, killed_at=killed_at)
    report(label, at_kill, outcome)


def test_embedded_server_killed_mid_delivery_loses_no_event(
    procs: Processes, tmp_path: Path
) -> None:
    env = base_env(tmp_path / "var", **CRASH_SETTINGS)
    api_key = create_client(env, tmp_path)
    server = procs.serve(env=env, worker=True)
    with running_receiver() as receiver:
        run_crash(
            api=server,
            api_key=api_key,
            receiver=receiver,
            deliverer=server,
            restart=lambda: procs.serve(env=env, worker=True),
            label="embedded (SQLite)",
        )


@pytest.mark.skipif("postgresql" not in DATABASES, reason="PostgreSQL tests are disabled")
def test_worker_killed_mid_delivery_on_postgres_and_redis_loses_no_event(
    tmp_path: Path,
) -> None:
    with (
        fresh_postgres_database() as url,
        redis_namespace() as namespace,
        processes(tmp_path / "logs") as procs,
    ):
        env = base_env(
            tmp_path / "var",
            DATABASE_URL=url,
            REDIS_URL=REDIS_URL,
            REDIS_NAMESPACE=namespace,
            **CRASH_SETTINGS,
        )
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        api = procs.serve(env=env, worker=False)
        worker = procs.start("worker", ["worker"], env=env)
        api_key = create_client(env, tmp_path)
        with running_receiver() as receiver:
            run_crash(
                api=api,
                api_key=api_key,
                receiver=receiver,
                deliverer=worker,
                restart=lambda: procs.start("worker", ["worker"], env=env),
                label="worker on PostgreSQL + Redis",
            )
        assert api.alive(), "the API process died although only the worker was killed"

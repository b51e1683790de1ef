"""Chaos on a scale-out deployment (issue 20, P81-P84): PostgreSQL and a private Redis, two
API processes and two workers, a receiver that fails one delivery in twenty. Workers are
killed with SIGKILL in a loop (one is stopped with SIGTERM instead, and at last both are
killed in the middle of a job), one API process is killed mid-request, and Redis is stopped
for 10 s, while jobs are submitted.

Nothing may be lost: every contact's event arrives, duplicates carry the same envelope id
and bytes, each job has one logical job.completed and it comes after its contact events,
credits equal the ledger, every job finishes within 30 s of the last kill, and every process
stopped with SIGTERM exits 0. The figures are printed (run with -s to see them)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from dialscore.webhooks import verify
from tests.fakes import Answer, Received, Receiver, running_receiver
from tests.processes import (
    DATABASES,
    V2,
    Processes,
    RedisServer,
    Service,
    base_env,
    cli_json,
    free_port,
    fresh_postgres_database,
    private_redis,
    processes,
    wait_for,
    wait_ready,
)
from tests.support import many_contacts

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("postgresql" not in DATABASES, reason="PostgreSQL tests are disabled"),
]

SECRET = "chaos-test-secret-key-that-is-long-enough-for-hs256"
CONTACT_SCORED = "job.contact.scored"
JOB_COMPLETED = "job.completed"
BOTH = [CONTACT_SCORED, JOB_COMPLETED]
COST_PER_PHONE = 0.05
CREDITS = 1000
CREDIT_SCALE = 10_000  # credits are stored in ten-thousandths (P15)
JOBS = 10
CONTACTS = 40
# The last job, larger, submitted once the last round begins (not before, or a fast machine
# may have finished it by then): both workers are killed while it is processed.
LAST_CONTACTS = 200
# The submission whose API process is killed while it is answering it.
KILLED_MID_REQUEST = 3
SUBMIT_EVERY = 1.0
# Slow enough that deliveries are still waiting when Redis goes away.
WEBHOOK_RATE = 25
# The receiver fails this one request in every twenty.
FAILING = 20
# Seconds after the first submission: SIGKILLs of a worker (0 or 1, restarted at once),
# Redis away for 10 s, one worker stopped with SIGTERM (and started again), the last kill.
# Worker 1, started at 4 s, runs through Redis's return, so that its dispatcher shows when
# deliveries flow again. The last round kills both workers once the last job is under way.
WORKER_KILLS = ((2.0, 0), (4.0, 1), (9.0, 0))
REDIS_STOP, REDIS_START = 6.0, 16.0
WORKER_SIGTERM = (17.0, 0)
LAST_ROUND = 18.0
# How long a started process may take to be up, on a loaded machine.
STARTUP = 60.0
GRACE = 10.0
# The promise: every job finished within this long after the last kill.
FINISHED_WITHIN = 30.0
SETTINGS = {
    "SECRET_KEY": SECRET,
    "WEBHOOK_ALLOW_PRIVATE": "true",
    # Retries within seconds, so that the receiver's failures are retried within the test.
    "WEBHOOK_RETRY_SCHEDULE": "0.5,1,1,1,1,1,1,1,1,1,1,1",
    "RATE_LIMIT_FAILURE_MODE": "fail-closed",
    "RELAY_POLL_SECONDS": "0.2",
    "WEBHOOK_POLL_SECONDS": "0.2",
    "WORKER_POLL_MS": "200",
    "WORKER_THREADS": "2",
    # Small batches: a job takes long enough to be killed in the middle of it.
    "JOB_BATCH_SIZE": "10",
    "SHUTDOWN_GRACE_SECONDS": str(GRACE),
    # The leases are the defaults (10 s): the recovery measured is the one operators get.
}


def fails_one_in_twenty(request: Received, index: int) -> Answer:
    return Answer(500) if index % FAILING == FAILING - 1 else Answer(200)


@dataclass
class Chaos:
    database: str
    procs: Processes
    env: dict[str, str]
    redis: RedisServer
    apis: list[Service]
    workers: list[Service]
    worker_kills: int = 0
    api_kills: int = 0
    killed_mid_request: bool = False
    sigterm_exits: list[tuple[str, int | None, float]] = field(default_factory=list)
    last_kill: float = 0.0
    redis_back: float = 0.0
    last_round: threading.Event = field(default_factory=threading.Event)

    def kill_worker(self, index: int) -> None:
        self.workers[index].kill()
        self.worker_kills += 1
        self.last_kill = time.time()
        self.workers[index] = self.procs.start("worker", ["worker"], env=self.env)

    def kill_both_mid_job(self) -> None:
        """Kills both workers while the last job is being processed: whatever they held (the
        job, its message, deliveries in flight) is taken over once they are back."""
        self.last_round.set()  # the last job is submitted now
        wait_for(
            lambda: True if last_job_under_way(self.database) else None,
            timeout=STARTUP,
            interval=0.02,
            what="the last job to be under way",
        )
        for index in (0, 1):
            self.kill_worker(index)

    def terminate(self, *services: Service) -> None:
        """SIGTERM to each, then notes each one's exit status and how long it took."""
        started = time.monotonic()
        for service in services:
            service.process.send_signal(signal.SIGTERM)
        for service in services:
            with contextlib.suppress(subprocess.TimeoutExpired):
                service.process.wait(timeout=GRACE + 10)
            took = time.monotonic() - started
            self.sigterm_exits.append((service.name, service.process.returncode, took))
            service.stop()  # closes its log (and kills it, had it not exited)

    def restart_worker_gracefully(self, index: int) -> None:
        # Stopped once it runs: a process stopped while it starts has nothing to hand back.
        worker = self.workers[index]
        wait_running(worker)
        self.terminate(worker)
        self.workers[index] = self.procs.start("worker", ["worker"], env=self.env)

    def stop_redis(self) -> None:
        self.redis.stop()

    def start_redis(self) -> None:
        # A worker runs when Redis comes back (on a loaded machine a restarted one may take
        # a while to start), so that the time deliveries take to flow again is theirs.
        wait_running(self.workers[1])
        self.redis.start()
        self.redis_back = time.time()


def wait_running(worker: Service) -> None:
    wait_for(
        lambda: True if "worker running" in worker.log_tail(100_000) else None,
        timeout=STARTUP,
        interval=0.1,
        what="the worker to run",
        services=[worker],
    )


class Submitter(threading.Thread):
    """Submits the jobs one a second (the last once the last round begins), each with its own
    Idempotency-Key, to either API process, trying again (the same key) on a 503 (Redis away,
    fail-closed), a 429 or a process that is gone; kills one API process in the middle of
    answering a submission."""

    def __init__(self, chaos: Chaos, api_key: str) -> None:
        super().__init__(daemon=True)
        self.chaos = chaos
        self.api_key = api_key
        self.job_ids: dict[str, str] = {}  # idempotency key -> job id
        self.accepted = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            for n in range(JOBS):
                started = time.monotonic()
                key = f"chaos-{n}"
                count = LAST_CONTACTS if n == JOBS - 1 else CONTACTS
                if n == JOBS - 1:
                    self.chaos.last_round.wait(timeout=LAST_ROUND + STARTUP)
                body = {"contacts": many_contacts(count, start=n * 1000)}
                if n == KILLED_MID_REQUEST:
                    self.kill_mid_request(body, key)
                self.submit(body, key, first=n % 2)
                time.sleep(max(0.0, SUBMIT_EVERY - (time.monotonic() - started)))
        except BaseException as exc:
            self.failure = exc

    def post(self, api: Service, body: dict[str, Any], key: str) -> httpx.Response:
        return httpx.post(
            f"{api.base_url}{V2}/contacts/score",
            json=body,
            headers={"Authorization": f"Bearer {self.api_key}", "Idempotency-Key": key},
            timeout=30,
            trust_env=False,
        )

    def submit(self, body: dict[str, Any], key: str, *, first: int) -> None:
        deadline = time.monotonic() + 60
        attempt = 0
        while True:
            api = self.chaos.apis[(first + attempt) % 2]
            attempt += 1
            try:
                response = self.post(api, body, key)
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code == 200:
                data = response.json()["data"]
                assert data["acceptedRecordCount"] == len(body["contacts"]), data
                self.job_ids[key] = data["jobId"]
                self.accepted += data["acceptedRecordCount"]
                return
            if response is not None:
                assert response.status_code in (429, 503), response.text
            assert time.monotonic() < deadline, f"submission {key} never accepted"
            time.sleep(0.2)

    def kill_mid_request(self, body: dict[str, Any], key: str) -> None:
        """Sends the submission to one API process and kills that process while the request
        waits for the client's row (held here, so that the kill surely lands mid-request)."""
        victim = self.chaos.apis[1]
        outcome: dict[str, Any] = {}

        def post() -> None:
            try:
                outcome["response"] = self.post(victim, body, key)
            except httpx.TransportError as exc:
                outcome["error"] = exc

        request = threading.Thread(target=post, daemon=True)
        with psycopg.connect(self.chaos.database) as holder:
            holder.execute("SELECT id FROM clients FOR UPDATE")
            request.start()
            wait_for(
                lambda: True if charge_waiting(holder) else None,
                timeout=STARTUP,
                what="the submission to wait for the client's row",
            )
            victim.kill()
            self.chaos.api_kills += 1
            self.chaos.last_kill = time.time()
            holder.rollback()
        request.join(timeout=30)
        # No answer: the request died with its process, its transaction never committed.
        # The same key sent to the other process makes the job once.
        self.chaos.killed_mid_request = "error" in outcome
        self.chaos.apis[1] = self.chaos.procs.serve(env=self.chaos.env, worker=False)


def charge_waiting(holder: psycopg.Connection[Any]) -> bool:
    """Whether a submission's charge waits for the client's row (held by ``holder``)."""
    with psycopg.connect(holder.info.dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query ILIKE 'UPDATE clients%'"
        ).fetchone()
    return bool(row and row[0])


def last_job_under_way(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM jobs WHERE accepted_count = %s AND status = 'Processing' "
            "AND processed_count > 0",
            (LAST_CONTACTS,),
        ).fetchone()
    return bool(row and row[0])


def complete(request: Received) -> bool:
    """False for a request cut short by a SIGKILL while its body was being sent."""
    return len(request.body) == int(request.headers.get("content-length", "-1"))


def database_state(url: str) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        jobs = conn.execute(
            "SELECT id, status, accepted_count, processed_count, finalized_at FROM jobs"
        ).fetchall()
        unscored = conn.execute("SELECT count(*) FROM contacts WHERE state <> 'scored'").fetchone()
        contacts = conn.execute("SELECT count(*) FROM contacts").fetchone()
        credits = conn.execute("SELECT credits FROM clients").fetchall()
        ledger = conn.execute("SELECT coalesce(sum(delta), 0) FROM credit_ledger").fetchone()
        deliveries = conn.execute(
            "SELECT state, count(*) FROM webhook_deliveries GROUP BY state"
        ).fetchall()
        outbox = conn.execute("SELECT count(*) FROM outbox").fetchone()
    assert unscored and contacts and ledger and outbox
    return {
        "jobs": jobs,
        "unscored": unscored[0],
        "contacts": contacts[0],
        "credits": [row[0] for row in credits],
        "ledger": ledger[0],
        "deliveries": dict(deliveries),
        "outbox": outbox[0],
    }


def events_of(receiver: Receiver) -> list[tuple[Received, dict[str, Any]]]:
    return [(r, r.json()) for r in list(receiver.received) if complete(r)]


def all_received(receiver: Receiver, job_ids: set[str], contacts: int) -> bool:
    seen: set[str] = set()
    completed: set[str] = set()
    for _, event in events_of(receiver):
        if event["eventType"] == CONTACT_SCORED:
            seen.add(event["payload"]["contact"]["id"])
        else:
            completed.add(event["payload"]["jobId"])
    return len(seen) == contacts and completed == job_ids


def at_the_seconds(start: float, plan: list[tuple[float, Callable[[], None]]]) -> None:
    """Runs each action of ``plan`` at its time (seconds after ``start``), in order."""
    for at, action in sorted(plan, key=lambda step: step[0]):
        time.sleep(max(0.0, start + at - time.monotonic()))
        action()


def start_api(procs: Processes, env: dict[str, str]) -> Service:
    """``dialscore serve --no-worker`` on a free port, not waited for."""
    port = free_port()
    args = ["serve", "--no-worker", "--host", "127.0.0.1", "--port", str(port)]
    return procs.start("serve", args, env=env, port=port)


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Processes]:
    with processes(tmp_path / "logs") as group:
        yield group


def test_chaos_loses_nothing_and_drains_within_30_s_of_the_last_kill(
    procs: Processes, tmp_path: Path
) -> None:
    with (
        fresh_postgres_database() as url,
        private_redis(tmp_path / "redis") as redis_server,
        running_receiver(fails_one_in_twenty) as receiver,
    ):
        env = base_env(tmp_path / "var", DATABASE_URL=url, REDIS_URL=redis_server.url, **SETTINGS)
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        created = cli_json(
            [
                *("admin", "create-client", "--name", "Chaos"),
                *("--plan", "enterprise", "--credits", str(CREDITS)),
            ],
            env=env,
            cwd=tmp_path,
        )
        with psycopg.connect(url, autocommit=True) as conn:  # as set-limits --webhook-rate
            overrides = json.dumps({"webhook_rate": WEBHOOK_RATE})
            conn.execute("UPDATE clients SET overrides = %s", (overrides,))
        workers = [procs.start("worker", ["worker"], env=env) for _ in range(2)]
        apis = [start_api(procs, env) for _ in range(2)]
        for api in apis:
            wait_ready(api, timeout=STARTUP)
        for worker in workers:
            wait_running(worker)
        chaos = Chaos(url, procs, env, redis_server, apis, workers)
        subscribed = httpx.post(
            f"{apis[0].base_url}{V2}/webhooks",
            json={"name": "chaos", "url": receiver.url, "eventTypes": BOTH},
            headers={"Authorization": f"Bearer {created['apiKey']}"},
            trust_env=False,
        )
        assert subscribed.status_code == 201, subscribed.text
        secret = subscribed.json()["data"]["secret"]

        submitter = Submitter(chaos, created["apiKey"])
        start = time.monotonic()
        submitter.start()
        at_the_seconds(
            start,
            [
                *((at, lambda i=i: chaos.kill_worker(i)) for at, i in WORKER_KILLS),
                (REDIS_STOP, chaos.stop_redis),
                (REDIS_START, chaos.start_redis),
                (WORKER_SIGTERM[0], lambda: chaos.restart_worker_gracefully(WORKER_SIGTERM[1])),
                (LAST_ROUND, chaos.kill_both_mid_job),
            ],
        )
        submitter.join(timeout=90)
        assert not submitter.is_alive(), "the submissions did not end"
        if submitter.failure is not None:
            raise submitter.failure
        last_kill = chaos.last_kill
        job_ids = set(submitter.job_ids.values())

        def drained() -> bool | None:
            state = database_state(url)
            finished = all(status == "Finalized" for _, status, *_ in state["jobs"])
            # Received is not yet recorded: a worker writes the attempt after the answer.
            recorded = state["deliveries"] == {"delivered": submitter.accepted + JOBS}
            if finished and recorded and all_received(receiver, job_ids, submitter.accepted):
                return True
            return None

        wait_for(
            drained,
            timeout=FINISHED_WITHIN + 30,
            interval=0.2,
            what="every job finished and every event received and recorded",
            services=[*chaos.apis, *chaos.workers],
        )
        drain = time.time() - last_kill
        state = database_state(url)
        chaos.terminate(*chaos.apis, *chaos.workers)
        everything = list(receiver.received)
        received = events_of(receiver)

    cut = [r for r in everything if not complete(r)]
    failed_answers = sum(1 for i, r in enumerate(everything) if i % FAILING == FAILING - 1)
    # Requests answered 2xx beyond one per event: what the kills made the workers send again.
    answered = [
        r.json()["id"]
        for i, r in enumerate(everything)
        if i % FAILING != FAILING - 1 and complete(r)
    ]
    duplicates = len(answered) - len(set(answered))
    flowing = min((r.at for r, _ in received if r.at > chaos.redis_back), default=None)
    assert flowing is not None
    ids = {event["id"] for _, event in received}
    finished: list[datetime] = [at for *_, at in state["jobs"]]
    latest = max(at.timestamp() for at in finished)
    print(
        f"\nchaos: {JOBS} jobs, {submitter.accepted} contacts; {chaos.worker_kills} worker "
        f"SIGKILLs, 1 worker SIGTERM, {chaos.api_kills} API SIGKILL mid-request; Redis "
        f"stopped for {REDIS_START - REDIS_STOP:.0f} s; receiver answered {failed_answers} "
        f"requests 500; {len(received)} complete requests for {len(ids)} events: "
        f"{duplicates} duplicates, {len(cut)} requests cut by kills; last job finished "
        f"{latest - last_kill:.1f} s and every event received {drain:.1f} s after the last "
        f"kill; deliveries flowing "
        f"{flowing - chaos.redis_back:.1f} s after Redis came back; SIGTERM exits: "
        + ", ".join(f"{name} {code} in {took:.1f} s" for name, code, took in chaos.sigterm_exits)
    )

    # Every job, once: one per submission (the request cut off by the kill included).
    assert len(state["jobs"]) == JOBS == len(job_ids)
    assert {job_id for job_id, *_ in state["jobs"]} == job_ids
    assert all(processed == accepted for _, _, accepted, processed, _ in state["jobs"])
    assert state["contacts"] == submitter.accepted and state["unscored"] == 0
    assert state["outbox"] == 0
    assert state["deliveries"] == {"delivered": submitter.accepted + JOBS}
    # Credits equal the ledger, charged once per submission.
    (balance,) = state["credits"]
    assert balance == state["ledger"]
    assert balance == round((CREDITS - submitter.accepted * COST_PER_PHONE) * CREDIT_SCALE)
    # Every job finished within 30 s of the last kill.
    assert latest - last_kill <= FINISHED_WITHIN, f"a job finished {latest - last_kill:.1f} s late"

    signatures = [(r.body, r.headers["x-service-signature"]) for r, _ in received]
    assert [body[:100] for body, sig in signatures if not verify(secret, body, sig)] == []
    copies: dict[str, set[bytes]] = defaultdict(set)
    contacts_of_id: dict[str, set[str]] = defaultdict(set)
    ids_of_contact: dict[str, set[str]] = defaultdict(set)
    completed_of_job: dict[str, set[str]] = defaultdict(set)
    for request, event in received:
        copies[event["id"]].add(request.body)
        if event["eventType"] == CONTACT_SCORED:
            contact_id = event["payload"]["contact"]["id"]
            contacts_of_id[event["id"]].add(contact_id)
            ids_of_contact[contact_id].add(event["id"])
        else:
            completed_of_job[event["payload"]["jobId"]].add(event["id"])
    # Duplicates only with the same id and the same bytes; one id per contact, one per job.
    assert [i for i, bodies in copies.items() if len(bodies) != 1] == []
    assert [c for c, found in ids_of_contact.items() if len(found) != 1] == []
    assert [i for i, found in contacts_of_id.items() if len(found) != 1] == []
    assert len(ids_of_contact) == submitter.accepted
    assert set(completed_of_job) == job_ids
    assert [j for j, found in completed_of_job.items() if len(found) != 1] == []
    # Each job.completed after every copy of its job's contact events.
    first_completed: dict[str, int] = {}
    for position, (_, event) in enumerate(received):
        if event["eventType"] == JOB_COMPLETED:
            first_completed.setdefault(event["payload"]["jobId"], position)
    late = [
        event["id"]
        for position, (_, event) in enumerate(received)
        if event["eventType"] == CONTACT_SCORED
        and position > first_completed[event["payload"]["job"]["id"]]
    ]
    assert late == [], f"contact events received after their job.completed: {late[:5]}"

    # Killed mid-request, and every process stopped with SIGTERM exited 0 within its grace.
    assert chaos.killed_mid_request
    assert [(name, code) for name, code, _ in chaos.sigterm_exits if code != 0] == []
    assert all(took < GRACE + 5 for _, _, took in chaos.sigterm_exits), chaos.sigterm_exits

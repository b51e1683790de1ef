"""Webhook delivery throughput and latency of the embedded service, to a local receiver.

Starts ``python -m dialscore serve`` (SQLite in a temporary data directory, worker and
dispatcher in-process, ``DIALSCORE_WEBHOOK_ALLOW_PRIVATE=true``) on a free local port and a
small HTTP/1.1 receiver on 127.0.0.1 that answers 200 and notes when each event arrived.
Creates an enterprise client with the operator CLI, lifts its webhook rate
(``admin set-limits --webhook-rate``), subscribes the receiver to both event types, then, for
each of ``--runs`` jobs of ``--contacts`` contacts submitted one after the other, prints:

(a) deliveries per second: the job's events received (contact events and job.completed)
    over the time from its first to its last event;
(b) the time from submitting the job to receiving its last event (its job.completed).

Every wait is bounded; the whole run stops after ``--timeout`` seconds. The server and the
receiver are always stopped and the data directory removed (``--keep-data`` keeps it).

    python bench/webhook_delivery.py [--runs 3] [--contacts 1000] [--rate 100000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from embedded import (
    BenchError,
    Deadline,
    bench_data_dir,
    cli,
    free_port,
    running_server,
    server_env,
)

V2 = "/api/public/v2"
CONTACT_SCORED = "job.contact.scored"
JOB_COMPLETED = "job.completed"


# -- receiver ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    at: float
    event_type: str
    job_id: str | None
    envelope_id: str


def _job_of(event: dict[str, Any]) -> str | None:
    payload = event.get("payload") or {}
    if event.get("eventType") == CONTACT_SCORED:
        job_id: str | None = (payload.get("job") or {}).get("id")
        return job_id
    return payload.get("jobId")


class Receiver:
    """Answers every POST with 200 at once (keep-alive) and notes each event's arrival."""

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self.lock = threading.Lock()
        self.completed = threading.Condition(self.lock)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hook"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                at = time.monotonic()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                try:
                    event = json.loads(body)
                    arrival = Arrival(at, event["eventType"], _job_of(event), event["id"])
                except (ValueError, KeyError, TypeError):
                    return
                with receiver.completed:
                    receiver.arrivals.append(arrival)
                    if arrival.event_type == JOB_COMPLETED:
                        receiver.completed.notify_all()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def wait_completed(self, job_id: str, deadline: Deadline) -> list[Arrival]:
        """Every arrival of the job once its job.completed has come (bounded)."""
        with self.completed:
            while not any(
                a.event_type == JOB_COMPLETED and a.job_id == job_id for a in self.arrivals
            ):
                deadline.check(f"waiting for job.completed of job {job_id}")
                self.completed.wait(timeout=min(1.0, max(0.01, deadline.left())))
            return [a for a in self.arrivals if a.job_id == job_id]


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    receiver.thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


# -- server -----------------------------------------------------------------------------------


def create_client(env: dict[str, str], cwd: Path, rate: int, deadline: Deadline) -> str:
    """An enterprise client with a webhook rate of ``rate`` per second; its API key."""
    command = ["admin", "create-client", "--name", "Bench", "--plan", "enterprise"]
    created = cli([*command, "--credits", "1000000"], env, cwd, deadline)
    limits = cli(
        ["admin", "set-limits", "--client", created["clientId"], "--webhook-rate", str(rate)],
        env,
        cwd,
        deadline,
    )
    if limits.get("webhookRate") != rate:
        raise BenchError(f"set-limits did not apply the webhook rate: {limits}")
    api_key: str = created["apiKey"]
    return api_key


# -- runs -------------------------------------------------------------------------------------


def contacts(count: int, run: int) -> list[dict[str, str]]:
    """``count`` distinct contacts with one valid US number each."""
    return [
        {"firstName": f"First{run}x{i}", "lastName": f"Last{i}", "phone": f"+1415555{i:04d}"}
        for i in range(count)
    ]


def subscribe(client: httpx.Client, url: str) -> None:
    response = client.post(
        f"{V2}/webhooks",
        json={"name": "bench", "url": url, "eventTypes": [CONTACT_SCORED, JOB_COMPLETED]},
    )
    if response.status_code != 201:
        raise BenchError(f"subscription answered {response.status_code}: {response.text[:300]}")


def submit(client: httpx.Client, batch: list[dict[str, str]]) -> str:
    response = client.post(f"{V2}/contacts/score", json={"contacts": batch})
    if response.status_code != 200:
        raise BenchError(f"submission answered {response.status_code}: {response.text[:300]}")
    data = response.json()["data"]
    if data["acceptedRecordCount"] != len(batch):
        raise BenchError(f"only {data['acceptedRecordCount']} of {len(batch)} contacts accepted")
    job_id: str = data["jobId"]
    return job_id


@dataclass(frozen=True)
class Run:
    events: int
    duplicates: int
    span: float
    to_first: float
    to_last: float

    @property
    def per_second(self) -> float:
        return self.events / self.span if self.span > 0 else float("inf")


def measure(
    client: httpx.Client, receiver: Receiver, size: int, run: int, deadline: Deadline
) -> Run:
    batch = contacts(size, run)
    submitted = time.monotonic()
    job_id = submit(client, batch)
    arrivals = receiver.wait_completed(job_id, deadline)
    distinct = {a.envelope_id for a in arrivals}
    scored = sum(1 for a in arrivals if a.event_type == CONTACT_SCORED)
    if len({a.envelope_id for a in arrivals if a.event_type == CONTACT_SCORED}) != size:
        raise BenchError(f"job {job_id}: {scored} contact events for {size} contacts")
    times = sorted(a.at for a in arrivals)
    return Run(
        events=len(arrivals),
        duplicates=len(arrivals) - len(distinct),
        span=times[-1] - times[0],
        to_first=times[0] - submitted,
        to_last=times[-1] - submitted,
    )


def run(args: argparse.Namespace) -> None:
    deadline = Deadline(args.timeout)
    with bench_data_dir(args.keep_data) as data_dir:
        env = server_env(data_dir, WEBHOOK_ALLOW_PRIVATE="true")
        api_key = create_client(env, data_dir, args.rate, deadline)
        port = free_port()
        with running_server(env, data_dir, port, deadline), running_receiver() as receiver:
            headers = {"Authorization": f"Bearer {api_key}"}
            base = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=base, headers=headers, timeout=60.0) as client:
                subscribe(client, receiver.url)
                # A small job first, so the timed runs meet a warm process.
                measure(client, receiver, 10, run=0, deadline=deadline)
                runs = []
                for number in range(1, args.runs + 1):
                    result = measure(client, receiver, args.contacts, number, deadline)
                    runs.append(result)
                    print(
                        f"run {number}: {result.events} events "
                        f"({args.contacts} job.contact.scored + job.completed, "
                        f"{result.duplicates} duplicates): "
                        f"(a) {result.per_second:.0f} deliveries/s "
                        f"(first to last event {result.span:.2f} s); "
                        f"(b) submission to last event {result.to_last:.2f} s "
                        f"(to first event {result.to_first:.2f} s)",
                        flush=True,
                    )
                print(
                    f"median of {len(runs)} runs of {args.contacts} contacts, webhook rate "
                    f"{args.rate}/s: (a) "
                    f"{statistics.median(r.per_second for r in runs):.0f} deliveries/s; "
                    f"(b) submission to last event "
                    f"{statistics.median(r.to_last for r in runs):.2f} s",
                    flush=True,
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed jobs, one at a time (3)")
    parser.add_argument("--contacts", type=int, default=1000, help="contacts per job (1000)")
    parser.add_argument(
        "--rate", type=int, default=100_000, help="client's webhook deliveries/s (100000)"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="overall limit, s (300)")
    parser.add_argument("--keep-data", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    if not (1 <= args.contacts <= 1000) or args.runs < 1 or args.rate < 1:
        parser.error("--contacts must be 1..1000; --runs and --rate at least 1")
    try:
        run(args)
    except BenchError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Submission latency and job throughput of the embedded service, measured over real HTTP.

Starts ``python -m dialscore serve`` (SQLite in a temporary data directory, worker in-process)
on a free local port, creates an enterprise client with the operator CLI, then:

(a) sends ``--requests`` sequential scoring submissions of ``--contacts`` distinct contacts and
    prints the median and p99 latency;
(b) submits ``--jobs`` jobs of ``--contacts`` contacts back to back and measures the time from
    the first submission until every job is ``Finalized``, as contacts per second.

Every wait is bounded; the whole run stops after ``--timeout`` seconds. The server is always
stopped and the data directory removed at the end (``--keep-data`` keeps it).

    python bench/submission_latency.py [--requests 30] [--contacts 1000] [--jobs 10]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from dialscore.phones import analyse
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
TERMINAL = ("Finalized", "Not Enriched")
US_AREA_CODES = (212, 206, 312, 415, 512, 617, 646, 702, 718, 805)


# -- data -------------------------------------------------------------------------------------


def _valid(number: str, region: str = "US") -> bool:
    return analyse(number, region) is not None


def _random_number(rng: random.Random) -> tuple[str, str | None]:
    """A valid number and its phoneCountry hint; US and UK, in E.164 and national forms."""
    for _ in range(100):
        pick = rng.random()
        if pick < 0.45:
            area = rng.choice(US_AREA_CODES)
            number = f"+1{area}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}"
            if _valid(number):
                return number, None
        elif pick < 0.6:
            area = rng.choice(US_AREA_CODES)
            number = f"({area}) {rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"
            if _valid(number):
                return number, None
        elif pick < 0.8:
            number = f"+447{rng.randint(400, 999)}{rng.randint(0, 999_999):06d}"
            if _valid(number):
                return number, None
        elif pick < 0.9:
            number = f"020 7{rng.randint(0, 999):03d} {rng.randint(0, 9999):04d}"
            if _valid(number, "GB"):
                return number, "GB"
        else:
            number = f"+4420{rng.randint(3, 8)}{rng.randint(0, 9_999_999):07d}"
            if _valid(number):
                return number, None
    raise BenchError("could not generate a valid phone number")


def make_contacts(rng: random.Random, count: int, start: int) -> list[dict[str, str]]:
    """``count`` distinct contacts with 1 to 3 valid numbers each."""
    contacts = []
    slots = ("phone", "phone2", "phone3")
    for i in range(start, start + count):
        contact = {
            "firstName": f"First{i}",
            "lastName": f"Last{i}",
            "email": f"person{i}@example.com",
            "companyAccount": f"Company {i % 97}",
            "title": "Head of Operations",
        }
        for slot in slots[: rng.randint(1, 3)]:
            number, country = _random_number(rng)
            contact[slot] = number
            if country:
                contact[f"{slot}Country"] = country
        contacts.append(contact)
    return contacts


# -- server -----------------------------------------------------------------------------------


def create_client(env: dict[str, str], cwd: Path, deadline: Deadline) -> str:
    command = ["admin", "create-client", "--name", "Bench", "--plan", "enterprise"]
    api_key: str = cli([*command, "--credits", "1000000"], env, cwd, deadline)["apiKey"]
    return api_key


# -- requests ---------------------------------------------------------------------------------


def request(
    client: httpx.Client, method: str, url: str, deadline: Deadline, **kwargs: Any
) -> httpx.Response:
    """One request; a 429 is waited out (bounded by the deadline) and retried."""
    for _ in range(100):
        deadline.check(f"{method} {url}")
        timeout = max(1.0, min(60.0, deadline.left()))
        response = client.request(method, url, timeout=timeout, **kwargs)
        if response.status_code != 429:
            return response
        wait = float(response.headers.get("Retry-After", "1"))
        time.sleep(max(0.05, min(wait, deadline.left())))
    raise BenchError(f"{method} {url}: still rate-limited after 100 attempts")


def submit(client: httpx.Client, contacts: list[dict[str, str]], deadline: Deadline) -> str:
    response = request(
        client, "POST", f"{V2}/contacts/score", deadline, json={"contacts": contacts}
    )
    if response.status_code != 200:
        raise BenchError(f"submission answered {response.status_code}: {response.text[:300]}")
    data = response.json()["data"]
    if data["acceptedRecordCount"] != len(contacts):
        rejected = response.json().get("error") or {}
        sample = (rejected.get("records") or [None])[0]
        raise BenchError(
            f"only {data['acceptedRecordCount']} of {len(contacts)} contacts accepted; "
            f"first rejection: {sample}"
        )
    job_id: str = data["jobId"]
    return job_id


def wait_finalized(client: httpx.Client, job_ids: list[str], deadline: Deadline) -> float:
    """Polls the oldest unfinished job until every job is terminal; the monotonic end time."""
    pending = list(job_ids)
    while pending:
        deadline.check(f"waiting for {len(pending)} jobs to finish")
        response = request(client, "GET", f"{V2}/jobs/{pending[0]}", deadline)
        if response.status_code != 200:
            raise BenchError(f"GET job answered {response.status_code}: {response.text[:300]}")
        status = response.json()["data"]["status"]
        if status in TERMINAL:
            if status != "Finalized":
                raise BenchError(f"job {pending[0]} ended as {status}")
            pending.pop(0)
            continue
        time.sleep(0.05)
    return time.monotonic()


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


# -- phases -----------------------------------------------------------------------------------


def measure_latency(
    client: httpx.Client, rng: random.Random, requests: int, size: int, deadline: Deadline
) -> tuple[list[float], list[str]]:
    batches = [make_contacts(rng, size, start=i * size) for i in range(requests)]
    latencies, job_ids = [], []
    for batch in batches:
        started = time.perf_counter()
        job_ids.append(submit(client, batch, deadline))
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies, job_ids


def measure_throughput(
    client: httpx.Client, rng: random.Random, jobs: int, size: int, start: int, deadline: Deadline
) -> tuple[int, float, float]:
    """Contacts, seconds from first submission to all Finalized, seconds spent submitting."""
    batches = [make_contacts(rng, size, start=start + i * size) for i in range(jobs)]
    first = time.monotonic()
    job_ids = [submit(client, batch, deadline) for batch in batches]
    submitted = time.monotonic()
    end = wait_finalized(client, job_ids, deadline)
    return jobs * size, end - first, submitted - first


def run(args: argparse.Namespace) -> None:
    deadline = Deadline(args.timeout)
    rng = random.Random(args.seed)
    with bench_data_dir(args.keep_data) as data_dir:
        env = server_env(data_dir)
        api_key = create_client(env, data_dir, deadline)
        port = free_port()
        with running_server(env, data_dir, port, deadline):
            headers = {"Authorization": f"Bearer {api_key}"}
            base = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=base, headers=headers) as client:
                warmup = submit(client, make_contacts(rng, 10, start=10**8), deadline)
                wait_finalized(client, [warmup], deadline)

                latencies, job_ids = measure_latency(
                    client, rng, args.requests, args.contacts, deadline
                )
                print(
                    f"submission {args.contacts} contacts: "
                    f"median {statistics.median(latencies):.1f} ms, "
                    f"p99 {percentile(latencies, 0.99):.1f} ms, "
                    f"min {min(latencies):.1f} ms, max {max(latencies):.1f} ms "
                    f"(n={len(latencies)})",
                    flush=True,
                )
                # Let the worker drain phase (a) so phase (b) measures its own jobs only.
                wait_finalized(client, job_ids, deadline)

                contacts, seconds, submitting = measure_throughput(
                    client,
                    rng,
                    args.jobs,
                    args.contacts,
                    start=args.requests * args.contacts,
                    deadline=deadline,
                )
                print(
                    f"processing: {contacts} contacts in {args.jobs} jobs in {seconds:.1f} s "
                    f"= {contacts / seconds:.0f} contacts/s "
                    f"(first submission to last job Finalized; submitting took {submitting:.1f} s)",
                    flush=True,
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=30, help="latency submissions (30)")
    parser.add_argument("--contacts", type=int, default=1000, help="contacts per job (1000)")
    parser.add_argument("--jobs", type=int, default=10, help="jobs in the throughput run (10)")
    parser.add_argument("--timeout", type=float, default=300.0, help="overall limit, s (300)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the contact data")
    parser.add_argument("--keep-data", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    if not (1 <= args.contacts <= 1000) or args.requests < 1 or args.jobs < 1:
        parser.error("--contacts must be 1..1000; --requests and --jobs at least 1")
    try:
        run(args)
    except BenchError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Webhook delivery of the service against the machine's limit, to one local receiver.

Starts a receiver in a process of its own (``delivery_receiver.py``: 127.0.0.1, answers 200 at
once, notes when each event arrived) and, in the same run, to that receiver:

1. the baseline (``delivery_baseline.py``, a process of its own): a plain ``httpx.AsyncClient``
   posting ``--baseline-posts`` signed ``job.contact.scored`` envelopes, 8 at a time (the
   service's ``DIALSCORE_WEBHOOK_PER_ENDPOINT``), no database: posts/s and CPU per post;
2. each setup of ``--setups`` in turn: ``embedded`` (``dialscore serve`` on SQLite),
   ``postgres`` (``dialscore serve --no-worker`` and one ``dialscore worker`` on a new
   PostgreSQL database and a Redis namespace of its own) and ``postgres2`` (two workers). An
   enterprise client with a lifted webhook rate subscribes the receiver to both events; after a
   10-contact warm-up job, ``--runs`` jobs of ``--contacts`` contacts are submitted one after the
   other. Prints per job the deliveries/s (its events over first to last event) and the time
   from submission to its last event; per setup the CPU time per delivery of the delivering
   processes (the served process, or the workers; ``/proc/<pid>/stat`` around the timed jobs),
   the API process's CPU per contact submitted, the peak memory (``VmHWM``) of each process and
   the duplicates (an envelope id received twice). A missing event fails the setup.

A table of the figures, one row per setup, ends the output. ``--profile DIR`` records py-spy
profiles (collapsed stacks) of the processes during the timed jobs; ``profile_top.py`` sums
them up. ``--source DIR`` runs the service from another ``src`` directory (a ``git archive``
of another commit). Every wait is bounded (``--timeout`` a setup); every process is stopped,
every database dropped and every data directory removed in every case.

    python bench/webhook_delivery.py [--setups embedded,postgres,postgres2] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from delivery_baseline import run_baseline
from delivery_receiver import CONTACT_SCORED, JOB_COMPLETED, Arrival, Receiver, running_receiver
from delivery_setups import SETUPS, Service, started
from embedded import BenchError, Deadline, bench_data_dir
from process_stats import cpu_seconds, peak_mib, profiles
from profile_top import read as read_profile

V2 = "/api/public/v2"
PER_ENDPOINT = 8  # the service's default DIALSCORE_WEBHOOK_PER_ENDPOINT
WARM_UP_CONTACTS = 10
IDLE_SECONDS = 2.0  # how long the idle processes' CPU use is read over


@dataclass(frozen=True)
class Run:
    job_id: str
    events: int
    span: float
    to_first: float
    to_last: float

    @property
    def per_second(self) -> float:
        return self.events / self.span if self.span > 0 else float("inf")


@dataclass
class Figures:
    """One row of the final table."""

    label: str
    per_second: float
    cpu_per_delivery: float  # seconds, summed over the delivering processes
    peaks: dict[str, float]  # MiB by process
    duplicates: int
    to_last: float | None = None
    api_cpu_per_contact: float | None = None
    runs: list[Run] = field(default_factory=list)


# -- the receiver's side ----------------------------------------------------------------------


def per_second(arrivals: list[Arrival]) -> tuple[float, float]:
    """(events per second over first to last arrival, that span in seconds)."""
    times = [a.at for a in arrivals]
    span = max(times) - min(times)
    return (len(arrivals) / span if span > 0 else float("inf")), span


def duplicates(arrivals: list[Arrival]) -> int:
    return len(arrivals) - len({a.envelope_id for a in arrivals})


@dataclass(frozen=True)
class ReceiverMark:
    """The receiver's CPU time, the clock and its connections at the start of a phase."""

    cpu: float
    wall: float
    connections: int

    @classmethod
    def now(cls, receiver: Receiver) -> ReceiverMark:
        return cls(cpu_seconds(receiver.pid), time.monotonic(), receiver.connections())

    def load(self, receiver: Receiver, requests: int) -> str:
        """What the receiver spent on the ``requests`` since: is it the limit?"""
        cpu = cpu_seconds(receiver.pid) - self.cpu
        wall = time.monotonic() - self.wall
        connections = receiver.connections() - self.connections
        return (
            f"receiver {cpu / max(requests, 1) * 1e6:.0f} µs CPU a request, "
            f"{cpu / wall:.0%} of a core, {connections} new connections"
        )


# -- baseline ---------------------------------------------------------------------------------


def baseline(receiver: Receiver, posts: int, time_limit: float) -> Figures:
    from dialscore.jobs.examples import CONTACT  # a documented contact, every field

    mark = ReceiverMark.now(receiver)
    result = run_baseline(
        receiver.url, CONTACT, posts=posts, concurrency=PER_ENDPOINT, time_limit=time_limit
    )
    if result.errors:
        raise BenchError(f"the baseline: {result.errors} of {result.posts} posts failed")
    done, arrivals = receiver.wait(result.job_id, result.posts, completed=False, timeout=10.0)
    if not done:
        raise BenchError(f"the baseline: {len(arrivals)} of {result.posts} posts arrived")
    rate, span = per_second(arrivals)
    size = statistics.mean(a.size for a in arrivals)
    load = mark.load(receiver, result.posts + result.warmup)
    print(
        f"baseline (plain httpx.AsyncClient, {PER_ENDPOINT} at a time, no database): "
        f"{result.posts} posts of {size:.0f} bytes: {rate:,.0f} posts/s (first to last arrival "
        f"{span:.2f} s; {result.posts / result.wall:,.0f}/s as the client timed it); "
        f"CPU {result.cpu / result.posts * 1000:.3f} ms a post; peak memory "
        f"{result.peak_kib / 1024:.0f} MiB; {load}",
        flush=True,
    )
    return Figures(
        label=f"plain httpx client, {PER_ENDPOINT} at a time",
        per_second=rate,
        cpu_per_delivery=result.cpu / result.posts,
        peaks={"client": result.peak_kib / 1024},
        duplicates=duplicates(arrivals),
    )


# -- the service ------------------------------------------------------------------------------


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


def wait_job(
    service: Service, receiver: Receiver, job_id: str, size: int, deadline: Deadline
) -> list[Arrival]:
    """Every event of the job, once all have come (bounded; a missing one fails)."""
    while True:
        done, arrivals = receiver.wait(
            job_id, size, completed=True, timeout=min(5.0, max(0.0, deadline.left()))
        )
        if done:
            return arrivals
        service.check_running()
        if deadline.left() <= 0:
            scored = {a.envelope_id for a in arrivals if a.event_type == CONTACT_SCORED}
            completed = any(a.event_type == JOB_COMPLETED for a in arrivals)
            raise BenchError(
                f"{service.setup}: job {job_id}: {len(scored)} of {size} contact events"
                f"{'' if completed else ' and no job.completed'} after {deadline.seconds:.0f} s"
            )


def settle(service: Service, deadline: Deadline) -> None:
    """Until no delivery is pending: the last attempts are recorded after their answers."""
    while service.pending():
        service.check_running()
        deadline.check(f"{service.setup}: waiting for the deliveries to be recorded")
        time.sleep(0.05)


def measure_job(
    client: httpx.Client,
    service: Service,
    receiver: Receiver,
    size: int,
    run: int,
    deadline: Deadline,
) -> Run:
    submitted = time.monotonic()
    job_id = submit(client, contacts(size, run))
    arrivals = wait_job(service, receiver, job_id, size, deadline)
    times = sorted(a.at for a in arrivals)
    return Run(
        job_id, len(arrivals), times[-1] - times[0], times[0] - submitted, times[-1] - submitted
    )


def measure_service(
    service: Service,
    receiver: Receiver,
    args: argparse.Namespace,
    base: Figures,
    deadline: Deadline,
) -> Figures:
    headers = {"Authorization": f"Bearer {service.api_key}"}
    with httpx.Client(
        base_url=service.base_url, headers=headers, timeout=60.0, trust_env=False
    ) as client:
        subscribe(client, receiver.url)
        # A small job first, so that the timed jobs meet warm processes.
        measure_job(client, service, receiver, WARM_UP_CONTACTS, 0, deadline)
        settle(service, deadline)
        pids = service.processes
        idle = {name: cpu_seconds(pid) for name, pid in pids.items()}
        time.sleep(IDLE_SECONDS)
        idle = {n: (cpu_seconds(pid) - idle[n]) / IDLE_SECONDS for n, pid in pids.items()}
        targets = {f"{service.setup}-{name}": pid for name, pid in pids.items()}
        with profiles(targets, args.profile) as recorded:
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            mark = ReceiverMark.now(receiver)
            runs = []
            for number in range(1, args.runs + 1):
                run = measure_job(client, service, receiver, args.contacts, number, deadline)
                runs.append(run)
                print(
                    f"  run {number}: {run.events} events: {run.per_second:,.0f} deliveries/s "
                    f"(first to last event {run.span:.2f} s); submission to last event "
                    f"{run.to_last:.2f} s (to first event {run.to_first:.2f} s)",
                    flush=True,
                )
            settle(service, deadline)
            cpu = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
    events = sum(r.events for r in runs)
    load = mark.load(receiver, events)
    peaks = {name: peak_mib(pid) for name, pid in pids.items()}
    arrivals = [a for r in runs for a in receiver.arrivals(r.job_id)]
    figures = Figures(
        label=service.label,
        per_second=statistics.median(r.per_second for r in runs),
        cpu_per_delivery=sum(cpu[name] for name in service.delivering) / len(arrivals),
        peaks=peaks,
        duplicates=duplicates(arrivals),
        to_last=statistics.median(r.to_last for r in runs),
        runs=runs,
    )
    delivering = ", ".join(
        f"{name} {cpu[name] / len(arrivals) * 1000:.2f}" for name in service.delivering
    )
    parts = [
        f"{service.label}: median {figures.per_second:,.0f} deliveries/s "
        f"({figures.per_second / base.per_second:.3f}x the baseline's posts/s), submission to "
        f"last event {figures.to_last:.2f} s",
        f"CPU a delivery {figures.cpu_per_delivery * 1000:.2f} ms ({delivering}; "
        f"{figures.cpu_per_delivery / base.cpu_per_delivery:.1f}x the baseline's a post)",
    ]
    if service.workers:
        figures.api_cpu_per_contact = cpu["api"] / (args.runs * args.contacts)
        parts.append(f"API {figures.api_cpu_per_contact * 1000:.2f} ms CPU a contact submitted")
    parts += [
        "idle CPU " + ", ".join(f"{n} {s * 1000:.0f} ms/s" for n, s in idle.items()),
        "peak memory " + ", ".join(f"{n} {mib:.0f} MiB" for n, mib in peaks.items()),
        f"{figures.duplicates} duplicates of {len(arrivals)} events",
        load,
    ]
    print("; ".join(parts), flush=True)
    for path in recorded:
        samples = read_profile(path).samples if path.exists() else 0
        print(f"  profile {path}: {samples} samples (bench/profile_top.py sums it up)")
    return figures


# -- the whole run ----------------------------------------------------------------------------


def table(rows: list[Figures], base: Figures) -> str:
    lines = [
        "| setup | deliveries/s | x baseline | submission → last event | CPU a delivery "
        "| x baseline | API CPU a contact | peak memory | duplicates |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in [base, *rows]:
        to_last = "-" if row.to_last is None else f"{row.to_last:.2f} s"
        api = "-" if row.api_cpu_per_contact is None else f"{row.api_cpu_per_contact * 1000:.2f} ms"
        peaks = ", ".join(f"{name} {mib:.0f}" for name, mib in row.peaks.items()) + " MiB"
        lines.append(
            f"| {row.label} | {row.per_second:,.0f} | {row.per_second / base.per_second:.3f} "
            f"| {to_last} | {row.cpu_per_delivery * 1000:.3f} ms "
            f"| {row.cpu_per_delivery / base.cpu_per_delivery:.1f} | {api} | {peaks} "
            f"| {row.duplicates} |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}", flush=True)
    failed: list[str] = []
    rows: list[Figures] = []
    with running_receiver() as receiver:
        base = baseline(receiver, args.baseline_posts, min(60.0, args.timeout))
        for setup in args.setups:
            print(f"{SETUPS[setup][0]}:", flush=True)
            deadline = Deadline(args.timeout)
            try:
                with (
                    bench_data_dir(args.keep_data) as data_dir,
                    started(
                        setup,
                        data_dir,
                        rate=args.rate,
                        source=args.source,
                        admin_url=args.postgres_url,
                        redis_url=args.redis_url,
                        deadline=deadline,
                    ) as service,
                ):
                    try:
                        rows.append(measure_service(service, receiver, args, base, deadline))
                    except BenchError:
                        print(service.log_tails(), file=sys.stderr)
                        raise
            except BenchError as exc:
                print(f"{setup} failed: {exc}", file=sys.stderr, flush=True)
                failed.append(setup)
    print(f"\nload average {os.getloadavg()[0]:.2f}; runs of {args.contacts} contacts, medians")
    print(table(rows, base))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--setups",
        default=",".join(SETUPS),
        help=f"comma-separated, of {', '.join(SETUPS)} (all)",
    )
    parser.add_argument("--runs", type=int, default=3, help="timed jobs, one at a time (3)")
    parser.add_argument("--contacts", type=int, default=1000, help="contacts per job (1000)")
    parser.add_argument(
        "--rate", type=int, default=100_000, help="client's webhook deliveries/s (100000)"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="limit a setup, s (300)")
    parser.add_argument(
        "--baseline-posts", type=int, default=3000, help="posts of the baseline (3000)"
    )
    parser.add_argument(
        "--postgres-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="PostgreSQL URL allowed to create databases (on 127.0.0.1)",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0", help="Redis URL")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="record py-spy profiles of the timed jobs into DIR",
    )
    parser.add_argument(
        "--source",
        type=Path,
        metavar="DIR",
        help="run the service from this src directory (PYTHONPATH)",
    )
    parser.add_argument("--keep-data", action="store_true", help="keep the data directories")
    args = parser.parse_args()
    args.setups = [s.strip() for s in args.setups.split(",") if s.strip()]
    if unknown := [s for s in args.setups if s not in SETUPS]:
        parser.error(f"unknown setups {unknown}; known: {', '.join(SETUPS)}")
    if not (1 <= args.contacts <= 1000) or args.runs < 1 or args.rate < 1:
        parser.error("--contacts must be 1..1000; --runs and --rate at least 1")
    if args.baseline_posts < 1:
        parser.error("--baseline-posts must be at least 1")
    if args.source is not None and not (args.source / "dialscore").is_dir():
        parser.error(f"--source {args.source} holds no dialscore package")
    try:
        return run(args)
    except BenchError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

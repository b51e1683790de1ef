"""The service's Prometheus metrics, counted where things happen: each is defined here once and
counted with one call from the code it measures. docs/operations.md says what each means.

Counts live in this process, or, when ``PROMETHEUS_MULTIPROC_DIR`` names a directory, in files
there that every dialscore process of the machine shares (prometheus-client's multiprocess
mode, P85). The gauges about the database are not counted here: they are read from it when
/metrics is scraped (``dialscore.monitoring``)."""

from __future__ import annotations

import asyncio
import collections
import os
import time
from collections.abc import Iterable
from datetime import datetime

import httpx
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"

# A ``_created`` timestamp beside every counter doubles the lines of a scrape for nothing an
# alert uses (multiprocess mode never shows them either).
disable_created_metrics()  # type: ignore[no-untyped-call]

# Waits measured in seconds: from a quick answer to a receiver down for days (D23).
_LONG_BUCKETS = (
    0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 86400, 3 * 86400, float("inf"),
)  # fmt: skip
# Jobs: from a handful of contacts to an uploaded file of 50,000.
_JOB_BUCKETS = (
    0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, float("inf"),
)  # fmt: skip

HTTP_REQUESTS = Counter(
    "dialscore_http_requests",
    "HTTP requests answered, by method, route template and status code",
    ["method", "route", "status"],
)
HTTP_DURATION = Histogram(
    "dialscore_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer, by method and route template",
    ["method", "route"],
)
SUBMISSIONS = Counter(
    "dialscore_submissions",
    "Submissions (API, version 1, web app uploads, rescoring) by job type, source and "
    "result: accepted (a job was opened) or rejected (every record was rejected, no job)",
    ["job_type", "source", "result"],
)
SUBMITTED_CONTACTS = Counter(
    "dialscore_submitted_contacts",
    "Records of submissions by job type, source and result: accepted or rejected",
    ["job_type", "source", "result"],
)
JOBS_FINISHED = Counter(
    "dialscore_jobs_finished",
    "Jobs that reached a terminal state, by job type and state",
    ["job_type", "state"],
)
JOB_DURATION = Histogram(
    "dialscore_job_duration_seconds",
    "Time from a job's submission to its terminal state, by job type",
    ["job_type"],
    buckets=_JOB_BUCKETS,
)
CONTACTS_SCORED = Counter(
    "dialscore_contacts_scored",
    "Contacts scored, by scoring type and leadStatus",
    ["scoring_type", "lead_status"],
)
CONTACTS_ENRICHED = Counter(
    "dialscore_contacts_enriched",
    "Contacts of enrichment jobs by result: found (new numbers) or not_found (rejected)",
    ["result"],
)
WEBHOOK_ATTEMPTS = Counter(
    "dialscore_webhook_attempts",
    "Webhook and version 1 callback attempts by event type, outcome (delivered, retry: "
    "failed and due again, failed: given up) and status class of the receiver's answer",
    ["event_type", "outcome", "status"],
)
WEBHOOK_ATTEMPT_DURATION = Histogram(
    "dialscore_webhook_attempt_duration_seconds",
    "Time a receiver took to answer one attempt (or to fail), by event type",
    ["event_type"],
)
WEBHOOK_LATENCY = Histogram(
    "dialscore_webhook_delivery_latency_seconds",
    "Time from an event's creation to its successful delivery, retries included, by event type",
    ["event_type"],
    buckets=_LONG_BUCKETS,
)
RATE_LIMIT_REFUSALS = Counter(
    "dialscore_rate_limit_refusals",
    "Requests answered 429 by the request rate limiter, by the tier exceeded",
    ["tier"],
)
PROVIDER_REQUESTS = Counter(
    "dialscore_provider_requests",
    "Requests to outside providers (verification, enrichment), each attempt once, by provider "
    "and outcome",
    ["provider", "outcome"],
)
PROVIDER_DURATION = Histogram(
    "dialscore_provider_request_duration_seconds",
    "Time an outside provider took to answer one request (or to fail), by provider",
    ["provider"],
)

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    method = method if method in _METHODS else "other"
    HTTP_REQUESTS.labels(method, route, str(status)).inc()
    HTTP_DURATION.labels(method, route).observe(seconds)


def observe_submission(job_type: str, source: str, *, total: int, accepted: int) -> None:
    """A submission the rules were run on; ``total`` counts every record it sent."""
    result = "accepted" if accepted else "rejected"
    SUBMISSIONS.labels(job_type, source, result).inc()
    SUBMITTED_CONTACTS.labels(job_type, source, "accepted").inc(accepted)
    SUBMITTED_CONTACTS.labels(job_type, source, "rejected").inc(max(0, total - accepted))


def observe_contacts(
    scoring_type: str, *, enriching: bool, lead_statuses: Iterable[str | None]
) -> None:
    """A batch of a job's contacts saved: each scored one's leadStatus, None for a contact
    that enrichment rejected."""
    counts = collections.Counter(lead_statuses)
    not_found = counts.pop(None, 0)
    for status, count in counts.items():
        CONTACTS_SCORED.labels(scoring_type, status).inc(count)
    if enriching:
        CONTACTS_ENRICHED.labels("found").inc(counts.total())
        CONTACTS_ENRICHED.labels("not_found").inc(not_found)


def observe_job_finished(job_type: str, state: str, created_at: datetime, now: datetime) -> None:
    JOBS_FINISHED.labels(job_type, state).inc()
    JOB_DURATION.labels(job_type).observe(max(0.0, (now - created_at).total_seconds()))


def status_class(status_code: int | None) -> str:
    """``2xx`` … ``5xx``; ``none`` when no answer came (a timeout, a refused connection)."""
    return "none" if status_code is None else f"{status_code // 100}xx"


def observe_webhook_attempt(
    event_type: str,
    outcome: str,
    status_code: int | None,
    *,
    seconds: float,
    created_at: datetime | None,
    now: datetime,
) -> None:
    """One attempt of a delivery, its outcome (``delivered``, ``pending`` when it is due again,
    ``failed``) and, once delivered, the time since its event was made."""
    outcome = "retry" if outcome == "pending" else outcome
    WEBHOOK_ATTEMPTS.labels(event_type, outcome, status_class(status_code)).inc()
    WEBHOOK_ATTEMPT_DURATION.labels(event_type).observe(seconds)
    if outcome == "delivered" and created_at is not None:
        WEBHOOK_LATENCY.labels(event_type).observe(max(0.0, (now - created_at).total_seconds()))


def observe_rate_limited(tier: str | None) -> None:
    RATE_LIMIT_REFUSALS.labels(tier or "unknown").inc()


def _observe_provider(provider: str, outcome: str, seconds: float) -> None:
    PROVIDER_REQUESTS.labels(provider, outcome).inc()
    PROVIDER_DURATION.labels(provider).observe(seconds)


def observe_provider_answer(
    provider: str, status_code: int, refused: frozenset[int], started: float
) -> None:
    """A provider's answer to a request sent at ``started`` (``time.perf_counter``): ``ok``,
    ``not_found`` (404), ``refused`` (the account's credentials or credits), ``rate_limited``
    (429), ``server_error`` (5xx) or ``client_error`` (any other 4xx)."""
    if status_code in refused:
        outcome = "refused"
    elif status_code == 429:
        outcome = "rate_limited"
    elif status_code >= 500:
        outcome = "server_error"
    elif status_code == 404:
        outcome = "not_found"
    else:
        outcome = "client_error" if status_code >= 400 else "ok"
    _observe_provider(provider, outcome, time.perf_counter() - started)


def observe_provider_failure(provider: str, exc: BaseException, started: float) -> None:
    """A request sent at ``started`` that got no answer: ``unreachable`` (no connection),
    ``timeout``, ``cancelled`` (its job stopped) or ``error`` (any other failure)."""
    if isinstance(exc, httpx.ConnectError):
        outcome = "unreachable"
    elif isinstance(exc, httpx.TimeoutException | TimeoutError):
        outcome = "timeout"
    elif isinstance(exc, asyncio.CancelledError):
        outcome = "cancelled"
    else:
        outcome = "error"
    _observe_provider(provider, outcome, time.perf_counter() - started)


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROCESS_ENV) or None


def multiprocess_dir_problem() -> str | None:
    """Why the multiprocess directory cannot be used, if it is set and cannot: every count
    would fail where it is made, in the middle of a request or a job."""
    path = multiprocess_dir()
    if path is None:
        return None
    if not os.path.isdir(path):
        return f"{MULTIPROCESS_ENV} is {path}, which is not a directory: make it, empty"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{MULTIPROCESS_ENV} is {path}, which this process cannot write to"
    return None


def process_counts() -> Collector:
    """The counts /metrics shows: this process's, or in multiprocess mode those of every
    process writing to the shared directory."""
    path = multiprocess_dir()
    if path is None:
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path)  # type: ignore[no-untyped-call]
    return registry

"""/metrics: the counts move when things happen, the database's gauges are read at scrape
time, and the separate metrics port serves the same text; on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit import metrics
from dialscore.kit.db import Database
from dialscore.kit.paced_http import PacedClient, Pacing
from dialscore.models import Job, OutboxMessage, WebhookDelivery, WebhookSubscription
from dialscore.monitoring.endpoints import serve_metrics
from dialscore.monitoring.service import DatabaseCollector
from tests.conftest import SECRET
from tests.fakes import Answer, FakeServer, Received, running_receiver
from tests.processes import free_port
from tests.support import V2, Tenant, contact, make_tenant, settle, state_of, submit

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def scrape(api: httpx.AsyncClient) -> Samples:
    response = await api.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(response.text)


async def test_requests_are_counted_by_route_template_and_status_without_an_api_key(
    api: httpx.AsyncClient, db: Database
) -> None:
    tenant = await make_tenant(
        db, SECRET, tiers={"per_second": 100, "per_minute": 100, "per_day": 2}
    )
    route = f"{V2}/jobs/{{jobId}}"
    before = await scrape(api)

    for _ in range(2):
        missing = await api.get(f"{V2}/jobs/{uuid.uuid4()}", headers=tenant.headers)
        assert missing.status_code == 404
    limited = await api.get(f"{V2}/jobs/{uuid.uuid4()}", headers=tenant.headers)
    assert limited.status_code == 429 and limited.json()["tier"] == "day"
    assert (await api.get("/no/such/path")).status_code == 404

    after = await scrape(api)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    requests = "dialscore_http_requests_total"
    assert moved(requests, method="GET", route=route, status="404") == 2
    # The limiter answers before routing; the route is still the template.
    assert moved(requests, method="GET", route=route, status="429") == 1
    assert moved(requests, method="GET", route="unmatched", status="404") == 1
    assert moved("dialscore_http_request_duration_seconds_count", method="GET", route=route) == 3
    assert moved("dialscore_rate_limit_refusals_total", tier="day") == 1
    # No raw path becomes a label value: only templates, and one value for unknown paths.
    routes = {dict(labels)["route"] for _, labels in after if "route" in dict(labels)}
    assert all("{" in r or "/jobs/" not in r for r in routes), routes


async def test_submissions_jobs_and_contacts_are_counted(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    before = await scrape(api)
    contacts = [contact("Ann", "Lee", "+14155552671"), contact("Bo", "Ray", "+14155552672")]
    response = await submit(api, tenant, [*contacts, {"lastName": "Nofirst", "phone": "+1415"}])
    assert response.status_code == 200 and response.json()["data"]["acceptedRecordCount"] == 2
    nothing = await submit(api, tenant, [{"firstName": "Only"}])
    assert nothing.json()["data"]["jobId"] is None
    await settle(app)
    after = await scrape(api)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    scoring = {"job_type": "lightning_scoring", "source": "api"}
    assert moved("dialscore_submissions_total", **scoring, result="accepted") == 1
    assert moved("dialscore_submissions_total", **scoring, result="rejected") == 1
    assert moved("dialscore_submitted_contacts_total", **scoring, result="accepted") == 2
    assert moved("dialscore_submitted_contacts_total", **scoring, result="rejected") == 2
    assert (
        moved("dialscore_jobs_finished_total", job_type="lightning_scoring", state="Finalized") == 1
    )
    assert moved("dialscore_job_duration_seconds_count", job_type="lightning_scoring") == 1
    scored = sum(
        moved("dialscore_contacts_scored_total", scoring_type="lightning", lead_status=status)
        for status in ("P1", "P2", "P3", "Needs Attention")
    )
    assert scored == 2
    # Read from the database when scraped: the job is done and its message gone.
    assert value(after, "dialscore_jobs", state="Init") == 0
    assert value(after, "dialscore_outbox_depth", actor="process_job") == 0
    assert value(after, "dialscore_database_up") == 1


async def test_enrichment_results_are_counted(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    before = await scrape(api)
    # Nothing in the directory or history: enrichment finds no number, the contact is rejected.
    lone = {"firstName": "Zed", "lastName": "Nobody", "companyAccount": "Nowhere Ltd"}
    response = await submit(api, tenant, [lone], kind="enrich")
    assert response.json()["data"]["acceptedRecordCount"] == 1
    await settle(app)
    after = await scrape(api)
    moved = value(after, "dialscore_contacts_enriched_total", result="not_found") - value(
        before, "dialscore_contacts_enriched_total", result="not_found"
    )
    assert moved == 1
    finished = {"job_type": "enrich_and_score", "state": "Not Enriched"}
    assert (
        value(after, "dialscore_jobs_finished_total", **finished)
        - value(before, "dialscore_jobs_finished_total", **finished)
        == 1
    )


@pytest.fixture
async def delivering(settings: Settings) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    private = settings.model_copy(
        update={
            "webhook_allow_private": True,
            "webhook_retry_schedule": "0.1,0.1",
            "webhook_retry_jitter": 0.0,
        }
    )
    app = create_app(private, run_worker=True)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            yield app, api


def first_500_then_400(request: Received, index: int) -> Answer:
    return Answer(500 if index == 0 else 400 if index == 1 else 200)


async def test_webhook_attempts_are_counted_by_outcome_with_their_latency(
    delivering: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    app, api = delivering
    tenant = await make_tenant(state_of(app).db, SECRET)
    before = await scrape(api)
    scored = "job.contact.scored"
    with running_receiver(first_500_then_400) as receiver:
        created = await api.post(
            f"{V2}/webhooks",
            json={"name": "r", "url": receiver.url, "eventTypes": [scored, "job.completed"]},
            headers=tenant.headers,
        )
        assert created.status_code == 201, created.text
        contacts = [contact("Ann", "Lee", "+14155552671"), contact("Bo", "Ray", "+14155552672")]
        assert (await submit(api, tenant, contacts)).status_code == 200
        await settle(app)
        assert len(receiver.received) == 4
    after = await scrape(api)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    attempts = "dialscore_webhook_attempts_total"
    assert moved(attempts, event_type=scored, outcome="retry", status="5xx") == 1
    assert moved(attempts, event_type=scored, outcome="failed", status="4xx") == 1
    assert moved(attempts, event_type=scored, outcome="delivered", status="2xx") == 1
    assert moved(attempts, event_type="job.completed", outcome="delivered", status="2xx") == 1
    assert moved("dialscore_webhook_attempt_duration_seconds_count", event_type=scored) == 3
    latency = "dialscore_webhook_delivery_latency_seconds"
    assert moved(f"{latency}_count", event_type=scored) == 1
    # The retried delivery waited at least its 0.1 s before it got through.
    assert moved(f"{latency}_sum", event_type=scored) >= 0.1
    assert value(after, "dialscore_webhook_deliveries_pending") == 0


async def test_database_gauges_are_read_when_scraped(database_url: str) -> None:
    now = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
    db = Database(database_url)
    try:
        tenant = await make_tenant(db, SECRET)
        async with db.unit_of_work() as session:
            subscriptions = {}
            for status in ("active", "inactive"):
                row = WebhookSubscription(
                    id=str(uuid.uuid4()),
                    client_id=tenant.client_id,
                    user_id=tenant.user_id,
                    name=status,
                    url="https://hooks.example.com/x",
                    event_types=["job.contact.scored"],
                    status=status,
                    secret_ciphertext="sealed",
                    created_at=now,
                    updated_at=now,
                )
                session.add(row)
                subscriptions[status] = row.id
            for status, age in (("Init", 30), ("Processing", 120), ("Finalized", 900)):
                session.add(job_row(tenant, status, now - timedelta(seconds=age)))
            await session.flush()
            for aside, age in ((False, 50), (False, 10), (True, 4000)):
                session.add(
                    OutboxMessage(
                        actor="process_job",
                        payload={"job_id": "x"},
                        available_at=now,
                        attempts=10 if aside else 0,
                        created_at=now - timedelta(seconds=age),
                        failed_at=now if aside else None,
                    )
                )
            deliveries = (
                ("active", 300, -10, "pending"),  # due
                ("active", 60, 600, "pending"),  # waiting for its retry
                ("inactive", 9000, -10, "pending"),  # held
                ("active", 99999, -10, "delivered"),
            )
            for status, age, due_in, state in deliveries:
                session.add(
                    WebhookDelivery(
                        id=str(uuid.uuid4()),
                        kind="webhook",
                        subscription_id=subscriptions[status],
                        user_id=tenant.user_id,
                        event_type="job.contact.scored",
                        payload={},
                        timestamp_ms=0,
                        state=state,
                        attempts=0,
                        available_at=now + timedelta(seconds=due_in),
                        created_at=now - timedelta(seconds=age),
                    )
                )
    finally:
        await db.dispose()

    collector = DatabaseCollector(database_url, clock=lambda: now)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in collector.collect()
        for s in family.samples
    }
    assert value(samples, "dialscore_database_up") == 1
    assert value(samples, "dialscore_jobs", state="Init") == 1
    assert value(samples, "dialscore_jobs", state="Processing") == 1
    assert ("dialscore_jobs", (("state", "Finalized"),)) not in samples
    assert value(samples, "dialscore_oldest_unfinished_job_age_seconds") == 120
    assert value(samples, "dialscore_outbox_depth", actor="process_job") == 2
    assert value(samples, "dialscore_outbox_set_aside", actor="process_job") == 1
    assert value(samples, "dialscore_outbox_oldest_message_age_seconds") == 50
    assert value(samples, "dialscore_webhook_deliveries_pending") == 2
    assert value(samples, "dialscore_webhook_deliveries_due") == 1
    assert value(samples, "dialscore_webhook_deliveries_held") == 1
    assert value(samples, "dialscore_webhook_oldest_pending_delivery_age_seconds") == 300


def job_row(tenant: Tenant, status: str, created_at: datetime) -> Job:
    return Job(
        id=str(uuid.uuid4()),
        client_id=tenant.client_id,
        user_id=tenant.user_id,
        job_type="lightning_scoring",
        scoring_type="lightning",
        name="j",
        source="api",
        status=status,
        total_count=1,
        accepted_count=1,
        processed_count=0,
        enrichment_rejected_count=0,
        created_at=created_at,
        updated_at=created_at,
    )


def test_an_unreachable_database_reads_as_down_not_as_a_failed_scrape() -> None:
    collector = DatabaseCollector(f"postgresql://nobody@127.0.0.1:{free_port()}/none")
    families = list(collector.collect())
    assert [(f.name, [s.value for s in f.samples]) for f in families] == [
        ("dialscore_database_up", [0])
    ]


async def test_provider_requests_are_counted_by_provider_and_outcome() -> None:
    answers = {"/ok": 200, "/missing": 404, "/busy": 503, "/key": 401}
    server = FakeServer(lambda request, index: Answer(answers[request.path]))
    pacing = Pacing(rate_per_second=1000, max_retries=0, timeout=2)
    provider = f"fake-{uuid.uuid4().hex[:6]}"
    with server:
        client = PacedClient(
            provider, base_url=server.base_url, headers={}, credentials_hint="", pacing=pacing
        )
        try:
            for path in ("/ok", "/ok", "/missing", "/busy"):
                await client.send("GET", path, subject={})
            with pytest.raises(Exception, match="credentials refused"):
                await client.send("GET", "/key", subject={})
        finally:
            await client.close()
    closed = PacedClient(
        provider,
        base_url=f"http://127.0.0.1:{free_port()}",
        headers={},
        credentials_hint="",
        pacing=pacing,
    )
    try:
        with pytest.raises(Exception, match="cannot connect"):
            await closed.send("GET", "/ok", subject={})
    finally:
        await closed.close()
    samples = parse(generate_latest(metrics.process_counts()).decode())
    requests = "dialscore_provider_requests_total"
    counted = {
        outcome: value(samples, requests, provider=provider, outcome=outcome)
        for outcome in ("ok", "not_found", "server_error", "refused", "unreachable")
    }
    assert counted == {"ok": 2, "not_found": 1, "server_error": 1, "refused": 1, "unreachable": 1}
    assert (
        value(samples, "dialscore_provider_request_duration_seconds_count", provider=provider) == 6
    )


async def test_a_separate_metrics_port_serves_them_and_the_api_port_does_not(
    settings: Settings,
) -> None:
    separate = settings.model_copy(update={"metrics_port": free_port()})
    app = create_app(separate, run_worker=False)
    server = serve_metrics(separate)
    assert server is not None
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
                assert (await api.get("/healthz")).status_code == 200
                assert (await api.get("/metrics")).status_code == 404
        async with httpx.AsyncClient(trust_env=False) as client:
            response = await client.get(f"http://127.0.0.1:{server.port}/metrics")
        assert response.status_code == 200
        samples = parse(response.text)
        # The API's requests, counted in this process, and the database's gauges.
        assert (
            value(
                samples,
                "dialscore_http_requests_total",
                method="GET",
                route="/healthz",
                status="200",
            )
            >= 1
        )
        assert value(samples, "dialscore_database_up") == 1
    finally:
        server.close()


def test_a_multiprocess_directory_that_cannot_be_used_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(metrics.MULTIPROCESS_ENV, str(tmp_path / "missing"))
    problem = metrics.multiprocess_dir_problem()
    assert problem is not None and "missing" in problem and "not a directory" in problem
    monkeypatch.setenv(metrics.MULTIPROCESS_ENV, str(tmp_path))
    assert metrics.multiprocess_dir_problem() is None
    monkeypatch.delenv(metrics.MULTIPROCESS_ENV)
    assert metrics.multiprocess_dir_problem() is None

"""/metrics of a scale-out deployment (PostgreSQL, Redis, an API process and a worker): the
counts of every process of the machine, shared through PROMETHEUS_MULTIPROC_DIR, answer on the
API's port and on the worker's own metrics port."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fakes import running_receiver
from tests.processes import (
    DATABASES,
    REDIS_URL,
    V2,
    api_client,
    base_env,
    cli_json,
    free_port,
    fresh_postgres_database,
    processes,
    redis_namespace,
    wait_for,
    wait_for_job,
)
from tests.support import many_contacts

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("postgresql" not in DATABASES, reason="PostgreSQL tests are disabled"),
]

SECRET = "metrics-test-secret-key-that-is-long-enough-for-hs256"
FAST = {"RELAY_POLL_SECONDS": "0.1", "WORKER_POLL_MS": "100", "WORKER_THREADS": "2"}
# Few: deliveries go at the plan's 5 a second (P22).
CONTACTS = 10


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx.get(url, timeout=10.0, trust_env=False)
    assert response.status_code == 200, response.text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def total(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


def test_every_process_counts_are_served_by_the_api_and_by_a_worker_port(tmp_path: Path) -> None:
    shared = tmp_path / "prometheus"
    shared.mkdir()
    with (
        fresh_postgres_database() as url,
        redis_namespace() as namespace,
        processes(tmp_path / "logs") as procs,
        running_receiver() as receiver,
    ):
        env = base_env(
            tmp_path / "var",
            DATABASE_URL=url,
            REDIS_URL=REDIS_URL,
            REDIS_NAMESPACE=namespace,
            SECRET_KEY=SECRET,
            WEBHOOK_ALLOW_PRIVATE="true",
            **FAST,
        )
        env["PROMETHEUS_MULTIPROC_DIR"] = str(shared)
        cli_json(["migrate"], env=env, cwd=tmp_path)
        metrics_port = free_port()
        with_port = {**env, "DIALSCORE_METRICS_PORT": str(metrics_port)}
        # Started together: their start-ups overlap.
        worker = procs.start("worker", ["worker"], env=with_port)
        api = procs.serve(env=env, worker=False)
        args = ["admin", "create-client", "--name", "M", "--plan", "enterprise", "--credits", "100"]
        api_key = cli_json(args, env=env, cwd=tmp_path)["apiKey"]

        with api_client(api, api_key) as client:
            created = client.post(
                f"{V2}/webhooks",
                json={"name": "m", "url": receiver.url, "eventTypes": ["job.contact.scored"]},
            )
            assert created.status_code == 201, created.text
            submitted = client.post(
                f"{V2}/contacts/score", json={"contacts": many_contacts(CONTACTS)}
            )
            job_id = submitted.json()["data"]["jobId"]
            services = [api, worker]
            wait_for_job(
                client,
                job_id,
                lambda job: job["status"] == "Finalized",
                timeout=60,
                what="the job to finish",
                services=services,
            )
            wait_for(
                lambda: True if len(receiver.received) >= CONTACTS else None,
                timeout=60,
                what="every delivery",
                services=services,
            )

        worker_url = f"http://127.0.0.1:{metrics_port}/metrics"

        def delivered(url: str) -> float | None:
            # A delivery is counted just after the receiver answers it.
            samples = scrape(url)
            done = total(samples, "dialscore_webhook_attempts_total")
            return done if done >= CONTACTS else None

        wait_for(lambda: delivered(worker_url), timeout=10, what="the last attempt's count")
        for url in (f"{api.base_url}/metrics", worker_url):
            samples = scrape(url)
            # Counted by the worker.
            assert total(samples, "dialscore_contacts_scored_total") == CONTACTS, url
            assert total(samples, "dialscore_webhook_attempts_total") == CONTACTS, url
            assert total(samples, "dialscore_jobs_finished_total") == 1, url
            # Counted by the API process.
            assert total(samples, "dialscore_submissions_total") == 1, url
            assert total(samples, "dialscore_http_requests_total") >= 3, url
            # Read from the database at scrape time.
            assert samples[("dialscore_database_up", ())] == 1, url
            assert samples[("dialscore_webhook_deliveries_pending", ())] == 0, url
        # Each process wrote its own files into the shared directory.
        assert len({p.name.rsplit("_", 1)[-1] for p in shared.glob("*.db")}) == 2

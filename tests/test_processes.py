"""Real processes: the API and the worker on separate machines, and crashes (kill -9) that
must lose no job and charge nothing twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.processes import (
    DATABASES,
    REDIS_URL,
    V2,
    Processes,
    api_client,
    base_env,
    cli_json,
    credits_of,
    fresh_postgres_database,
    get_job,
    job_contacts,
    processes,
    redis_namespace,
    wait_for_job,
)
from tests.support import many_contacts

pytestmark = pytest.mark.slow

SECRET = "process-test-secret-key-that-is-long-enough-for-hs256"
COST_PER_PHONE = 0.05
# Quick relay and worker polling, so the tests wait on work rather than on timers.
FAST = {"RELAY_POLL_SECONDS": "0.1", "WORKER_POLL_MS": "100", "WORKER_THREADS": "2"}


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Processes]:
    with processes(tmp_path / "logs") as group:
        yield group


def create_client(env: dict[str, str], cwd: Path, credits: int) -> str:
    """A client on a plan with high rate limits (polling is frequent); its API key."""
    created = cli_json(
        [
            "admin",
            "create-client",
            "--name",
            "Proc",
            "--plan",
            "enterprise",
            "--credits",
            str(credits),
        ],
        env=env,
        cwd=cwd,
    )
    api_key: str = created["apiKey"]
    return api_key


def submit(client: httpx.Client, count: int) -> dict[str, Any]:
    response = client.post(f"{V2}/contacts/score", json={"contacts": many_contacts(count)})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["data"]["acceptedRecordCount"] == count, body["error"]
    assert body["credits"]["creditsCharged"] == pytest.approx(count * COST_PER_PHONE)
    return body


def finalized(job: dict[str, Any]) -> bool:
    return bool(job["status"] == "Finalized")


def assert_all_scored(client: httpx.Client, job_id: str, count: int) -> None:
    contacts = job_contacts(client, job_id)
    assert len(contacts) == count
    unscored = [c["id"] for c in contacts if c["leadStatus"] in (None, "Uncontacted")]
    assert unscored == []
    assert {c["leadStatus"] for c in contacts} <= {"P1", "P2", "P3", "Needs Attention"}


@pytest.mark.skipif("postgresql" not in DATABASES, reason="PostgreSQL tests are disabled")
def test_api_and_worker_as_separate_processes_on_postgres_and_redis(tmp_path: Path) -> None:
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
            SECRET_KEY=SECRET,
            **FAST,
        )
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        api = procs.serve(env=env, worker=False)
        worker = procs.start("worker", ["worker"], env=env)
        api_key = create_client(env, tmp_path, credits=100)

        with api_client(api, api_key) as client:
            job_id = submit(client, 50)["data"]["jobId"]
            job = wait_for_job(
                client,
                job_id,
                finalized,
                timeout=60,
                what="the job to be finalized by the worker process",
                services=[api, worker],
            )
            assert job["processedCount"] == job["acceptedRecordCount"] == 50
            assert_all_scored(client, job_id, 50)
            assert credits_of(client) == pytest.approx(100 - 50 * COST_PER_PHONE)


def test_job_accepted_before_kill_is_processed_after_restart(
    procs: Processes, tmp_path: Path
) -> None:
    # The embedded default: SQLite under the data dir, generated secret, in-memory broker.
    env = base_env(tmp_path / "var", **FAST)
    api_key = create_client(env, tmp_path, credits=1000)
    remaining = 1000 - 200 * COST_PER_PHONE

    api = procs.serve(env=env, worker=False)
    with api_client(api, api_key) as client:
        job_id = submit(client, 200)["data"]["jobId"]
        job = get_job(client, job_id)
        assert job is not None
        assert (job["status"], job["processedCount"]) == ("Init", 0)
        assert credits_of(client) == pytest.approx(remaining)
    api.kill()

    restarted = procs.serve(env=env, worker=True)
    with api_client(restarted, api_key) as client:
        job = wait_for_job(
            client,
            job_id,
            finalized,
            timeout=60,
            what="the job accepted before the kill to be finalized",
            services=[restarted],
        )
        assert job["processedCount"] == job["acceptedRecordCount"] == 200
        assert_all_scored(client, job_id, 200)
        assert credits_of(client) == pytest.approx(remaining)
    # Stopped gracefully (P84): SIGTERM, and it exits 0 (SIGKILL would follow after 10 s).
    restarted.stop()
    assert restarted.process.returncode == 0, restarted.log_tail()


def test_job_killed_mid_processing_counts_every_contact_once(
    procs: Processes, tmp_path: Path
) -> None:
    env = base_env(
        tmp_path / "var",
        JOB_BATCH_SIZE="1",
        JOB_LEASE_SECONDS="2",
        OUTBOX_LEASE_SECONDS="3",
        **FAST,
    )
    api_key = create_client(env, tmp_path, credits=1000)
    remaining = 1000 - 1000 * COST_PER_PHONE

    server = procs.serve(env=env, worker=True)
    with api_client(server, api_key) as client:
        job_id = submit(client, 1000)["data"]["jobId"]
        started = wait_for_job(
            client,
            job_id,
            lambda job: job["processedCount"] > 0,
            timeout=30,
            interval=0.005,
            what="processing to start",
            services=[server],
        )
        server.kill()
    assert 0 < started["processedCount"] < 1000, (
        f"processing finished before the kill could interrupt it: {started}"
    )
    assert started["status"] == "Processing"

    restarted = procs.serve(env=env, worker=True)
    with api_client(restarted, api_key) as client:
        at_restart = get_job(client, job_id)
        assert at_restart is not None
        assert at_restart["processedCount"] >= started["processedCount"]
        job = wait_for_job(
            client,
            job_id,
            finalized,
            timeout=60,
            what="the interrupted job to be finalized after the restart",
            services=[restarted],
        )
        assert job["processedCount"] == job["acceptedRecordCount"] == 1000
        assert_all_scored(client, job_id, 1000)
        assert credits_of(client) == pytest.approx(remaining)

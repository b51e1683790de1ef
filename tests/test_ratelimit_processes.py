"""Two API processes sharing one Redis admit exactly a client's limit between them, and
a limit set with ``dialscore admin set-limits`` reaches both without a restart."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.processes import (
    DATABASES,
    REDIS_URL,
    V2,
    Processes,
    base_env,
    cli_json,
    fresh_postgres_database,
    processes,
    redis_namespace,
)

pytestmark = pytest.mark.slow

SECRET = "ratelimit-process-secret-key-long-enough-for-hs256"
PER_SECOND = 7
BURSTS = 4
BURST_SIZE = 40


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Processes]:
    with processes(tmp_path / "logs") as group:
        yield group


async def burst(urls: list[str], api_key: str, count: int) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as client:
        calls = [client.get(f"{urls[i % len(urls)]}{V2}/account/credits") for i in range(count)]
        return list(await asyncio.gather(*calls))


async def alternate(urls: list[str], api_key: str, count: int) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as client:
        return [await client.get(f"{urls[i % 2]}{V2}/account/credits") for i in range(count)]


@pytest.mark.skipif("postgresql" not in DATABASES, reason="PostgreSQL tests are disabled")
def test_two_api_processes_share_one_limit(procs: Processes, tmp_path: Path) -> None:
    with fresh_postgres_database() as database, redis_namespace() as namespace:
        env = base_env(
            tmp_path / "var",
            DATABASE_URL=database,
            REDIS_URL=REDIS_URL,
            REDIS_NAMESPACE=namespace,
            SECRET_KEY=SECRET,
            # A loaded machine can be slower than the default 0.25 s: a process that gave up
            # on Redis would count alone (fail-open), which is not what is tested here.
            RATE_LIMIT_REDIS_TIMEOUT="5",
        )
        cli_json(["migrate"], env=env, cwd=tmp_path)
        created = cli_json(
            ["admin", "create-client", "--name", "Shared", "--plan", "team"], env=env, cwd=tmp_path
        )
        limits = cli_json(
            [
                "admin",
                "set-limits",
                "--client",
                created["clientId"],
                "--per-second",
                str(PER_SECOND),
                "--per-minute",
                "100000",
                "--per-day",
                "1000000",
            ],
            env=env,
            cwd=tmp_path,
        )
        assert limits["perSecond"] == PER_SECOND
        servers = [procs.serve(env=env, worker=False) for _ in range(2)]
        urls = [server.base_url for server in servers]

        responses: list[httpx.Response] = []
        for _ in range(BURSTS):
            responses += asyncio.run(burst(urls, created["apiKey"], BURST_SIZE))

        assert {r.status_code for r in responses} <= {200, 429}, procs.diagnostics()
        # Windows come from the Redis clock, so both processes name the same window.
        per_window = Counter(r.headers["X-RateLimit-Reset-Second"] for r in responses)
        admitted = Counter(
            r.headers["X-RateLimit-Reset-Second"] for r in responses if r.status_code == 200
        )
        for window, total in per_window.items():
            assert admitted[window] == min(PER_SECOND, total), (window, total, admitted)
        for response in responses:
            assert response.headers["X-RateLimit-Limit-Second"] == str(PER_SECOND)
        assert {str(r.url).split("/api")[0] for r in responses} == set(urls)

        # One after the other, alternating processes: each call sees the other's count.
        sequence = asyncio.run(alternate(urls, created["apiKey"], PER_SECOND + 2))
        steps = 0
        for before, after in itertools.pairwise(sequence):
            window = "X-RateLimit-Reset-Second"
            if before.headers[window] != after.headers[window]:
                continue
            remaining = int(before.headers["X-RateLimit-Remaining-Second"])
            assert int(after.headers["X-RateLimit-Remaining-Second"]) == max(0, remaining - 1)
            steps += 1
        assert steps >= PER_SECOND - 1  # at most two window boundaries fell between the calls

        # A new limit reaches both running processes.
        cli_json(
            ["admin", "set-limits", "--client", created["clientId"], "--per-second", "3"],
            env=env,
            cwd=tmp_path,
        )
        after = asyncio.run(burst(urls, created["apiKey"], 2))
        assert [r.headers["X-RateLimit-Limit-Second"] for r in after] == ["3", "3"]

"""The service as the delivery bench starts it: embedded (``dialscore serve`` on SQLite), or
split on PostgreSQL and Redis (``dialscore serve --no-worker`` and one or more
``dialscore worker`` processes), each with everything it started undone on exit."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import redis

from embedded import BenchError, Deadline, cli, free_port, running_server, server_env, stop

# name: (label, worker processes; 0 for the embedded service)
SETUPS: dict[str, tuple[str, int]] = {
    "embedded": ("embedded, SQLite", 0),
    "postgres": ("PostgreSQL + Redis, 1 worker", 1),
    "postgres2": ("PostgreSQL + Redis, 2 workers", 2),
}
PENDING = "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'"


@dataclass
class Service:
    setup: str
    label: str
    base_url: str
    api_key: str
    api: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]]
    pending: Callable[[], int]
    logs: list[Path]

    @property
    def delivering(self) -> dict[str, int]:
        """The processes that deliver, by name: the served process, or the workers."""
        if not self.workers:
            return {"serve": self.api.pid}
        return {f"worker{i}": w.pid for i, w in enumerate(self.workers, start=1)}

    @property
    def processes(self) -> dict[str, int]:
        if not self.workers:
            return self.delivering
        return {"api": self.api.pid, **self.delivering}

    def check_running(self) -> None:
        for name, process in [("serve", self.api), *(("worker", w) for w in self.workers)]:
            if process.poll() is not None:
                raise BenchError(f"{self.setup}: {name} exited with code {process.returncode}")

    def log_tails(self, lines: int = 20) -> str:
        parts = []
        for log in self.logs:
            if log.exists():
                tail = log.read_text(errors="replace").splitlines()[-lines:]
                parts.append("\n".join([f"--- {log.name} (last lines) ---", *tail]))
        return "\n".join(parts)


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


def with_source(env: dict[str, str], source: Path | None) -> dict[str, str]:
    """``env`` running the ``dialscore`` package of ``source`` (a ``src`` directory) when given."""
    if source is None:
        return env
    return {**env, "PYTHONPATH": str(source.resolve())}


@contextmanager
def embedded(
    data_dir: Path, rate: int, source: Path | None, deadline: Deadline
) -> Iterator[Service]:
    env = with_source(server_env(data_dir, WEBHOOK_ALLOW_PRIVATE="true"), source)
    api_key = create_client(env, data_dir, rate, deadline)
    database = data_dir / "dialscore.db"

    def pending() -> int:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
            count: int = conn.execute(PENDING).fetchone()[0]
            return count

    port = free_port()
    with running_server(env, data_dir, port, deadline) as process:
        label = SETUPS["embedded"][0]
        base = f"http://127.0.0.1:{port}"
        # bench_data_dir shows server.log on a failure.
        yield Service("embedded", label, base, api_key, process, [], pending, [])


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database of its own; its URL. Dropped on exit."""
    name = f"dialscore_bench_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise BenchError(f"could not create a PostgreSQL database: {exc}") from exc
    try:
        yield urlsplit(admin_url)._replace(path=f"/{name}").geturl()
    finally:
        try:
            with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except psycopg.Error as exc:
            raise BenchError(f"could not drop the database {name}: {exc}") from exc


@contextmanager
def redis_namespace(url: str) -> Iterator[str]:
    """A Redis key prefix of its own; its keys are deleted on exit."""
    namespace = f"dialscore-bench-{uuid.uuid4().hex[:12]}"
    client = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        raise BenchError(f"Redis at {url} does not answer: {exc}") from exc
    try:
        yield namespace
    finally:
        try:
            keys = list(client.scan_iter(match=f"{namespace}*", count=500))
            if keys:
                client.delete(*keys)
        except redis.RedisError as exc:
            raise BenchError(f"could not delete the keys {namespace}*: {exc}") from exc
        finally:
            client.close()


@contextmanager
def running_worker(
    env: dict[str, str], cwd: Path, log_path: Path, deadline: Deadline
) -> Iterator[subprocess.Popen[bytes]]:
    """``dialscore worker``, returned once it logs that it runs (within 60 s), stopped on exit;
    its output in ``log_path``."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "dialscore", "worker"],
            env=env,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        limit = time.monotonic() + min(60.0, deadline.left())
        while "worker running" not in (output := log_path.read_text(errors="replace")):
            problem = None
            if process.poll() is not None:
                problem = f"a worker exited with code {process.returncode}"
            elif time.monotonic() > limit:
                problem = "a worker did not start within 60 s"
            if problem:
                tail = "\n".join(output.splitlines()[-20:])
                raise BenchError(f"{problem}; the end of {log_path.name}:\n{tail}")
            time.sleep(0.1)
        yield process
    finally:
        stop(process)


@contextmanager
def split(
    setup: str,
    data_dir: Path,
    rate: int,
    source: Path | None,
    admin_url: str,
    redis_url: str,
    deadline: Deadline,
) -> Iterator[Service]:
    """``dialscore serve --no-worker`` and the setup's workers on a new PostgreSQL database and
    a Redis namespace of their own."""
    label, workers = SETUPS[setup]
    with (
        postgres_database(admin_url) as database_url,
        redis_namespace(redis_url) as namespace,
        contextlib.ExitStack() as stack,
    ):
        settings = {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "REDIS_NAMESPACE": namespace,
            "SECRET_KEY": uuid.uuid4().hex + uuid.uuid4().hex,
            "WEBHOOK_ALLOW_PRIVATE": "true",
        }
        env = with_source(server_env(data_dir, **settings), source)
        if cli(["migrate"], env, data_dir, deadline) != {"migrated": True}:
            raise BenchError("dialscore migrate did not migrate")
        api_key = create_client(env, data_dir, rate, deadline)

        def pending() -> int:
            with psycopg.connect(database_url, connect_timeout=10) as conn:
                row = conn.execute(PENDING).fetchone()
                return int(row[0]) if row else 0

        # INFO, for the line a worker logs once it runs; nothing is logged per delivery.
        worker_env = {**env, "DIALSCORE_LOG_LEVEL": "INFO"}
        logs = [data_dir / f"worker{i}.log" for i in range(1, workers + 1)]
        processes = [
            stack.enter_context(running_worker(worker_env, data_dir, log, deadline)) for log in logs
        ]
        port = free_port()
        args = ("--no-worker",)
        api = stack.enter_context(running_server(env, data_dir, port, deadline, args=args))
        base = f"http://127.0.0.1:{port}"
        yield Service(setup, label, base, api_key, api, processes, pending, logs)


@contextmanager
def started(
    setup: str,
    data_dir: Path,
    *,
    rate: int,
    source: Path | None,
    admin_url: str,
    redis_url: str,
    deadline: Deadline,
) -> Iterator[Service]:
    """The setup named ``setup`` (one of SETUPS), running; everything stopped on exit."""
    if setup == "embedded":
        with embedded(data_dir, rate, source, deadline) as service:
            yield service
    else:
        with split(setup, data_dir, rate, source, admin_url, redis_url, deadline) as service:
            yield service

"""Running the real ``dialscore`` command in tests: one-shot CLI calls, servers and workers."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx
import psycopg

# The same variables as conftest.py reads, so one setting points every test at PostgreSQL.
PG_ADMIN_URL = os.environ.get(
    "DIALSCORE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
DATABASES = os.environ.get("DIALSCORE_TEST_DATABASES", "sqlite,postgresql").split(",")
REDIS_URL = os.environ.get("DIALSCORE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

V2 = "/api/public/v2"
CLI_TIMEOUT = 60.0

T = TypeVar("T")


def dialscore_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m dialscore``."""
    script = Path(sys.executable).with_name("dialscore")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "dialscore"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def base_env(data_dir: Path, **settings: str) -> dict[str, str]:
    """The parent's environment without any DIALSCORE_* setting, plus the given ones.

    ``settings`` are named without the prefix: ``base_env(d, DATABASE_URL=...)``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIALSCORE_")}
    env["DIALSCORE_DATA_DIR"] = str(data_dir)
    env["DIALSCORE_LOG_LEVEL"] = "INFO"
    for name, value in settings.items():
        env[f"DIALSCORE_{name}"] = value
    return env


# -- one-shot commands -------------------------------------------------------------------------


@dataclass(frozen=True)
class CliResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"dialscore {' '.join(self.args)} exited {self.returncode}\n"
            f"stdout: {self.stdout!r}\nstderr: {self.stderr[-3000:]}"
        )


# One-shot commands run in processes forked from a server process that has imported the
# libraries every command loads: a command then takes about a quarter of a fresh
# interpreter's time (0.35-0.5 s against 1.6-1.8 s for `admin create-client`), and still runs
# in a process of its own, with its own environment, directory and standard streams. dialscore's
# own modules are imported in the command's process, as a fresh interpreter does, so that what
# one reads from the environment on import comes from the command's. tests/test_first_steps.py
# runs the installed script itself.
_COMMANDS = multiprocessing.get_context("forkserver")
_COMMANDS.set_forkserver_preload(
    [
        "alembic.command",
        "argon2",
        "fastapi",
        "httpx",
        "phonenumbers",
        "psycopg",
        "pydantic_settings",
        "sqlalchemy.dialects.postgresql",
        "sqlalchemy.ext.asyncio",
        "structlog",
        "typer",
    ]
)


def _command_process(args: list[str], env: dict[str, str], cwd: str, streams: str) -> None:
    """The body of a command's process: ``dialscore <args>`` as the console script runs it,
    with ``env`` as its whole environment and the files ``in``, ``out`` and ``err`` of the
    directory ``streams`` as its standard streams. It exits with the command's code."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    streams_and_flags = ((0, "in", os.O_RDONLY), (1, "out", os.O_WRONLY), (2, "err", os.O_WRONLY))
    for fd, name, flags in streams_and_flags:
        opened = os.open(os.path.join(streams, name), flags)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.argv = ["dialscore", *args]
    from dialscore.cli import app

    try:
        app(args=args, prog_name="dialscore")
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def run_cli(
    args: list[str], *, env: dict[str, str], cwd: Path, stdin: str | None = None
) -> CliResult:
    """Runs ``dialscore <args>`` to completion (bounded) in a process of its own, in ``cwd``,
    so no stray .env is read; ``stdin``, when given, is what it reads."""
    with tempfile.TemporaryDirectory(prefix="dialscore-command-") as streams:
        folder = Path(streams)
        (folder / "in").write_text(stdin or "", encoding="utf-8")
        (folder / "out").touch()
        (folder / "err").touch()
        process = _COMMANDS.Process(
            target=_command_process, args=(args, env, str(cwd), streams), daemon=True
        )
        process.start()
        process.join(CLI_TIMEOUT)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise AssertionError(f"dialscore {' '.join(args)} ran over {CLI_TIMEOUT} s")
        out = (folder / "out").read_text(encoding="utf-8")
        err = (folder / "err").read_text(encoding="utf-8")
    return CliResult(args, process.exitcode, out, err)


def cli_json(args: list[str], *, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Runs a command that must succeed and print exactly one JSON object on stdout."""
    result = run_cli(args, env=env, cwd=cwd)
    assert result.returncode == 0, result.describe()
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, result.describe()
    payload = json.loads(result.stdout)
    assert isinstance(payload, dict), result.describe()
    return payload


@contextlib.contextmanager
def cli_database_env(database: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of one-shot commands on ``database`` (one of DATABASES): the embedded
    default in ``tmp_path``, or a fresh PostgreSQL database, migrated, dropped afterwards."""
    data_dir = tmp_path / "var"
    if database == "sqlite":
        yield base_env(data_dir)
        return
    with fresh_postgres_database() as url:
        env = base_env(data_dir, DATABASE_URL=url)
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        yield env


def cli_error(args: list[str], *, env: dict[str, str], cwd: Path) -> str:
    """Runs a command that must fail with ``{"error": ...}`` on stderr and nothing on stdout."""
    result = run_cli(args, env=env, cwd=cwd)
    assert result.returncode != 0, result.describe()
    assert result.stdout == "", result.describe()
    payload = json.loads(result.stderr)
    assert isinstance(payload, dict) and set(payload) == {"error"}, result.describe()
    message = payload["error"]
    assert isinstance(message, str) and message, result.describe()
    return message


# -- long-running processes ------------------------------------------------------------------


@dataclass
class Service:
    """One ``dialscore`` process (serve or worker) with its output in a log file."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    port: int | None = None
    _log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        assert self.port is not None, f"{self.name} does not listen"
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        if self._log is not None:
            self._log.flush()
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: no shutdown code runs."""
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self._close_log()

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if the process has not exited within ``timeout``."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGKILL)
                self.process.wait(timeout=10)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


@dataclass
class Processes:
    """Starts services and, on ``close``, stops every one of them that is still running."""

    log_dir: Path
    services: list[Service] = field(default_factory=list)

    def start(
        self, name: str, args: list[str], *, env: dict[str, str], port: int | None = None
    ) -> Service:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}-{len(self.services)}.log"
        log = log_path.open("wb")
        process = subprocess.Popen(
            [*dialscore_command(), *args],
            env=env,
            cwd=self.log_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        service = Service(name, process, log_path, port, log)
        self.services.append(service)
        return service

    def serve(self, *, env: dict[str, str], worker: bool = True) -> Service:
        """``dialscore serve`` on a free port of 127.0.0.1, returned once /readyz answers 200."""
        port = free_port()
        args = ["serve", "--host", "127.0.0.1", "--port", str(port)]
        if not worker:
            args.append("--no-worker")
        service = self.start("serve", args, env=env, port=port)
        wait_ready(service)
        return service

    def diagnostics(self) -> str:
        return "\n".join(
            f"--- {s.name} (pid {s.process.pid}, exit {s.process.poll()}) ---\n{s.log_tail()}"
            for s in self.services
        )

    def close(self) -> None:
        for service in self.services:
            with contextlib.suppress(Exception):
                service.stop()


@contextlib.contextmanager
def processes(log_dir: Path) -> Iterator[Processes]:
    group = Processes(log_dir)
    try:
        yield group
    finally:
        group.close()


def wait_for(
    check: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.05,
    what: str,
    services: list[Service] | None = None,
) -> T:
    """Calls ``check`` until it returns a value other than None (bounded by ``timeout``).

    Fails at once if one of ``services`` has exited, with its log."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None:
            return value
        for service in services or []:
            if not service.alive():
                raise AssertionError(
                    f"{service.name} exited ({service.process.returncode}) while waiting for "
                    f"{what}\n{service.log_tail()}"
                )
        if time.monotonic() > deadline:
            logs = "\n".join(s.log_tail() for s in services or [])
            raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs}")
        time.sleep(interval)


def wait_ready(service: Service, timeout: float = 30.0) -> None:
    def ready() -> bool | None:
        try:
            response = httpx.get(f"{service.base_url}/readyz", timeout=2.0, trust_env=False)
        except httpx.TransportError:
            return None
        return True if response.status_code == 200 else None

    wait_for(
        ready, timeout=timeout, interval=0.1, what=f"{service.name} /readyz", services=[service]
    )


# -- HTTP ------------------------------------------------------------------------------------


def api_client(service: Service, api_key: str) -> httpx.Client:
    return httpx.Client(
        base_url=service.base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=15.0,
        trust_env=False,
    )


def get_job(client: httpx.Client, job_id: str) -> dict[str, Any] | None:
    """The job as the API shows it; None when the answer is a 429 (a rate limit, try later)."""
    response = client.get(f"{V2}/jobs/{job_id}")
    if response.status_code == 429:
        return None
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()["data"]
    return job


def wait_for_job(
    client: httpx.Client,
    job_id: str,
    until: Callable[[dict[str, Any]], bool],
    *,
    timeout: float,
    interval: float = 0.1,
    what: str,
    services: list[Service] | None = None,
) -> dict[str, Any]:
    """Polls GET /jobs/{id} until ``until(job)`` holds; returns that job."""

    def check() -> dict[str, Any] | None:
        job = get_job(client, job_id)
        return job if job is not None and until(job) else None

    return wait_for(check, timeout=timeout, interval=interval, what=what, services=services)


def job_contacts(client: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    """Every contact of a job (up to 1000, one page)."""
    response = client.get(f"{V2}/jobs/{job_id}/contacts", params={"limit": 1000})
    assert response.status_code == 200, response.text
    contacts: list[dict[str, Any]] = response.json()["data"]["contacts"]
    return contacts


def credits_of(client: httpx.Client) -> float:
    response = client.get(f"{V2}/account/credits")
    assert response.status_code == 200, response.text
    value: float = response.json()["data"]["credits"]
    return value


# -- PostgreSQL and Redis ----------------------------------------------------------------------


def _pg_url(database: str) -> str:
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    return f"{base}/{database}"


@contextlib.contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """An empty PostgreSQL database of its own (no schema), dropped afterwards."""
    name = f"dialscore_proc_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _pg_url(name)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def redis_namespace() -> Iterator[str]:
    """A Redis key prefix of its own (other test runs share the Redis); its keys go at the end."""
    import redis

    namespace = f"dialscore-test-{uuid.uuid4().hex[:12]}"
    try:
        yield namespace
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        try:
            keys = list(client.scan_iter(match=f"{namespace}*", count=500))
            if keys:
                client.delete(*keys)
        finally:
            client.close()


class RedisServer:
    """A private ``redis-server`` on a free port of 127.0.0.1, without persistence, that a
    test stops and starts again: an outage of Redis itself, which loses what it held."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Starts it (again, on the same port) and returns once it answers PING."""
        import redis

        self.directory.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "redis.log").open("ab")
        try:
            self.process = subprocess.Popen(
                [
                    *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                    *("--save", "", "--appendonly", "no", "--dir", str(self.directory)),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        client = redis.Redis(port=self.port, socket_timeout=1.0, socket_connect_timeout=1.0)

        def answers() -> bool | None:
            try:
                return True if client.ping() else None
            except redis.RedisError:
                return None

        try:
            wait_for(answers, timeout=timeout, interval=0.02, what="the private redis-server")
        finally:
            client.close()

    def stop(self) -> None:
        """Stops it (SIGTERM: it exits at once, keeping nothing)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None


@contextlib.contextmanager
def private_redis(directory: Path) -> Iterator[RedisServer]:
    """A private Redis, running, stopped at the end whatever state the test left it in."""
    server = RedisServer(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()

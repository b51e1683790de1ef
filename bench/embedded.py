"""Running the embedded service as a subprocess for benchmarks, with bounded waits."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx


class BenchError(Exception):
    pass


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def check(self, what: str) -> None:
        if self.left() <= 0:
            raise BenchError(f"timed out after {self.seconds:.0f} s while {what}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def server_env(data_dir: Path, **settings: str) -> dict[str, str]:
    """This environment without DIALSCORE_* variables, plus the data dir and ``settings``
    (given without the DIALSCORE_ prefix)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIALSCORE_")}
    env.update(
        DIALSCORE_DATA_DIR=str(data_dir),
        DIALSCORE_LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    env.update({f"DIALSCORE_{name}": value for name, value in settings.items()})
    return env


def cli(args: list[str], env: dict[str, str], cwd: Path, deadline: Deadline) -> dict[str, Any]:
    """Runs ``dialscore <args>`` to completion (bounded); its JSON output."""
    done = subprocess.run(
        [sys.executable, "-m", "dialscore", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=max(1.0, min(120.0, deadline.left())),
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"{args[:2]} failed: {done.stderr.strip() or done.stdout.strip()}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@contextmanager
def running_server(
    env: dict[str, str],
    cwd: Path,
    port: int,
    deadline: Deadline,
    *,
    args: tuple[str, ...] = (),
    log_name: str = "server.log",
) -> Iterator[subprocess.Popen[bytes]]:
    """``dialscore serve [args]`` on ``port``, stopped on exit; its output in ``log_name``."""
    log = (cwd / log_name).open("wb")
    command = [sys.executable, "-m", "dialscore", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), *args]
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        wait_until_up(process, port, deadline)
        yield process
    finally:
        stop(process)
        log.close()


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 15 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def wait_until_up(process: subprocess.Popen[bytes], port: int, deadline: Deadline) -> None:
    limit = time.monotonic() + min(60.0, deadline.left())
    while time.monotonic() < limit:
        if process.poll() is not None:
            raise BenchError(f"the server exited with code {process.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise BenchError("the server did not answer /healthz within 60 s")


@contextmanager
def bench_data_dir(keep: bool) -> Iterator[Path]:
    """A temporary data directory for the service: on a failure, the last lines of its
    server log are printed; afterwards it is removed, or kept (and said so) with ``keep``."""
    data_dir = Path(tempfile.mkdtemp(prefix="dialscore-bench-"))
    try:
        yield data_dir
    except BenchError:
        log = data_dir / "server.log"
        if log.exists():
            tail = log.read_text(errors="replace").splitlines()[-30:]
            print("--- server log (last lines) ---", *tail, sep="\n", file=sys.stderr)
        raise
    finally:
        if keep:
            print(f"data kept in {data_dir}", file=sys.stderr)
        else:
            shutil.rmtree(data_dir, ignore_errors=True)

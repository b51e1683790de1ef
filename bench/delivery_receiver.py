"""A webhook receiver in a process of its own, and the handle the delivery bench drives it by.

Run as a script, it listens on a free port of 127.0.0.1 (HTTP/1.1, keep-alive, asyncio), answers
every POST with 200 at once and notes when each event arrived (``time.monotonic()``, the same
clock in every process of the machine), which job it belongs to, its envelope id and its size.
It prints ``{"url": ...}`` on stdout, then answers commands read from stdin, one JSON object a
line each way:

- ``{"cmd": "wait", "job": J, "contacts": N, "completed": true, "timeout": S}``: the arrivals of
  job J once N distinct ``job.contact.scored`` events (and, with ``completed``, its
  ``job.completed``) have come, or after S seconds with ``"done": false``;
- ``{"cmd": "arrivals", "job": J}``: the arrivals of job J so far;
- ``{"cmd": "connections"}``: how many connections it has accepted;
- ``{"cmd": "stop"}``: exits.

In a process of its own, its CPU time is not counted in the sender's, whichever sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from embedded import BenchError

CONTACT_SCORED = "job.contact.scored"
JOB_COMPLETED = "job.completed"
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


@dataclass(frozen=True)
class Arrival:
    at: float
    event_type: str
    envelope_id: str
    size: int


def job_of(event: dict[str, Any]) -> str | None:
    """The job an event belongs to: its payload's job, or the job it completes."""
    payload = event.get("payload") or {}
    if event.get("eventType") == CONTACT_SCORED:
        job_id: str | None = (payload.get("job") or {}).get("id")
        return job_id
    completed: str | None = payload.get("jobId")
    return completed


# -- the receiver process ---------------------------------------------------------------------


class Arrivals:
    """What came, by job, shared by the event loop (writing) and the command thread (reading)."""

    def __init__(self) -> None:
        self.by_job: dict[str | None, list[Arrival]] = {}
        # Kept as events come, so that a wait checks in constant time.
        self.scored: dict[str | None, set[str]] = {}
        self.completed: set[str | None] = set()
        self.connections = 0
        self.changed = threading.Condition()

    def note(self, at: float, body: bytes) -> None:
        try:
            event = json.loads(body)
            arrival = Arrival(at, event["eventType"], event["id"], len(body))
            job_id = job_of(event)
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        with self.changed:
            self.by_job.setdefault(job_id, []).append(arrival)
            if arrival.event_type == CONTACT_SCORED:
                self.scored.setdefault(job_id, set()).add(arrival.envelope_id)
            elif arrival.event_type == JOB_COMPLETED:
                self.completed.add(job_id)
            self.changed.notify_all()

    def complete(self, job_id: str, contacts: int, completed: bool) -> bool:
        done = job_id in self.completed or not completed
        return done and len(self.scored.get(job_id, ())) >= contacts

    def wait(self, job_id: str, contacts: int, completed: bool, timeout: float) -> bool:
        end = time.monotonic() + timeout
        with self.changed:
            while not self.complete(job_id, contacts, completed):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(timeout=min(left, 1.0))
            return True

    def of(self, job_id: str) -> list[list[Any]]:
        with self.changed:
            return [
                [a.at, a.event_type, a.envelope_id, a.size] for a in self.by_job.get(job_id, [])
            ]


async def _serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, arrivals: Arrivals
) -> None:
    arrivals.connections += 1
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            at = time.monotonic()
            writer.write(ANSWER)
            arrivals.note(at, body)
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


def _answer_commands(arrivals: Arrivals, stop: Callable[[], None]) -> None:
    for line in sys.stdin:
        command = json.loads(line)
        kind = command["cmd"]
        answer: dict[str, Any]
        if kind == "wait":
            done = arrivals.wait(
                command["job"], command["contacts"], command["completed"], command["timeout"]
            )
            answer = {"done": done, "arrivals": arrivals.of(command["job"])}
        elif kind == "arrivals":
            answer = {"arrivals": arrivals.of(command["job"])}
        elif kind == "connections":
            answer = {"connections": arrivals.connections}
        else:
            break
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    stop()


async def _main() -> None:
    arrivals = Arrivals()
    server = await asyncio.start_server(
        lambda r, w: _serve_connection(r, w, arrivals), "127.0.0.1", 0, backlog=256
    )
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(json.dumps({"url": f"http://127.0.0.1:{port}/hook"}) + "\n")
    sys.stdout.flush()
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    commands = threading.Thread(
        target=_answer_commands,
        args=(arrivals, lambda: loop.call_soon_threadsafe(stopped.set)),
        daemon=True,
    )
    commands.start()
    async with server:
        await stopped.wait()


# -- the handle in the bench's process --------------------------------------------------------


class Receiver:
    """The receiver process, driven over its stdin and stdout."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self._in: IO[str] = process.stdin
        self._out: IO[str] = process.stdout
        self.url: str = self._read(timeout=30.0)["url"]

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self, timeout: float) -> dict[str, Any]:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self._out.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not line or not line[0]:
            raise BenchError(
                f"the receiver did not answer within {timeout:.0f} s "
                f"(exit code {self.process.poll()})"
            )
        answer: dict[str, Any] = json.loads(line[0])
        return answer

    def _ask(self, command: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._in.write(json.dumps(command) + "\n")
        self._in.flush()
        return self._read(timeout)

    def wait(
        self, job_id: str, contacts: int, *, completed: bool, timeout: float
    ) -> tuple[bool, list[Arrival]]:
        """Whether the job's events all came within ``timeout``; its arrivals so far."""
        command = {
            "cmd": "wait",
            "job": job_id,
            "contacts": contacts,
            "completed": completed,
            "timeout": max(0.0, timeout),
        }
        answer = self._ask(command, timeout + 10.0)
        return bool(answer["done"]), [Arrival(*a) for a in answer["arrivals"]]

    def arrivals(self, job_id: str) -> list[Arrival]:
        answer = self._ask({"cmd": "arrivals", "job": job_id}, 10.0)
        return [Arrival(*a) for a in answer["arrivals"]]

    def connections(self) -> int:
        answer = self._ask({"cmd": "connections"}, 10.0)
        count: int = answer["connections"]
        return count

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                self._in.write(json.dumps({"cmd": "stop"}) + "\n")
                self._in.flush()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        for stream in (self._in, self._out):
            with contextlib.suppress(OSError, ValueError):
                stream.close()


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    """The receiver in a process of its own, stopped on exit."""
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        receiver = Receiver(process)
    except BaseException:
        process.kill()
        process.wait(timeout=5)
        raise
    try:
        yield receiver
    finally:
        receiver.stop()


if __name__ == "__main__":
    asyncio.run(_main())

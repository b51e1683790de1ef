"""Real HTTP/1.1 servers on 127.0.0.1 for tests: every request recorded, each answered by a
responder. Webhook receivers and the fakes of outside providers are all made from them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Received:
    """One request as it arrived; ``body`` is what came of it, fewer bytes than its
    Content-Length when the client went away while sending it."""

    # When its request line and headers had come: a body cut short ends only when its
    # sender's connection closes, which is after the sender is gone.
    at: float
    method: str
    target: str  # as sent: the path and its query
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    # Seconds to wait before answering; the wait ends early when the server stops.
    delay: float = 0.0


# Decides the answer to a request: the request and how many came before it.
Responder = Callable[[Received, int], Answer]


def ok(request: Received, index: int) -> Answer:
    return Answer()


class FakeServer:
    """An HTTP/1.1 server on 127.0.0.1 in a thread of its own.

    ``gather``: each request is held until this many are in flight (or ``linger`` seconds
    pass), so that concurrent requests overlap and a cap on them is reached rather than hoped
    for; ``max_in_flight`` is the most there were at once."""

    def __init__(self, responder: Responder = ok) -> None:
        self.responder = responder
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.gather = 1
        self.linger = 0.1
        self._state = threading.Condition()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def url(self) -> str:
        return self.base_url

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stops listening and ends every wait for an answer; safe to call twice."""
        self._stopping.set()
        with self._state:
            self._state.notify_all()
        if self._thread is not None:
            self._server.shutdown()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(self, request: Received) -> int:
        with self._state:
            index = len(self.received)
            self.received.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._state.notify_all()
            self._state.wait_for(
                lambda: self.in_flight >= self.gather or self._stopping.is_set(),
                timeout=self.linger,
            )
        return index

    def _done(self) -> None:
        with self._state:
            self.in_flight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                arrived = time.time()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Received(
                    at=arrived,
                    method=self.command,
                    target=self.path,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=body,
                )
                index = fake._record(request)
                try:
                    answer = fake.responder(request, index)
                    if answer.delay:
                        fake._stopping.wait(answer.delay)
                    self.send_response(answer.status)
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                    if len(body) < length:
                        self.close_connection = True  # the client went away mid-request
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up waiting
                finally:
                    fake._done()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


class Receiver(FakeServer):
    """A webhook receiver: answers 200 unless told otherwise, at ``/hook``."""

    @property
    def url(self) -> str:
        return f"{self.base_url}/hook"

    def events(self, event_type: str | None = None) -> list[Any]:
        with self._state:
            bodies = [request.json() for request in self.received]
        return [b for b in bodies if event_type is None or b.get("eventType") == event_type]


@contextmanager
def running_receiver(responder: Responder = ok) -> Iterator[Receiver]:
    with Receiver(responder) as receiver:
        yield receiver


class ScriptedService(FakeServer):
    """An outside provider's API: a request that passes ``authorized`` gets ``answer(request)``
    unless its subject (``who``) has scripted answers left. A scripted answer other than a
    plain 200 carries the provider's error document for its status (``error``) unless it
    brings a body of its own; a plain 200 gets the documented answer, after its delay."""

    def __init__(self) -> None:
        super().__init__(self.respond)
        self.scripts: dict[str, list[Answer]] = {}

    def script(self, who: str, *answers: Answer) -> None:
        with self._state:
            self.scripts[who] = list(answers)

    def requests_for(self, who: str) -> int:
        return sum(1 for request in self.received if self.who(request) == who)

    # What a subclass says: who a request is about, its documented answers and error shape.

    def authorized(self, request: Received) -> bool:
        raise NotImplementedError

    def who(self, request: Received) -> str:
        raise NotImplementedError

    def answer(self, request: Received) -> tuple[int, Any]:
        raise NotImplementedError

    def error(self, status: int) -> Any:
        raise NotImplementedError

    def respond(self, request: Received, index: int) -> Answer:
        if not self.authorized(request):
            return self._json(Answer(401), self.error(401))
        with self._state:
            scripted = self.scripts.get(self.who(request))
            answer = scripted.pop(0) if scripted else None
        if answer is not None and (answer.status != 200 or answer.body):
            return self._json(answer, self.error(answer.status))
        status, document = self.answer(request)
        return self._json(replace(answer or Answer(), status=status), document)

    @staticmethod
    def _json(answer: Answer, document: Any) -> Answer:
        """The answer with ``document`` as its body, unless it brings a body of its own."""
        body = answer.body or json.dumps(document).encode()
        headers = {"Content-Type": "application/json", **answer.headers}
        return replace(answer, headers=headers, body=body)

"""A real HTTP receiver on 127.0.0.1 for webhook tests: records every request, answers as told."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    at: float
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Responder = Callable[[Received, int], Answer]


class Receiver:
    """``responder(request, index)`` decides each answer; every request is recorded."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.responder: Responder = responder or (lambda request, index: Answer())
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/hook"

    def events(self, event_type: str | None = None) -> list[Any]:
        with self._lock:
            bodies = [r.json() for r in self.received]
        return [b for b in bodies if event_type is None or b.get("eventType") == event_type]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = Received(
                    at=time.time(),
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length),
                )
                with receiver._lock:
                    index = len(receiver.received)
                    receiver.received.append(request)
                answer = receiver.responder(request, index)
                if answer.delay:
                    time.sleep(answer.delay)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> None:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def running_receiver(responder: Responder | None = None) -> Iterator[Receiver]:
    receiver = Receiver(responder)
    receiver.start()
    try:
        yield receiver
    finally:
        receiver.stop()

"""A complete receiver of dialscore webhooks, with nothing but the Python standard library.

It checks each delivery's signature on the bytes as they arrived, before parsing them: the
Standard Webhooks ``webhook-signature`` (``webhook-id``, ``webhook-timestamp``) when it is
there, which is what the ``standardwebhooks`` and ``svix`` libraries check and what carries
the previous secret too for a day after a rotation, else the spec's ``X-Service-Signature``
(Base64 HMAC-SHA256 of the raw body under the subscription's secret). It keeps each event in a
SQLite file once, dropping the repeats a retry brings (same envelope ``id``); and answers
within the 10 seconds dialscore waits: slow work belongs after the answer, reading the stored
events.

    WEBHOOK_SECRET=whsec_... python3 examples/webhook_receiver.py --port 9000

then subscribe ``https://<your host>/hook`` (TLS ends at your proxy; for a test on this
machine, ``http://127.0.0.1:9000/hook`` with ``DIALSCORE_WEBHOOK_ALLOW_PRIVATE=true`` on the
service). Answers: 200 for an event kept or already kept, 401 for a bad signature, 400 for a
body that is not an event or that ended before its Content-Length did, 500 when keeping it
failed (dialscore sends it again later).
After rotating the secret, restart it with the new one within the day the old one still signs
``webhook-signature``: no event is refused meanwhile.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SIGNATURE_HEADER = "X-Service-Signature"
MAX_BODY = 10 * 1024 * 1024
# How far a delivery's webhook-timestamp may be from this machine's clock, as the libraries
# allow: an old delivery replayed by someone who caught it is refused.
TIMESTAMP_TOLERANCE = 5 * 60
# The answer (and log line) to a body cut short: fewer bytes came than Content-Length said.
TRUNCATED = "body shorter than its Content-Length: the sender stopped mid-request"


def signature_matches(secret: str, body: bytes, signature: str | None) -> bool:
    """Whether ``signature`` is the Base64 HMAC-SHA256 of the raw ``body`` under ``secret``."""
    if not signature:
        return False
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    # A comparison in constant time: a signature cannot be guessed byte by byte.
    return hmac.compare_digest(base64.b64encode(digest), signature.strip().encode())


def signing_key(secret: str) -> bytes:
    """The key of ``webhook-signature``: the bytes of the Base64 after ``whsec_``; for a secret
    of another form (a subscription's made before the Standard Webhooks headers, a version 1
    callback secret) its own UTF-8 bytes."""
    if secret.startswith("whsec_"):
        try:
            key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
        except binascii.Error:
            key = b""
        if key:
            return key
    return secret.encode()


def standard_signature_matches(
    secret: str,
    body: bytes,
    message_id: str | None,
    timestamp: str | None,
    signature: str | None,
    now: float,
) -> bool:
    """Whether one of the space-separated ``v1,<Base64>`` entries of ``webhook-signature`` is
    the HMAC-SHA256 of ``{webhook-id}.{webhook-timestamp}.{raw body}`` under ``secret``, sent
    within ``TIMESTAMP_TOLERANCE`` of ``now``. What ``standardwebhooks.Webhook(secret)
    .verify(body, headers)`` checks, with nothing but the standard library."""
    if not (message_id and timestamp and signature):
        return False
    try:
        sent_at = int(timestamp)
    except ValueError:
        return False
    if abs(now - sent_at) > TIMESTAMP_TOLERANCE:
        return False
    signed = f"{message_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(signing_key(secret), signed, hashlib.sha256).digest())
    for entry in signature.split():
        version, _, value = entry.partition(",")
        if version == "v1" and hmac.compare_digest(expected, value.encode()):
            return True
    return False


class EventStore:
    """Events kept once each, by envelope id, in a SQLite file: a restarted receiver still
    knows what it has seen."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS events ("
                " id TEXT PRIMARY KEY, event_type TEXT NOT NULL, body TEXT NOT NULL,"
                " received_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )

    def keep(self, event: dict[str, Any], body: bytes) -> bool:
        """Stores an event and handles it, in one transaction; False for a repeat."""
        with self._lock, self._db:
            added = self._db.execute(
                "INSERT OR IGNORE INTO events (id, event_type, body) VALUES (?, ?, ?)",
                (event["id"], event["eventType"], body.decode()),
            )
            if added.rowcount == 0:
                return False
            # An exception here undoes the insert: the retry of this delivery is handled anew.
            handle(event)
            return True

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM events").fetchone()[0])


def handle(event: dict[str, Any]) -> None:
    """Your code: what an event means to you. Keep it quick."""
    payload = event["payload"]
    if event["eventType"] == "job.contact.scored":
        contact = payload["contact"]
        best = (contact.get("bestPhone") or {}).get("number")
        print(f"scored {contact['id']}: {contact['leadStatus']}, dial {best}", flush=True)
    elif event["eventType"] == "job.completed":
        print(f"job {payload['jobId']} {payload['jobStatus']}", flush=True)
    else:
        print(f"{event['eventType']} {event['id']}", flush=True)


def make_handler(secret: str, store: EventStore, path: str) -> type[BaseHTTPRequestHandler]:
    class Receiver(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            if self.path != path:
                self._answer(404, "no such path")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._answer(413, "body too large")
                return
            body = self.rfile.read(length)  # the raw bytes: what the signature is of
            if len(body) < length:
                # The connection ended before the body did: no signature can match a part of
                # it, and saying "bad signature" would send you looking at your secret.
                self.log_error("%s (%d of %d bytes)", TRUNCATED, len(body), length)
                self.close_connection = True
                self._answer(400, TRUNCATED)
                return
            # self.headers finds a header whatever its case (x-service-signature too).
            if self.headers.get("webhook-signature") is not None:
                signed = standard_signature_matches(
                    secret,
                    body,
                    self.headers.get("webhook-id"),
                    self.headers.get("webhook-timestamp"),
                    self.headers.get("webhook-signature"),
                    time.time(),
                )
            else:
                signed = signature_matches(secret, body, self.headers.get(SIGNATURE_HEADER))
            if not signed:
                self._answer(401, "bad signature")
                return
            try:
                event = json.loads(body)
                event_id, event_type = event["id"], event["eventType"]
            except (ValueError, TypeError, KeyError):
                self._answer(400, "not an event")
                return
            if not (isinstance(event_id, str) and isinstance(event_type, str)):
                self._answer(400, "not an event")
                return
            try:
                kept = store.keep(event, body)
            except Exception as exc:
                self.log_error("could not keep event %s: %r", event_id, exc)
                self._answer(500, "could not keep the event")
                return
            self._answer(200, "kept" if kept else "already kept")

        def _answer(self, status: int, text: str) -> None:
            body = json.dumps({"status": text}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Receiver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--path", default="/hook")
    parser.add_argument("--db", default="webhook_events.db", help="SQLite file of kept events")
    args = parser.parse_args()
    secret = os.environ.get("WEBHOOK_SECRET")
    if not secret:
        parser.error("set WEBHOOK_SECRET to the subscription's secret (whsec_...)")
    store = EventStore(args.db)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(secret, store, args.path))
    print(f"receiving on http://{args.host}:{server.server_port}{args.path}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()

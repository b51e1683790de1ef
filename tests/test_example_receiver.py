"""The example receiver of the README (examples/webhook_receiver.py), run as its users run it,
takes real deliveries: signatures checked on the raw bytes, repeats dropped by id."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.webhooks import sign, signing_key, standard_signature
from tests.conftest import SECRET
from tests.processes import free_port
from tests.support import V2, contact, make_tenant, settle, state_of, submit

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "webhook_receiver.py"
TRUNCATED = "body shorter than its Content-Length: the sender stopped mid-request"

pytestmark = pytest.mark.slow


def send_cut_short(port: int, body: bytes, signature: str) -> str:
    """POSTs half of ``body`` with a Content-Length of all of it, then closes the write side,
    as a sender that stopped mid-request; the answer, read to its end."""
    head = (
        f"POST /hook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"X-Service-Signature: {signature}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(head.encode() + body[: len(body) // 2])
        conn.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def kept(db_path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db_path) as db:
        return [tuple(row) for row in db.execute("SELECT id, event_type, body FROM events")]


async def test_the_example_receiver_keeps_real_deliveries_once_and_refuses_bad_signatures(
    settings: Settings, tmp_path: Path
) -> None:
    app = create_app(settings.model_copy(update={"webhook_allow_private": True}), run_worker=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    events_db = tmp_path / "events.db"
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            tenant = await make_tenant(state_of(app).db, SECRET)
            events = ["job.contact.scored", "job.completed"]
            created = await api.post(
                f"{V2}/webhooks",
                json={"name": "example", "url": url, "eventTypes": events},
                headers=tenant.headers,
            )
            secret = created.json()["data"]["secret"]
            receiver = subprocess.Popen(
                [sys.executable, str(EXAMPLE), "--port", str(port), "--db", str(events_db)],
                env={"WEBHOOK_SECRET": secret, "PATH": "/usr/bin:/bin"},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            try:
                assert receiver.stdout is not None
                assert receiver.stdout.readline().startswith(f"receiving on {url[:-5]}")
                contacts = [contact("Ann", "Lee", "+14155552671"), contact("Bo", "Ray")]
                assert (await submit(api, tenant, contacts)).status_code == 200
                await settle(app)
                rows = kept(events_db)
                assert sorted(r[1] for r in rows) == ["job.completed", *["job.contact.scored"] * 2]

                # A retry brings the same bytes and id: answered 200, kept once.
                event_id, _, body = rows[0]
                raw = body.encode()
                async with httpx.AsyncClient(trust_env=False) as client:
                    again = await client.post(
                        url, content=raw, headers={"x-service-signature": sign(secret, raw)}
                    )
                    assert again.status_code == 200 and again.json() == {"status": "already kept"}
                    forged = raw.replace(b'"apiVersion"', b' "apiVersion"')
                    refused = await client.post(
                        url, content=forged, headers={"X-Service-Signature": sign(secret, raw)}
                    )
                    assert refused.status_code == 401
                    unsigned = await client.post(url, content=raw)
                    assert unsigned.status_code == 401
                    # The Standard Webhooks headers are checked when they are there.
                    now = int(time.time())
                    standard = {
                        "webhook-id": event_id,
                        "webhook-timestamp": str(now),
                        "webhook-signature": standard_signature(
                            signing_key(secret), event_id, now, raw
                        ),
                    }
                    again = await client.post(url, content=raw, headers=standard)
                    assert again.status_code == 200 and again.json() == {"status": "already kept"}
                    wrong = {**standard, "webhook-timestamp": str(now + 1)}
                    refused = await client.post(
                        url,
                        content=raw,
                        headers={**wrong, "X-Service-Signature": sign(secret, raw)},
                    )
                    assert refused.status_code == 401
                    stale = now - 600
                    old = standard_signature(signing_key(secret), event_id, stale, raw)
                    late = {**standard, "webhook-timestamp": str(stale), "webhook-signature": old}
                    assert (await client.post(url, content=raw, headers=late)).status_code == 401
                assert len(kept(events_db)) == 3

                # A body cut short (the sender stopped mid-request): 400 saying so, not 401.
                answer = await asyncio.to_thread(send_cut_short, port, raw, sign(secret, raw))
                assert answer.startswith("HTTP/1.1 400 "), answer
                assert json.loads(answer.partition("\r\n\r\n")[2]) == {"status": TRUNCATED}
                assert len(kept(events_db)) == 3

                # After a rotation the receiver, still with the old secret, takes the events
                # by their webhook-signature, which the old secret signs too for a day.
                webhook_id = created.json()["data"]["id"]
                rotated = await api.post(
                    f"{V2}/webhooks/{webhook_id}/rotate-secret", headers=tenant.headers
                )
                assert rotated.status_code == 200, rotated.text
                assert (await submit(api, tenant, [contact("Cy", "Doe")])).status_code == 200
                await settle(app)
                assert len(kept(events_db)) == 5
                # Delivered once each: the deliveries' log shows no retry.
                log = await api.get(
                    f"{V2}/webhooks/{webhook_id}/deliveries", headers=tenant.headers
                )
                deliveries = log.json()["data"]["deliveries"]
                assert [d["state"] for d in deliveries] == ["delivered"] * 5, log.text
                assert [d["attemptCount"] for d in deliveries] == [1] * 5, log.text
            finally:
                receiver.terminate()
                output, _ = receiver.communicate(timeout=10)
    printed = output.splitlines()
    # Its log says so too, with how much of the body came.
    cut = [line for line in printed if TRUNCATED in line]
    assert len(cut) == 1 and f"({len(raw) // 2} of {len(raw)} bytes)" in cut[0], output
    assert sum(line.startswith("scored ") for line in printed) == 3, output
    assert any(line.startswith("job ") and line.endswith(" Finalized") for line in printed)
    assert json.loads(rows[0][2])["id"] == event_id

"""The plain-client baseline of webhook delivery: an ``httpx.AsyncClient`` posting signed event
envelopes to a receiver, a fixed number at a time, with no database: the machine's limit.

Run as a script (in a process of its own, so that its CPU time is its own): reads a JSON object
on stdin (``url``, ``contact``, ``jobId``, ``warmupJobId``, ``secret``, ``posts``, ``warmup``,
``concurrency``, ``timeLimit``), posts ``warmup`` envelopes for the warm-up job, then ``posts``
envelopes for ``jobId`` (fewer if ``timeLimit`` seconds pass), and prints one JSON object: the
posts made, the errors, the wall and CPU seconds of the timed posts and its peak memory.

Each envelope is made as the service makes a ``job.contact.scored`` delivery: ``{"payload":
{"contact", "job"}, "eventType", "timestamp", "apiVersion": "v2", "id"}`` as compact JSON,
signed with ``X-Service-Signature`` (Base64 of its HMAC-SHA256 under the secret).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

CONTACT_SCORED = "job.contact.scored"


def envelope(contact: dict[str, Any], job_id: str) -> bytes:
    body = {
        "payload": {"contact": contact, "job": {"id": job_id, "type": "lightning_scoring"}},
        "eventType": CONTACT_SCORED,
        "timestamp": int(time.time() * 1000),
        "apiVersion": "v2",
        "id": str(uuid.uuid4()),
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def signature(secret: str, body: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


async def post_envelopes(
    client: httpx.AsyncClient,
    order: dict[str, Any],
    job_id: str,
    count: int,
    time_limit: float,
) -> tuple[int, int]:
    """``count`` posts (fewer once ``time_limit`` has passed), ``concurrency`` at a time;
    (posts made, posts not answered 200)."""
    numbers = iter(range(count))
    end = time.monotonic() + time_limit
    made = errors = 0

    async def poster() -> None:
        nonlocal made, errors
        for _ in numbers:
            if time.monotonic() > end:
                return
            body = envelope(order["contact"], job_id)
            headers = {
                "Content-Type": "application/json",
                "X-Service-Signature": signature(order["secret"], body),
            }
            try:
                response = await client.post(order["url"], content=body, headers=headers)
                made += 1
                errors += response.status_code != 200
            except httpx.HTTPError:
                made += 1
                errors += 1

    await asyncio.gather(*(poster() for _ in range(order["concurrency"])))
    return made, errors


def peak_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


async def _main(order: dict[str, Any]) -> dict[str, Any]:
    concurrency = order["concurrency"]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=10.0, trust_env=False) as client:
        await post_envelopes(client, order, order["warmupJobId"], order["warmup"], 30.0)
        wall, cpu = time.monotonic(), time.process_time()
        made, errors = await post_envelopes(
            client, order, order["jobId"], order["posts"], order["timeLimit"]
        )
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    return {"posts": made, "errors": errors, "wall": wall, "cpu": cpu, "peakKib": peak_kib()}


# -- the handle in the bench's process --------------------------------------------------------


@dataclass(frozen=True)
class BaselineRun:
    job_id: str
    warmup: int
    posts: int
    errors: int
    wall: float
    cpu: float
    peak_kib: int


def run_baseline(
    url: str, contact: dict[str, Any], *, posts: int, concurrency: int, time_limit: float
) -> BaselineRun:
    """Runs the baseline in a process of its own (bounded) and returns what it measured."""
    from embedded import BenchError

    order: dict[str, Any] = {
        "url": url,
        "contact": contact,
        "jobId": str(uuid.uuid4()),
        "warmupJobId": str(uuid.uuid4()),
        "secret": "whsec_" + uuid.uuid4().hex,
        "posts": posts,
        "warmup": min(200, posts),
        "concurrency": concurrency,
        "timeLimit": time_limit,
    }
    try:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve())],
            input=json.dumps(order),
            capture_output=True,
            text=True,
            timeout=time_limit + 60.0,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"the baseline client did not finish within {exc.timeout:.0f} s") from exc
    if done.returncode != 0:
        raise BenchError(f"the baseline client failed: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return BaselineRun(
        job_id=order["jobId"],
        warmup=order["warmup"],
        posts=result["posts"],
        errors=result["errors"],
        wall=result["wall"],
        cpu=result["cpu"],
        peak_kib=result["peakKib"],
    )


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_main(json.load(sys.stdin)))))

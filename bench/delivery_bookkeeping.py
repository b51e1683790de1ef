"""What the dispatcher's own statements cost a delivery, without HTTP: the CPU time of this
process claiming due deliveries, leasing them and recording their attempts, on PostgreSQL.

On a new PostgreSQL database (dropped after), an enterprise client subscribes a URL to
``job.contact.scored``. Each of ``--rounds`` rounds writes ``--deliveries`` pending deliveries
(the ~2.5 KB documented contact), then, until none is due, claims them as a worker does:
``due_candidates`` of twice ``--claim`` rows, locked and skipped as on PostgreSQL, the first
``--claim`` leased; their attempts recorded as succeeded in groups of half a claim, with the
endpoints' health (``record_attempts``, ``note_attempts``), one transaction each. Prints each
round's CPU time per delivery (user and system, from ``os.times()``) and the median of the
rounds after the first (which pays for first use). Run it with another commit's ``src``
first on ``PYTHONPATH`` to compare, back to back.

    .venv/bin/python bench/delivery_bookkeeping.py [--rounds 8] [--deliveries 1000] [--claim 32]
        [--postgres-url postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from datetime import timedelta
from typing import Any

from delivery_setups import postgres_database
from dialscore.jobs.examples import CONTACT  # a documented contact, every field
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.migrations import upgrade
from dialscore.webhooks import claims, health
from dialscore.webhooks import service as webhooks
from dialscore.webhooks.schemas import CONTACT_SCORED
from embedded import BenchError
from job_processing import bench_client


async def subscribed_user(db: Database) -> str:
    async with db.unit_of_work() as session:
        principal = await bench_client(session, listening=True)
    return principal.user_id


async def record(db: Database, chosen: list[claims.Candidate]) -> None:
    now = utcnow()
    records = [
        claims.AttemptRecord(
            delivery_id=c.delivery_id,
            number=1,
            status_code=200,
            duration_ms=1,
            error=None,
            attempted_at=now,
            state="delivered",
            available_at=now,
            first_attempt_at=now,
            completed_at=now,
            subscription_id=c.subscription_id,
        )
        for c in chosen
    ]
    async with db.unit_of_work() as session:
        await claims.record_attempts(session, records)
        await health.note_attempts(session, records, disable_after=health.DEFAULT_DISABLE_AFTER)


async def one_round(db: Database, user_id: str, deliveries: int, claim: int) -> tuple[float, float]:
    """The user and system CPU seconds a delivery of claiming and recording ``deliveries``."""
    payload: dict[str, Any] = {"contact": CONTACT, "job": {"id": "j", "type": "scoring"}}
    async with db.unit_of_work() as session:
        await webhooks.emit(
            session,
            user_id=user_id,
            event_type=CONTACT_SCORED,
            payloads=[payload] * deliveries,
            job_id=None,
        )
    done = 0
    before = os.times()
    # Bounded: every pass leases what it claims, so each round ends within this many.
    for _ in range(deliveries // claim + 2):
        now = utcnow()
        async with db.unit_of_work() as session:
            candidates = await claims.due_candidates(
                session, now=now, limit=2 * claim, skip_locked=True
            )
            chosen = candidates[:claim]
            ids = [c.delivery_id for c in chosen]
            await claims.lease(session, ids, until=now + timedelta(minutes=5))
        if not chosen:
            break
        half = len(chosen) // 2 or 1
        for group in (chosen[:half], chosen[half:]):
            if group:
                await record(db, group)
        done += len(chosen)
    after = os.times()
    if done != deliveries:
        raise BenchError(f"recorded {done} deliveries of {deliveries}")
    return (after.user - before.user) / done, (after.system - before.system) / done


async def run(url: str, rounds: int, deliveries: int, claim: int) -> list[tuple[float, float]]:
    upgrade(url)
    db = Database(url)
    try:
        user_id = await subscribed_user(db)
        return [await one_round(db, user_id, deliveries, claim) for _ in range(rounds)]
    finally:
        await db.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--deliveries", type=int, default=1000)
    parser.add_argument("--claim", type=int, default=32, help="deliveries a claim takes (32)")
    parser.add_argument(
        "--postgres-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="a database to create the bench's own database from",
    )
    args = parser.parse_args()
    if not (2 <= args.rounds <= 50 and 1 <= args.deliveries <= 20_000 and 2 <= args.claim <= 500):
        parser.error("--rounds must be 2..50, --deliveries 1..20000 and --claim 2..500")
    try:
        with postgres_database(args.postgres_url) as url:
            figures = asyncio.run(run(url, args.rounds, args.deliveries, args.claim))
    except BenchError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    for number, (user, system) in enumerate(figures, 1):
        print(
            f"round {number}: {(user + system) * 1e6:.0f} µs CPU a delivery "
            f"(user {user * 1e6:.0f}, system {system * 1e6:.0f})"
        )
    median = statistics.median(user + system for user, system in figures[1:])
    print(
        f"claims of {args.claim}, records in groups of {max(1, args.claim // 2)}: median "
        f"{median * 1e6:.0f} µs CPU a delivery (rounds 2-{args.rounds} of {args.deliveries})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
